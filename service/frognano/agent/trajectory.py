"""The run's trajectory: one JSON line per event, flushed as written, and a reader for people."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from frognano.agent.trajectory_view import (
    RunFiles,
    edit_diff,
    facts,
    reported_models,
    step_tokens,
    title,
    verdict,
)
from frognano.agent.turns import dumps
from frognano.terminal import printable

FORMAT_VERSION = 1


class TrajectoryWriter:
    """Appends events to a JSONL file; each line reaches the kernel before `write` returns.

    A run killed at any point (even SIGKILL) leaves every event written so far, and at worst
    one partial last line, which `read_events` skips.
    """

    def __init__(
        self, path: Path, observer: Callable[[str, Mapping[str, Any]], None] | None = None
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file: IO[bytes] | None = path.open("ab")
        self._started = time.monotonic()
        self._observer = observer
        """Shown each event once it is written: a replay's audit (replay_steps.py), which
        raises into the loop to stop a run that diverged from its recording."""

    def write(self, event: str, **fields: Any) -> None:
        if self._file is None:
            raise ValueError(f"trajectory {self.path} is closed")
        record = {
            "event": event,
            "t": round(time.monotonic() - self._started, 4),
            **fields,
        }
        self._file.write(dumps(record) + b"\n")
        self._file.flush()
        if self._observer is not None:
            self._observer(event, fields)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class NullTrajectory(TrajectoryWriter):
    """Records nothing; for callers that do not keep a trajectory."""

    def __init__(self) -> None:
        self._file = None

    def write(self, event: str, **fields: Any) -> None:
        return None


@dataclass(frozen=True)
class ReadResult:
    events: list[dict[str, Any]]
    damaged_lines: list[int]
    """Line numbers that were not JSON objects (a run killed mid-write leaves one at the end)."""


def read_events(path: Path) -> ReadResult:
    """Every event of a trajectory file; lines that are not JSON objects are skipped and counted."""
    events: list[dict[str, Any]] = []
    damaged: list[int] = []
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                damaged.append(number)
                continue
            if isinstance(record, dict) and isinstance(record.get("event"), str):
                events.append(record)
            else:
                damaged.append(number)
    return ReadResult(events, damaged)


def render(
    events: list[dict[str, Any]], *, max_chars: int = 2000, files: RunFiles | None = None
) -> Iterator[str]:
    """The run as plain text for a terminal: its facts (model, sampling...) and, from `files`,
    its verdict, then one block per event, then the patch. Long texts are cut to `max_chars`
    (the patch to ten times that), and control characters, which the model, the tools and the
    repository write, are shown as escapes (`\x1b`), never sent."""
    for block in _blocks(events, max_chars, files or RunFiles()):
        yield printable(block)


def _blocks(events: list[dict[str, Any]], max_chars: int, files: RunFiles) -> Iterator[str]:
    yield title(events)
    yield "\n".join(
        f"    {label}: {value}" for label, value in facts(events) + verdict(files.report)
    )
    several = len(reported_models(events)) > 1
    for event in events:
        kind = event["event"]
        stamp = f"[{event.get('t', 0.0):8.1f}s]"
        if kind == "run_start":
            yield f"{stamp} task"
            yield _indent(_cut(str(event.get("task", "")), max_chars))
        elif kind == "assistant":
            yield from _assistant(event, stamp, max_chars, several)
        elif kind == "tool":
            flag = " error" if event.get("is_error") else ""
            yield (
                f"{stamp} step {event.get('step')}: {event.get('name')}{flag} "
                f"in {event.get('duration', 0.0):.2f}s"
            )
            yield _indent(_cut(str(event.get("result", "")), max_chars))
        elif kind == "compaction":
            yield f"{stamp} history compacted at step {event.get('step')}"
            yield _indent(_cut(str(event.get("summary", "")), max_chars))
        elif kind == "run_end":
            yield (
                f"{stamp} run ended: {event.get('stop_reason')} after {event.get('steps')} steps"
                + (f" ({event['detail']})" if event.get("detail") else "")
            )
            if event.get("summary"):
                yield _indent(_cut(event["summary"], max_chars))
        elif kind not in ("request", "run_info"):
            details = {k: v for k, v in event.items() if k not in ("event", "t")}
            yield f"{stamp} {kind}: {_cut(json.dumps(details, ensure_ascii=False), max_chars)}"
    if files.patch is not None:
        yield "patch.diff:" if files.patch else "patch.diff: empty (no change)"
        if files.patch:
            yield _indent(_cut(files.patch, max_chars * 10))


def _assistant(event: dict[str, Any], stamp: str, max_chars: int, several: bool) -> Iterator[str]:
    by = f", model={event.get('model')}" if several else ""
    yield (
        f"{stamp} step {event.get('step')}: assistant "
        f"(finish={event.get('finish_reason')}, {step_tokens(event.get('usage'))}{by})"
    )
    if event.get("reasoning"):
        yield _indent("thinking: " + _cut(event["reasoning"], max_chars))
    if event.get("content"):
        yield _indent(_cut(event["content"], max_chars))
    for call in event.get("tool_calls") or []:
        diff = edit_diff(call.get("arguments")) if call.get("name") == "Edit" else None
        if diff is None:
            yield _indent(f"-> {call.get('name')}({_cut(call.get('arguments', ''), 400)})")
        else:
            yield _indent(f"-> Edit\n{_indent(_cut(diff, max_chars))}")


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" ... [{len(text) - limit} more characters]"


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines() or [""])
