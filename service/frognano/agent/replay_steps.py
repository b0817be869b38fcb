"""A replay's tool calls compared, one by one, with the ones its recording claims."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from frognano.errors import ModelError
from frognano.sandbox.hostpaths import HostPaths

__all__ = ["NORMALISATIONS", "Normalisation", "ReplayDiverged", "StepAudit", "StepDifference"]


@dataclass(frozen=True)
class Normalisation:
    """One thing in a tool result that differs from run to run whatever the code does."""

    name: str
    why: str
    pattern: re.Pattern[str]
    replacement: str


# Only what is variable by nature: a normalisation here is a place where a forged result can
# hide, so each is as narrow as the text it stands for. Host folders are normalised apart
# (`host-paths`): each run's own placeholders say which folders those are.
NORMALISATIONS: tuple[Normalisation, ...] = (
    Normalisation(
        "test-durations",
        "pytest and unittest say how long the tests took ('4 passed in 0.01s', 'Ran 3 tests "
        "in 0.002s')",
        re.compile(r"\b(in|took) \d+(?:\.\d+)?s\b(?: \(\d+:\d\d:\d\d\))?"),
        r"\1 <seconds>s",
    ),
    Normalisation(
        "time-left",
        "FrogNano's budget reminder counts the minutes left of the run's time limit",
        re.compile(r"about \d+ minutes left"),
        "about <minutes> minutes left",
    ),
    Normalisation(
        "pytest-temp-dirs",
        "pytest numbers its temporary folders per run and names them after the user",
        re.compile(r"/pytest-of-[^/\s]+/pytest-\d+"),
        "/pytest-of-<user>/pytest-<n>",
    ),
)
HOST_PATHS = "host-paths"
"""The name of the normalisation that writes each run's host folders as their placeholders."""
TASK_MARKER = "task-marker"
"""The name of the normalisation of the task message's random block marker (prompts.py)."""
# The marker closes each untrusted block's delimiter: `<<<ISSUE 1a5263fa9b53>>>`.
_MARKER = re.compile(r"<<<ISSUE ([0-9a-f]+)>>>")

_COMPARED = ("name", "arguments", "result", "is_error", "executed")
"""The fields of a `tool` event a replay must reproduce; `t`, `duration` are timings."""
_DIFF_LINES = 60
_WHAT = {
    "arguments": "the call's arguments differ",
    "result": "the tool's result differs",
    "name": "the tool differs",
    "is_error": "whether the call failed differs",
    "executed": "whether the call ran differs",
    "steps": "the number of tool calls differs",
    "stop_reason": "the way the run ended differs",
    "task": "the first message (the task as the model read it) differs",
    "system_prompt": "the system prompt differs",
}


@dataclass(frozen=True)
class StepDifference:
    """The first place where the replay and the recording part: both versions, and a diff."""

    field: str
    """`arguments`, `result`, `name`, `is_error`, `executed`, `steps` or `stop_reason`."""
    recorded: str
    replayed: str
    step: int | None = None
    tool: str | None = None
    call_id: str | None = None

    def headline(self) -> str:
        where = f"step {self.step}" if self.step is not None else "the end of the run"
        if self.field in ("task", "system_prompt"):
            where = "the start of the run"
        what = f" ({self.tool} call {self.call_id})" if self.tool else ""
        said = _WHAT.get(self.field, f"the {self.field} differs")
        return f"the replay diverged at {where}{what}: {said} from the recording's"

    def diff(self) -> str:
        """A unified diff of the two versions, cut to its first lines."""
        lines = list(
            difflib.unified_diff(
                self.recorded.splitlines(),
                self.replayed.splitlines(),
                "recorded",
                "replayed",
                lineterm="",
            )
        )
        cut = lines[:_DIFF_LINES]
        if len(lines) > _DIFF_LINES:
            cut.append(f"... [{len(lines) - _DIFF_LINES} more diff lines]")
        return "\n".join(cut)


class ReplayDiverged(ModelError):
    """Raised into the agent loop at the first differing step: the run stops there, since
    nothing after it can be compared with the recording (it ends as `model_error`)."""


