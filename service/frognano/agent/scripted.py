"""A scripted model: fixed turns answered in order, in process, with deterministic usage."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from frognano.agent.reply import echo_arguments
from frognano.agent.turns import AssistantTurn, Conversation, ToolCall, Usage, dumps
from frognano.errors import ModelResponseError

__all__ = ["ScriptedModel", "ScriptedRequest", "ScriptedTurn"]

_BYTES_PER_TOKEN = 4
"""A stand-in for a tokenizer: counts that grow with the conversation, not real ones."""


@dataclass(frozen=True)
class ScriptedTurn:
    """One reply, as a server with SGLang's reasoning and tool-call parsers returns it."""

    content: str = ""
    """The answer; a reply with neither content nor calls is what SGLang sends for a call it
    could not parse."""
    calls: Sequence[tuple[str, Mapping[str, object] | str]] = ()
    """(tool name, arguments), in order: a mapping goes out as its JSON, a string as written
    (to script arguments that are not valid JSON)."""
    reasoning: str | None = None
    finish_reason: str | None = None
    """Default: "tool_calls" with calls, else "stop"; "length" is a reply cut off at
    max_tokens, "abort" one the server gave up on."""
    prompt_tokens: int | None = None
    """Default: the request's message bytes / 4 (set it to reach a context limit)."""
    delay: float = 0.0
    """Seconds to wait before answering (time limits, cancellation)."""
    raises: Exception | None = None
    """Raised instead of answering: e.g. ContextOverflow, or ModelUnavailable for a server
    that stayed down."""


@dataclass(frozen=True)
class ScriptedRequest:
    """What the loop asked for: the messages the server would have seen."""

    messages: list[dict[str, Any]]
    """The conversation's messages, then the `extra` ones (a summary request)."""
    with_tools: bool


class ScriptedModel:
    """A `ChatModel` that answers each request with the next scripted turn and records the
    request; past the last turn it raises ModelResponseError, so a loop that asks for more
    than was scripted ends as `model_error`.

    Usage is deterministic: prompt tokens are the messages' bytes / 4, cached tokens the
    previous request's prompt tokens when its messages are a prefix of this one's (a prefix
    cache), completion tokens the generated text's bytes / 4 (at least 1). Call ids are
    `call_{request}_{index}`, so the same script gives the same run every time.
    """

    def __init__(self, turns: Iterable[ScriptedTurn]) -> None:
        self.turns = list(turns)
        self.requests: list[ScriptedRequest] = []
        self._previous: tuple[list[bytes], int] | None = None

    @property
    def remaining(self) -> int:
        """Turns not yet answered."""
        return len(self.turns) - len(self.requests)

    async def complete(
        self,
        conversation: Conversation,
        *,
        extra: list[dict[str, Any]] | None = None,
        with_tools: bool = True,
    ) -> AssistantTurn:
        number = len(self.requests)
        if number >= len(self.turns):
            raise ModelResponseError(
                f"the script has only {len(self.turns)} turns, and the loop asked for another"
            )
        messages = [*conversation.messages, *(extra or [])]
        fragments = [*conversation.fragments, *(dumps(message) for message in extra or [])]
        self.requests.append(ScriptedRequest(messages, with_tools))
        turn = self.turns[number]
        if turn.delay:
            await asyncio.sleep(turn.delay)
        if turn.raises is not None:
            raise turn.raises
        return self._answer(turn, number + 1, fragments)

    def _answer(self, turn: ScriptedTurn, number: int, fragments: list[bytes]) -> AssistantTurn:
        calls = tuple(
            ToolCall(
                id=f"call_{number}_{index}",
                name=name,
                arguments=arguments
                if isinstance(arguments, str)
                else json.dumps(arguments, ensure_ascii=False),
            )
            for index, (name, arguments) in enumerate(turn.calls, 1)
        )
        message: dict[str, Any] = {"role": "assistant", "content": turn.content}
        if turn.reasoning is not None:
            message["reasoning_content"] = turn.reasoning
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": echo_arguments(call.arguments)},
                }
                for call in calls
            ]
        return AssistantTurn(
            content=turn.content.strip(),
            reasoning=(turn.reasoning.strip() or None) if turn.reasoning is not None else None,
            tool_calls=calls,
            finish_reason=turn.finish_reason or ("tool_calls" if calls else "stop"),
            usage=self._usage(turn, calls, fragments),
            message=message,
        )

    def _usage(
        self, turn: ScriptedTurn, calls: tuple[ToolCall, ...], fragments: list[bytes]
    ) -> Usage:
        prompt = turn.prompt_tokens
        if prompt is None:
            prompt = sum(map(len, fragments)) // _BYTES_PER_TOKEN
        cached = 0
        if self._previous is not None:
            before, before_tokens = self._previous
            if fragments[: len(before)] == before:
                cached = min(before_tokens, prompt)
        self._previous = (fragments, prompt)
        generated = [turn.reasoning or "", turn.content, *(c.name + c.arguments for c in calls)]
        size = sum(len(text.encode("utf-8")) for text in generated)
        return Usage(
            prompt_tokens=prompt,
            completion_tokens=max(1, size // _BYTES_PER_TOKEN),
            cached_tokens=cached,
        )
