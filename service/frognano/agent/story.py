"""A run's story from its trajectory: one short line per tool call, and how the run ended."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from frognano.agent.untrusted import one_line
from frognano.sandbox.hostpaths import HostPaths

# How much of a tool's arguments and result one line shows; whoever renders the story may cut
# further to fit a size limit.
ARGUMENT_CHARS = 160
RESULT_CHARS = 160


@dataclass(frozen=True)
class StoryLine:
    """One tool call (or an answer without one) at one step."""

    step: int
    tool: str
    """The tool's name, or `answer` for a turn that called none."""
    arguments: str
    outcome: str
    is_error: bool = False


@dataclass(frozen=True)
class Story:
    lines: list[StoryLine] = field(default_factory=list)
    stop_reason: str = "unknown"
    """The loop's stop reason, or `unknown` for a trajectory that ends before `run_end`."""
    detail: str = ""
    summary: str = ""
    """The agent's own summary of its work (model text: untrusted)."""
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    elapsed_seconds: float = 0.0
    compactions: int = 0


def clipped_line(text: str, limit: int) -> str:
    """`text` on one line (untrusted.one_line), cut in the middle past `limit` characters."""
    flat = one_line(text)
    if len(flat) <= limit:
        return flat
    keep = max(0, limit - 3)
    return flat[: keep - keep // 3] + "..." + flat[len(flat) - keep // 3 :]


def _arguments(tool: str, raw: object) -> str:
    """The argument a reader wants to see: the command, the path or the pattern."""
    text = raw if isinstance(raw, str) else ""
    try:
        parsed = json.loads(text) if text.strip() else {}
    except ValueError:
        return clipped_line(text, ARGUMENT_CHARS)
    if not isinstance(parsed, dict):
        return clipped_line(text, ARGUMENT_CHARS)
    key = {"Bash": "command", "Glob": "pattern"}.get(tool, "file_path")
    value = parsed.get(key)
    if isinstance(value, str):
        return clipped_line(value, ARGUMENT_CHARS)
    return clipped_line(text, ARGUMENT_CHARS)


def _outcome(tool: str, result: object, is_error: bool) -> str:
    """A result in a few words: an error's first line; Bash's last line (where test runners
    print their totals); Read's line count; other tools' first line."""
    text = result if isinstance(result, str) else ""
    if is_error:
        text = text.replace("<tool_use_error>", "").replace("</tool_use_error>", "")
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return "(no output)"
    if is_error:
        return clipped_line(lines[0], RESULT_CHARS)
    if tool == "Bash":
        return clipped_line(lines[-1], RESULT_CHARS)
    if tool == "Read":
        return f"{len(lines)} lines"
    return clipped_line(lines[0], RESULT_CHARS)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _host_paths(event: Mapping[str, Any]) -> HostPaths:
    sandbox = event.get("sandbox")
    return HostPaths.from_json(sandbox.get("host_paths") if isinstance(sandbox, Mapping) else None)


def story_of(events: Iterable[Mapping[str, Any]]) -> Story:
    """The story of one run's trajectory events (as `read_events` returns them). The host
    folders the run's `run_info` says its sandbox showed are named by their placeholders
    (sandbox/hostpaths.py): a story is for publishing, the trajectory keeps what was seen."""
    lines: list[StoryLine] = []
    answered: dict[int, str] = {}
    end: Mapping[str, Any] = {}
    hide = HostPaths().hide
    for event in events:
        kind = event.get("event")
        step = _int(event.get("step"))
        if kind == "run_info":
            hide = _host_paths(event).hide
        elif kind == "assistant" and not event.get("tool_calls"):
            content = event.get("content")
            answered[step] = hide(content) if isinstance(content, str) else ""
        elif kind == "tool":
            tool = str(event.get("name", "?"))
            is_error = bool(event.get("is_error"))
            arguments, result = event.get("arguments"), event.get("result")
            lines.append(
                StoryLine(
                    step=step,
                    tool=tool,
                    # Before any cut: a folder cut in two would no longer be recognised.
                    arguments=_arguments(
                        tool, hide(arguments) if isinstance(arguments, str) else ""
                    ),
                    outcome=_outcome(
                        tool, hide(result) if isinstance(result, str) else "", is_error
                    ),
                    is_error=is_error,
                )
            )
        elif kind == "run_end":
            end = event
    for step, content in answered.items():
        lines.append(
            StoryLine(step, "answer", "", clipped_line(content, RESULT_CHARS) or "(empty)")
        )
    lines.sort(key=lambda line: line.step)  # stable: calls keep their order within a step
    stats = end.get("stats")
    stats = stats if isinstance(stats, Mapping) else {}
    elapsed = stats.get("elapsed_seconds")
    return Story(
        lines=lines,
        stop_reason=str(end.get("stop_reason", "unknown")),
        detail=hide(str(end.get("detail") or "")),
        summary=hide(str(end.get("summary") or "")),
        steps=_int(end.get("steps")) or max((line.step for line in lines), default=0),
        prompt_tokens=_int(stats.get("prompt_tokens")),
        completion_tokens=_int(stats.get("completion_tokens")),
        cached_tokens=_int(stats.get("cached_tokens")),
        elapsed_seconds=float(elapsed) if isinstance(elapsed, int | float) else 0.0,
        compactions=_int(stats.get("compactions")),
    )
