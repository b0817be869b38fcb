"""A replay's audit: the recording's inputs, then its steps, then its patch, against this run."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from frognano.agent.replay import Recording
from frognano.agent.replay_steps import StepAudit, StepDifference
from frognano.run.digests import RunDigests
from frognano.run.report import (
    ReplayCheckRecord,
    ReplayChecksRecord,
    ReplayDifferenceRecord,
    ReplayRecord,
)
from frognano.sandbox.hostpaths import HostPaths

__all__ = ["ReplayAudit", "ReplayOf"]

_PREDATES = (
    "this recording predates digests: the task, the base tree and the policy were not "
    "checked, only the steps and the patch"
)


def _check(recorded: object, replayed: str | None) -> ReplayCheckRecord:
    if not isinstance(recorded, str):
        return {"status": "not recorded", "recorded": None, "replayed": replayed}
    return {
        "status": "same" if recorded == replayed else "differs",
        "recorded": recorded,
        "replayed": replayed,
    }


def _unchecked() -> ReplayCheckRecord:
    return {"status": "not compared", "recorded": None, "replayed": None}


@dataclass(frozen=True)
class ReplayOf:
    """What a replay job is asked to reproduce: a recording, and maybe its patch."""

    recording: Recording
    expected_patch: bytes | None = None
    """The recorded patch to reproduce byte for byte; None: the patch is not compared."""


@dataclass
class ReplayAudit:
    """One replay's audit, filled in as the run goes: `check_inputs` before the agent, the
    step audit (`steps.observe`) during it, `conclude` once the patch is known."""

    recording: Recording
    expected_patch: bytes | None = None
    """The recorded patch to reproduce byte for byte; None: the patch is not compared."""
    steps: StepAudit = field(init=False)
    checks: ReplayChecksRecord = field(init=False)
    notes: list[str] = field(default_factory=list)
    refused: ReplayDifferenceRecord | None = None
    """The first run input that differs; the agent never ran."""
    patch_difference: ReplayDifferenceRecord | None = None

    def __post_init__(self) -> None:
        info = self.recording.info
        sandbox = info.get("sandbox")
        hosts = sandbox.get("host_paths") if isinstance(sandbox, dict) else None
        self.steps = StepAudit(
            self.recording.of_kind("tool"),
            next(iter(self.recording.of_kind("run_end")), None),
            next(iter(self.recording.of_kind("run_start")), None),
            recorded_hosts=HostPaths.from_json(hosts or []),
        )
        self.checks = {
            "task": _unchecked(),
            "base_tree": _unchecked(),
            "policy": _unchecked(),
            "frognano": _unchecked(),
            "environment": _unchecked(),
            "steps": _unchecked(),
            "patch": _unchecked(),
        }

    def check_inputs(self, digests: RunDigests, hosts: HostPaths) -> str | None:
        """Compare the run's inputs with the recording's; the reason to stop, or None. A task,
        base tree or policy that differs stops the replay before the agent runs: the recording
        then answers another question than this run asks. FrogNano's version and the
        environment are notes: the steps show whether they changed anything."""
        info: dict[str, Any] = self.recording.info
        self.steps.replayed_hosts = hosts
        task = _check(info.get("task_sha256"), digests.task_sha256)
        base = _check(info.get("base_tree_sha256"), digests.base_tree_sha256)
        policy = _check(info.get("policy_sha256"), digests.policy_sha256)
        self.checks["task"], self.checks["base_tree"], self.checks["policy"] = task, base, policy
        for name, check, what in (
            ("task", task, "the task (the issue's title and body)"),
            ("base_tree", base, "the repository's base tree"),
            ("policy", policy, "the effective policy"),
        ):
            if check["status"] == "differs" and self.refused is None:
                self.refused = _difference(
                    name,
                    f"{what} differs: recorded sha256 {check['recorded']}, this run "
                    f"{check['replayed']}",
                    str(check["recorded"]),
                    str(check["replayed"]),
                )
        unrecorded = [
            what
            for check, what in ((task, "task"), (base, "base tree"), (policy, "policy"))
            if check["status"] == "not recorded"
        ]
        if len(unrecorded) == 3:
            self.notes.append(_PREDATES)
        elif unrecorded:
            # FrogNano records all three or none: one missing was taken out of the file.
            self.notes.append(
                f"the recording lacks the digest of the {' and the '.join(unrecorded)}, which "
                "FrogNano records with the others: not checked (the file was edited)"
            )
        self.checks["frognano"] = _check(info.get("frognano"), digests.frognano)
        if self.checks["frognano"]["status"] == "differs":
            self.notes.append(
                f"the recording was made by FrogNano {info.get('frognano')}, this replay by "
                f"{digests.frognano}: a difference may come from FrogNano's own change"
            )
        key = info.get("environment_key")
        self.checks["environment"] = (
            _check(key, digests.environment_key)
            if key is not None or digests.environment_key is not None
            else _unchecked()
        )
        if self.checks["environment"]["status"] == "differs":
            self.notes.append("the sandboxes' environment differs from the recording's")
        return None if self.refused is None else self.refused["headline"]

    def conclude(self, patch: bytes | None) -> None:
        """Compare the patch (when one was expected) and count the steps."""
        self.checks["steps"] = {
            "status": "not compared"
            if self.refused
            else "differs"
            if self.steps.difference
            else "same",
            "recorded": str(len(self.steps.recorded)),
            "replayed": str(self.steps.compared),
        }
        if self.expected_patch is None:
            return
        made = patch if patch is not None else b""
        self.checks["patch"] = _check(_sha(self.expected_patch), _sha(made))
        if self.checks["patch"]["status"] == "differs":
            self.patch_difference = _difference(
                "patch",
                "the patch differs from the recorded one",
                self.expected_patch.decode(errors="replace"),
                made.decode(errors="replace"),
            )

    @property
    def first_difference(self) -> ReplayDifferenceRecord | None:
        if self.refused is not None:
            return self.refused
        step = self.steps.difference
        if step is not None:
            return _step_record(step)
        if not self.steps.ended:
            return _difference("steps", "the replay stopped before its end", "", "")
        return self.patch_difference

    @property
    def reproduced(self) -> bool:
        return self.first_difference is None

    def record(self) -> ReplayRecord:
        return {
            "recording": str(self.recording.path.resolve()),
            "reproduced": self.reproduced,
            "first_difference": self.first_difference,
            "normalisations": sorted(self.steps.applied),
            "checks": self.checks,
            "notes": list(self.notes),
        }


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _difference(what: str, headline: str, recorded: str, replayed: str) -> ReplayDifferenceRecord:
    made = StepDifference(what, recorded, replayed)
    return {
        "what": what,
        "step": None,
        "tool": None,
        "call_id": None,
        "headline": headline,
        "recorded": recorded,
        "replayed": replayed,
        "diff": made.diff(),
    }


def _step_record(step: StepDifference) -> ReplayDifferenceRecord:
    return {
        "what": step.field,
        "step": step.step,
        "tool": step.tool,
        "call_id": step.call_id,
        "headline": step.headline(),
        "recorded": step.recorded,
        "replayed": step.replayed,
        "diff": step.diff(),
    }
