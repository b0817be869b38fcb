"""What the agent loop takes and gives: its limits, the model and tool seams, its results."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from frognano.agent.turns import AssistantTurn, Conversation, ToolCall, ToolResult


class StopReason(StrEnum):
    COMPLETED = "completed"
    STEP_LIMIT = "step_limit"
    TIME_LIMIT = "time_limit"
    CONTEXT_LIMIT = "context_limit"
    MODEL_ERROR = "model_error"
    NO_ANSWER = "no_answer"
    SANDBOX_ERROR = "sandbox_error"
    CANCELLED = "cancelled"


class ChatModel(Protocol):
    """The model seam of `AgentLoop`: `ModelClient` (an OpenAI-compatible server),
    `ReplayModel` (a recorded run), `ScriptedModel` (fixed turns), or any object with this
    method. See docs/agent.md, "Swapping the model or the environment"."""

    async def complete(
        self,
        conversation: Conversation,
        *,
        extra: list[dict[str, Any]] | None = None,
        with_tools: bool = True,
    ) -> AssistantTurn:
        """The next assistant turn for `conversation` (append-only: read it, never change
        it) followed by `extra`, messages sent but not stored (the summary request before a
        compaction); `with_tools=False` asks for a reply without the tools. Raise
        ContextOverflow when the request does not fit (the loop compacts once, then stops
        with `context_limit`), another ModelError to stop with `model_error`."""
        ...


class ToolRunner(Protocol):
    """The environment seam of `AgentLoop`: `ToolBox` (the five tools in a sandbox) or any
    object with this method."""

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one call. A mistake (unknown tool, bad arguments, failing command) is a
        result with `is_error=True`, which goes back to the model; raise SandboxError only
        when the environment itself failed (the loop stops with `sandbox_error`)."""
        ...


@dataclass(frozen=True)
class AgentLimits:
    """Leaf's evaluation budget by default (FrogNano-4B's model card)."""

    max_steps: int = 150
    time_limit_seconds: float = 10_800.0
    context_tokens: int = 131_072
    max_tokens_per_turn: int = 8192
    compaction: bool = True
    """Near the context limit, replace the history once by a model-written summary."""
    keep_turns: int = 3
    """Assistant turns (with their tool results) kept verbatim after a compaction."""
    max_format_errors: int = 3
    """Consecutive unusable replies (cut off, or with neither a tool call nor an answer)
    after which the run ends."""

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if self.time_limit_seconds <= 0:
            raise ValueError("time_limit_seconds must be positive")
        if self.max_tokens_per_turn < 1:
            raise ValueError("max_tokens_per_turn must be at least 1")
        if self.context_tokens < 2 * self.max_tokens_per_turn:
            raise ValueError("context_tokens must be at least twice max_tokens_per_turn")

    @property
    def compaction_threshold(self) -> int:
        """Prompt tokens above which the next request might not fit (turn + safety margin)."""
        return self.context_tokens - self.max_tokens_per_turn - self.context_tokens // 32


@dataclass
class AgentStats:
    steps: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    truncated_turns: int = 0
    format_reminders: int = 0
    """Reminders of the format sent, one after each reply with neither a tool call nor an
    answer (or aborted by the server) that did not end the run."""
    compactions: int = 0
    prompt_tokens: int = 0
    """Sum over requests, as the server reported."""
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_reported: bool = False
    last_prompt_tokens: int = 0
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    elapsed_seconds: float = 0.0
    tools_used: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentResult:
    stop_reason: StopReason
    detail: str
    """Why the run stopped, in words a maintainer can act on."""
    summary: str
    """The model's final answer (only for `completed`)."""
    stats: AgentStats


@dataclass(frozen=True)
class Progress:
    """A snapshot for a live display."""

    step: int
    max_steps: int
    phase: str  # "model" or the tool's name
    prompt_tokens: int
    elapsed: float
