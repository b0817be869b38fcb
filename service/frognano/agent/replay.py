"""A recorded run's model turns played back in order, in place of a model server."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frognano.agent.trajectory import read_events
from frognano.agent.turns import AssistantTurn, Conversation, ToolCall
from frognano.errors import ConfigError, ModelResponseError


def _turn(event: dict[str, Any]) -> AssistantTurn:
    calls = tuple(
        ToolCall(id=str(call["id"]), name=str(call["name"]), arguments=str(call["arguments"]))
        for call in event.get("tool_calls") or []
    )
    content = str(event.get("content") or "")
    reasoning = event.get("reasoning")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning:
        message["reasoning_content"] = str(reasoning)
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return AssistantTurn(
        content=content,
        reasoning=str(reasoning) if reasoning else None,
        tool_calls=calls,
        finish_reason=str(event.get("finish_reason") or "stop"),
        usage=None,
        message=message,
        model=str(event["model"]) if isinstance(event.get("model"), str) else None,
    )


@dataclass(frozen=True)
class Recording:
    """A recorded run's trajectory as a replay reads it: what it claims, step by step."""

    path: Path
    events: list[dict[str, Any]]

    @classmethod
    def load(cls, path: Path) -> Recording:
        """The events of a trajectory file with at least one model turn, or ConfigError."""
        try:
            events = read_events(path).events
        except OSError as exc:
            raise ConfigError(f"cannot read the trajectory {path}: {exc.strerror}") from exc
        if not any(event.get("event") == "assistant" for event in events):
            raise ConfigError(
                f"{path} records no model turn to replay; give the trajectory.jsonl of a run "
                "(`frognano solve` or the worker write one)"
            )
        return cls(path, events)

    @property
    def info(self) -> dict[str, Any]:
        """The recording's `run_info` (empty when it has none)."""
        return next((e for e in self.events if e.get("event") == "run_info"), {})

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event.get("event") == kind]


class ReplayModel:
    """Answers each request with the next recorded assistant turn; the tools still run, in a
    fresh sandbox, so what they do now is what the patch reflects."""

    def __init__(
        self, turns: list[AssistantTurn], source: Path, recorded: dict[str, Any] | None = None
    ) -> None:
        self.turns = turns
        self.source = source
        self.recorded = recorded or {}
        """The recording's `run_info` (empty when it has none)."""
        self._next = 0

    def describe(self) -> dict[str, Any]:
        """What the replay's `run_info` records: which recording it plays, and that run's id
        and model as the recording names them."""
        return {
            "kind": "replay",
            "replay_of": {
                "trajectory": str(self.source.resolve()),
                "run_id": self.recorded.get("run_id"),
                "model": self.recorded.get("model"),
            },
        }

    @classmethod
    def load(cls, path: Path) -> ReplayModel:
        """The assistant turns of a trajectory file, or ConfigError saying what is wrong."""
        return cls.of(Recording.load(path))

    @classmethod
    def of(cls, recording: Recording) -> ReplayModel:
        turns = [_turn(event) for event in recording.of_kind("assistant")]
        return cls(turns, recording.path, recording.info)

    async def complete(
        self,
        conversation: Conversation,
        *,
        extra: list[dict[str, Any]] | None = None,
        with_tools: bool = True,
    ) -> AssistantTurn:
        del conversation, extra, with_tools  # the answers are fixed
        if self._next >= len(self.turns):
            raise ModelResponseError(
                f"the recorded run ({self.source}) has only {len(self.turns)} model turns, "
                "and the replay asked for another: it went differently from the recording"
            )
        turn = self.turns[self._next]
        self._next += 1
        return turn
