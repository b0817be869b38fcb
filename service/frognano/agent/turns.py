"""The values passed between the model client, the tools and the loop."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for, with its arguments as the JSON text the server sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced; errors are results too and go back to the model."""

    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Usage:
    """Token counts the server reported for one request."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    """`usage.prompt_tokens_details.cached_tokens`; None when the server does not report it
    (SGLang reports it only with `--enable-cache-report`)."""


@dataclass(frozen=True)
class AssistantTurn:
    """One assistant reply, parsed, plus the exact message to echo back into the history."""

    content: str
    reasoning: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str
    usage: Usage | None
    message: dict[str, Any]
    """The assistant message to append to the history, built so that the chat template
    re-renders exactly what the model generated (see reply.py)."""
    calls_from_content: bool = False
    """True when the calls were parsed from qwen3_coder XML left in `content` by a server
    started without `--tool-call-parser`."""
    model: str | None = None
    """The `model` field of the server's reply (SGLang echoes the served name asked for)."""

    def record(self) -> dict[str, Any]:
        """The trajectory's `assistant` event fields for this turn (step and time aside)."""
        return {
            "content": self.content,
            "reasoning": self.reasoning,
            "tool_calls": [asdict(call) for call in self.tool_calls],
            "finish_reason": self.finish_reason,
            "calls_from_content": self.calls_from_content,
            "usage": None if self.usage is None else asdict(self.usage),
            "model": self.model,
        }

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


@dataclass
class Conversation:
    """The append-only message history, with each message serialised once.

    Requests are built by joining the stored fragments, so the bytes of an earlier message
    never change between requests (the server's prefix cache depends on it) and the cost of a
    request does not grow with re-serialising the whole history.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    fragments: list[bytes] = field(default_factory=list)

    def append(self, message: dict[str, Any]) -> None:
        self.fragments.append(dumps(message))
        self.messages.append(message)

    def messages_json(self) -> bytes:
        """The `messages` array as JSON bytes."""
        return b"[" + b",".join(self.fragments) + b"]"

    def __len__(self) -> int:
        return len(self.messages)


def dumps(value: Any) -> bytes:
    """Compact JSON, non-ASCII kept as is (what SGLang and the chat template see)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
