"""Scripted agents for eval runs: one scripted model server answering every instance's runs."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from frognano.eval.instances import Instance
from tests.fakes.model_server import Turn

Behaviour = Literal["right", "wrong", "nothing", "tests_only", "refused"]
"""right: the gold fix and a test of its own (the instance's new test, in a file of its own,
as an agent that writes the same test would); wrong: an edit that fixes nothing; nothing: no change;
tests_only: the test without the fix; refused: the model server answers its first turn with
an HTTP 400, so the run fails."""


def _heredoc_apply(patch: str, name: str) -> str:
    marker = "FROGNANO_PATCH_END"
    assert marker not in patch
    return f"cat > /tmp/{name}.diff <<'{marker}'\n{patch}{marker}\ngit apply /tmp/{name}.diff\n"


def _own_tests(instance: Instance) -> str:
    """The instance's new test in a test file of the agent's own beside the one the test
    patch changes (FrogNano puts changed repository tests back; a new file is the agent's)."""
    script = _heredoc_apply(instance.test_patch, "test")
    for line in instance.test_patch.splitlines():
        if line.startswith("+++ b/"):
            path = line[len("+++ b/") :]
            script += f"cp {path} {path[: -len('.py')]}_agent.py && git checkout -- {path}\n"
    return script


def script_for(instance: Instance, behaviour: Behaviour) -> str:
    """The Bash command the scripted agent runs in /workspace."""
    if behaviour == "right":
        return _heredoc_apply(instance.patch, "fix") + _own_tests(instance)
    if behaviour == "tests_only":
        return _own_tests(instance)
    if behaviour == "wrong":
        # A comment in the file the fix changes: a patch that compiles and fixes nothing.
        path = instance.patch.split("\n", 1)[0].split(" b/", 1)[1]
        return f"printf '\\n# looked at this\\n' >> {path}\n"
    return "true\n"


class Agents:
    """The model server's `default`: which instance a request is for (its statement in the
    first user message), a new run when no assistant turn is in it yet (the next behaviour in
    that instance's queue), and a last turn that ends the run."""

    def __init__(
        self,
        instances: Sequence[Instance],
        plan: Mapping[str, Sequence[Behaviour]],
        *,
        otherwise: Behaviour | None = None,
    ) -> None:
        """`otherwise`: what a run does once its instance's queue is empty (copies of one
        instance share a statement, so they share a queue); None fails the test."""
        self.instances = {i.instance_id: i for i in instances}
        self.queues = {key: deque(value) for key, value in plan.items()}
        self.otherwise = otherwise
        self.started: list[tuple[str, Behaviour]] = []
        self.requests: list[str] = []
        self.hold: dict[str, threading.Event] = {}
        """instance id -> released when the test says: its first request waits for it."""
        self.held = threading.Event()
        """Set when a held instance's first request arrived (and is waiting)."""
        self._lock = threading.Lock()

    def which(self, request: dict[str, Any]) -> Instance:
        users = [m for m in request.get("messages", []) if m.get("role") == "user"]
        text = str(users[0].get("content", "")) if users else ""
        for instance in self.instances.values():
            if instance.problem_statement.strip()[:80] in text:
                return instance
        raise AssertionError("a request for no known instance")

    def __call__(self, request: dict[str, Any]) -> Turn:
        instance = self.which(request)
        roles = [m.get("role") for m in request.get("messages", [])]
        with self._lock:
            self.requests.append(instance.instance_id)
        if "assistant" in roles:
            return Turn(content="Done: the change is made.")
        with self._lock:
            queue = self.queues.get(instance.instance_id)
            if queue:
                behaviour = queue.popleft()
            elif self.otherwise is not None:
                behaviour = self.otherwise
            else:
                raise AssertionError(f"no behaviour left for {instance.instance_id}")
            self.started.append((instance.instance_id, behaviour))
        gate = self.hold.get(instance.instance_id)
        if gate is not None:
            self.held.set()
            gate.wait(timeout=300)
        if behaviour == "refused":
            return Turn(status=400)
        command = script_for(instance, behaviour)
        return Turn(reasoning="Make the change.", calls=[("Bash", {"command": command})])