@dataclass
class StepAudit:
    """Watches the replay's trajectory (`TrajectoryWriter(observer=...)`) and compares each
    `tool` event with the recording's at the same position, and the run's end with its end."""

    recorded: Sequence[Mapping[str, Any]]
    """The recording's `tool` events, in order."""
    recorded_end: Mapping[str, Any] | None
    recorded_start: Mapping[str, Any] | None = None
    recorded_hosts: HostPaths = field(default_factory=HostPaths)
    replayed_hosts: HostPaths = field(default_factory=HostPaths)
    difference: StepDifference | None = None
    compared: int = 0
    """Tool events compared so far (all equal, or the last one is `difference`)."""
    applied: set[str] = field(default_factory=set)
    """The normalisations that changed a compared text."""
    ended: bool = False

    def observe(self, event: str, fields: Mapping[str, Any]) -> None:
        if self.difference is not None:
            return
        if event == "tool":
            self._tool(fields)
        elif event == "run_start" and self.recorded_start is not None:
            self._start(fields)
        elif event == "run_end":
            self._end(fields)

    def _tool(self, fields: Mapping[str, Any]) -> None:
        index = self.compared
        self.compared += 1
        step = fields.get("step")
        step = step if isinstance(step, int) else None
        if index >= len(self.recorded):
            self._diverge(
                StepDifference(
                    "steps",
                    f"{len(self.recorded)} tool calls, then the run ended",
                    f"tool call {index + 1}: {fields.get('name')}({fields.get('arguments')})",
                    step,
                    str(fields.get("name")),
                    str(fields.get("call_id")),
                )
            )
        recorded = self.recorded[index]
        for name in _COMPARED:
            was, now = recorded.get(name), fields.get(name)
            if name == "result":
                was = self.normalise(str(was), self.recorded_hosts)
                now = self.normalise(str(now), self.replayed_hosts)
            if was != now:
                self._diverge(
                    StepDifference(
                        name,
                        str(was),
                        str(now),
                        step,
                        str(recorded.get("name")),
                        str(recorded.get("call_id")),
                    )
                )

    def _start(self, fields: Mapping[str, Any]) -> None:
        """The model's recorded turns answered the recorded first message and system prompt:
        this run must give the same ones (the digests say the issue is the same; this says
        the recording's own message is, guidance included)."""
        start = self.recorded_start or {}
        was, now = _unmarked(str(start.get("task"))), _unmarked(str(fields.get("task")))
        if was != str(start.get("task")):
            self.applied.add(TASK_MARKER)
        if was != now:
            self._diverge(StepDifference("task", was, now))
        was_prompt, prompt = start.get("system_prompt_sha256"), fields.get("system_prompt_sha256")
        if was_prompt != prompt:
            self._diverge(StepDifference("system_prompt", str(was_prompt), str(prompt)))

    def _end(self, fields: Mapping[str, Any]) -> None:
        self.ended = True
        if self.compared < len(self.recorded):
            missing = self.recorded[self.compared]
            self.difference = StepDifference(
                "steps",
                f"{len(self.recorded)} tool calls; the next was {missing.get('name')}"
                f"({missing.get('arguments')})",
                f"{self.compared} tool calls, then the run ended: {fields.get('detail')}",
                missing.get("step") if isinstance(missing.get("step"), int) else None,
            )
        elif self.recorded_end is not None and (
            self.recorded_end.get("stop_reason") != fields.get("stop_reason")
        ):
            self.difference = StepDifference(
                "stop_reason",
                f"{self.recorded_end.get('stop_reason')}: {self.recorded_end.get('detail')}",
                f"{fields.get('stop_reason')}: {fields.get('detail')}",
            )

    def _diverge(self, difference: StepDifference) -> NoReturn:
        self.difference = difference
        raise ReplayDiverged(difference.headline())

    def normalise(self, text: str, hosts: HostPaths) -> str:
        hidden = hosts.hide(text)
        if hidden != text:
            self.applied.add(HOST_PATHS)
        for normalisation in NORMALISATIONS:
            hidden, count = normalisation.pattern.subn(normalisation.replacement, hidden)
            if count:
                self.applied.add(normalisation.name)
        return hidden

    @property
    def reproduced(self) -> bool:
        """Every recorded tool call ran again with the same result, and the run ended alike."""
        return self.ended and self.difference is None


def _unmarked(task: str) -> str:
    """The task message with its per-run random marker written as `<marker>`."""
    found = _MARKER.search(task)
    return task.replace(found.group(1), "<marker>") if found else task
