"""A recorded run's model turns played back in order, in place of a model server."""

from __future__ import annotations

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
        try:
            events = read_events(path).events
        except OSError as exc:
            raise ConfigError(f"cannot read the trajectory {path}: {exc.strerror}") from exc
        turns = [_turn(event) for event in events if event.get("event") == "assistant"]
        if not turns:
            raise ConfigError(
                f"{path} records no model turn to replay; give the trajectory.jsonl of a run "
                "(`frognano solve` or the worker write one)"
            )
        info = next((e for e in events if e.get("event") == "run_info"), {})
        return cls(turns, path, info)

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
