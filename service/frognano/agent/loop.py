"""The agent loop: model turn, tool calls in order, results appended, until a stop reason."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from frognano.agent import prompts
from frognano.agent.followup import FollowUpPrompt, follow_up_message
from frognano.agent.loop_types import (
    AgentLimits,
    AgentResult,
    AgentStats,
    ChatModel,
    Progress,
    StopReason,
    ToolRunner,
)
from frognano.agent.trajectory import NullTrajectory, TrajectoryWriter
from frognano.agent.turns import AssistantTurn, Conversation, ToolCall, ToolResult, Usage
from frognano.agent.untrusted import (
    ESCAPE,
    Hidden,
    UntrustedText,
    escape,
    history_message,
    unescape,
    unescape_arguments,
)
from frognano.errors import ContextOverflow, ModelError, SandboxError

__all__ = [
    "AgentLimits",
    "AgentLoop",
    "AgentResult",
    "AgentStats",
    "ChatModel",
    "Progress",
    "StopReason",
    "ToolRunner",
]

# A token is about 3.5 bytes of English or code; used only where the server reported nothing.
_BYTES_PER_TOKEN = 3.5
_TOKENS_PER_MESSAGE = 8


class AgentLoop:
    """One agent run over an append-only conversation.

    The conversation is never rewritten. Budget reminders ride inside tool results; a user
    message after the task (which makes the chat template drop earlier reasoning, so the
    prefix cache misses once) is added only as a format reminder after a reply with neither a
    tool call nor an answer. The single compaction near the context limit starts a new
    conversation.
    """

    def __init__(
        self,
        model: ChatModel,
        tools: ToolRunner,
        *,
        title: str,
        body: str,
        limits: AgentLimits | None = None,
        trajectory: TrajectoryWriter | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        marker: str | None = None,
        guidance: Sequence[prompts.Guidance] = (),
        follow_up: FollowUpPrompt | None = None,
    ) -> None:
        self.model = model
        self.tools = tools
        self.limits = limits or AgentLimits()
        self.trajectory = trajectory or NullTrajectory()
        self.on_progress = on_progress
        marker = marker or secrets.token_hex(6)
        untrusted = UntrustedText()
        if follow_up is None:
            self.task = prompts.task_message(title, body, marker, guidance, untrusted)
        else:
            self.task = follow_up_message(title, body, marker, follow_up, guidance, untrusted)
        # The escape is explained once, the first time the model meets it.
        self._escape_explained = ESCAPE in self.task
        if self._escape_explained:
            self.task += prompts.ESCAPE_NOTE
        self.hidden: tuple[Hidden, ...] = tuple(untrusted.hidden)
        """What the untrusted texts of the task held that GitHub does not show, removed
        before the model saw them (the labeller is told)."""
        self.conversation = Conversation()
        self.stats = AgentStats()
        self.result: AgentResult | None = None
        self._started = 0.0
        self._deadline = 0.0
        self._format_errors = 0
        # Bytes appended since the server last reported usage; estimates the next prompt.
        self._unreported_bytes = 0
        self._unreported_messages = 0

    async def run(self) -> AgentResult:
        """Run to a stop reason. Cancellation records `cancelled` in `self.result`, then
        propagates."""
        self._started = time.monotonic()
        self._deadline = self._started + self.limits.time_limit_seconds
        self.trajectory.write(
            "run_start",
            task=self.task,
            system_prompt_sha256=hashlib.sha256(prompts.SYSTEM_PROMPT.encode()).hexdigest(),
            limits=asdict(self.limits),
        )
        self._append({"role": "system", "content": prompts.SYSTEM_PROMPT})
        self._append({"role": "user", "content": self.task})
        loop = asyncio.get_running_loop()
        timeout = asyncio.timeout_at(loop.time() + self.limits.time_limit_seconds)
        try:
            async with timeout:
                result = await self._steps()
        except TimeoutError:
            if not timeout.expired():
                raise
            result = self._result(
                StopReason.TIME_LIMIT,
                f"the time limit of {self.limits.time_limit_seconds:g} s was reached",
            )
        except ContextOverflow as exc:
            result = self._result(StopReason.CONTEXT_LIMIT, str(exc))
        except ModelError as exc:
            result = self._result(StopReason.MODEL_ERROR, str(exc))
        except SandboxError as exc:
            result = self._result(StopReason.SANDBOX_ERROR, f"the sandbox failed: {exc}")
        except asyncio.CancelledError:
            self._finish(self._result(StopReason.CANCELLED, "the run was cancelled"))
            raise
        except Exception as exc:
            self.trajectory.write("error", error=f"{type(exc).__name__}: {exc}")
            raise
        return self._finish(result)

    async def _steps(self) -> AgentResult:
        limits = self.limits
        while True:
            if self.stats.steps >= limits.max_steps:
                return self._result(
                    StopReason.STEP_LIMIT, f"the limit of {limits.max_steps} steps was reached"
                )
            turn = await self._ask()
            self.stats.steps += 1
            self._append(history_message(turn.message))
            aborted = turn.finish_reason == "abort" and bool(turn.tool_calls)
            if turn.truncated or aborted:
                # Cut off at max_tokens, or aborted by the server: a parsed call may carry
                # cut-off arguments (half a Write), so none of them runs.
                self.stats.truncated_turns += turn.truncated
                self._format_errors += 1
                message = prompts.TRUNCATED_TURN.format(limit=limits.max_tokens_per_turn)
                message = prompts.ABORTED_TURN if aborted else message
                calls = turn.tool_calls or (ToolCall(f"truncated-{self.stats.steps}", "", ""),)
                for call in calls:
                    self._append_result(call, ToolResult(message, is_error=True), 0.0, run=False)
                if self._format_errors >= limits.max_format_errors:
                    return self._result(
                        StopReason.MODEL_ERROR,
                        f"{self._format_errors} replies in a row were cut off at "
                        f"{limits.max_tokens_per_turn} tokens"
                        + (" or aborted by the server" if aborted else ""),
                    )
            elif not turn.tool_calls:
                summary = turn.content.strip()
                if summary and turn.finish_reason != "abort":
                    return self._result(StopReason.COMPLETED, "the agent finished", summary)
                # SGLang drops a call it cannot parse, and everything after its marker, and
                # answers "stop": an empty reply is a failed call, not an answer.
                self._format_errors += 1
                if self._format_errors >= limits.max_format_errors:
                    return self._result(
                        StopReason.NO_ANSWER,
                        f"{self._format_errors} replies in a row had neither a tool call the "
                        "server could parse nor an answer"
                        + (" (the server aborted them)" if turn.finish_reason == "abort" else ""),
                    )
                self.stats.format_reminders += 1  # counted as sent, never the one not due
                self._append({"role": "user", "content": prompts.FORMAT_REMINDER})
            else:
                self._format_errors = 0
                await self._run_calls(turn.tool_calls)
            if not await self._fits_next_request():
                return self._result(
                    StopReason.CONTEXT_LIMIT,
                    f"the conversation reached the context limit of {limits.context_tokens} "
                    "tokens" + (" after compacting once" if self.stats.compactions else ""),
                )

    async def _ask(self) -> AssistantTurn:
        self._progress("model")
        self.trajectory.write(
            "request",
            step=self.stats.steps + 1,
            messages=len(self.conversation),
            history_bytes=sum(map(len, self.conversation.fragments)),
        )
        try:
            turn = await self._complete(self.conversation)
        except ContextOverflow:
            if not self._can_compact():
                raise
            await self._compact()
            turn = await self._complete(self.conversation)
        self.trajectory.write("assistant", step=self.stats.steps + 1, **turn.record())
        return turn

    async def _complete(
        self, conversation: Conversation, extra: list[dict[str, Any]] | None = None
    ) -> AssistantTurn:
        started = time.monotonic()
        try:
            turn = await self.model.complete(conversation, extra=extra)
        finally:
            self.stats.model_seconds += time.monotonic() - started
        self._count_usage(turn.usage)
        return turn

    def _count_usage(self, usage: Usage | None) -> None:
        if usage is None:
            return
        self.stats.prompt_tokens += usage.prompt_tokens
        self.stats.completion_tokens += usage.completion_tokens
        if usage.cached_tokens is not None:
            self.stats.cache_reported = True
            self.stats.cached_tokens += usage.cached_tokens
        if usage.prompt_tokens:
            # Everything up to and including this reply is now counted by the server.
            self.stats.last_prompt_tokens = usage.prompt_tokens + usage.completion_tokens
            self._unreported_bytes = 0
            self._unreported_messages = 0

    async def _run_calls(self, calls: tuple[ToolCall, ...]) -> None:
        for index, call in enumerate(calls):
            self._progress(call.name or "tool")
            started = time.monotonic()
            # The model read escaped text (untrusted.py): its arguments are unescaped so
            # that what it copied lands byte for byte.
            runnable = ToolCall(call.id, call.name, unescape_arguments(call.arguments))
            result = await self.tools.call(runnable)
            result = ToolResult(escape(result.content), result.is_error)
            if not self._escape_explained and ESCAPE in result.content:
                self._escape_explained = True
                result = ToolResult(result.content + prompts.ESCAPE_NOTE, result.is_error)
            duration = time.monotonic() - started
            self.stats.tool_seconds += duration
            self.stats.tool_calls += 1
            self.stats.tools_used[call.name] = self.stats.tools_used.get(call.name, 0) + 1
            if result.is_error:
                self.stats.tool_errors += 1
            if index == len(calls) - 1:
                note = prompts.budget_note(
                    self.limits.max_steps - self.stats.steps,
                    self._deadline - time.monotonic(),
                )
                if note:
                    result = ToolResult(result.content + note, result.is_error)
            self._append_result(call, result, duration, run=True)

    def _append_result(
        self, call: ToolCall, result: ToolResult, duration: float, *, run: bool
    ) -> None:
        self.trajectory.write(
            "tool",
            step=self.stats.steps,
            call_id=call.id,
            name=call.name,
            arguments=call.arguments,
            result=result.content,
            is_error=result.is_error,
            executed=run,
            duration=round(duration, 4),
        )
        # The chat template renders results by position (ids and names are not rendered), so
        # one result per call, in the order of the calls, is what keeps them paired.
        self._append({"role": "tool", "tool_call_id": call.id, "content": result.content})

    def _append(self, message: dict[str, Any]) -> None:
        self.conversation.append(message)
        self._unreported_bytes += len(self.conversation.fragments[-1])
        self._unreported_messages += 1

    def _estimated_prompt_tokens(self) -> int:
        if self.stats.last_prompt_tokens:
            return (
                self.stats.last_prompt_tokens
                + int(self._unreported_bytes / _BYTES_PER_TOKEN)
                + _TOKENS_PER_MESSAGE * self._unreported_messages
            )
        total = sum(map(len, self.conversation.fragments))
        return int(total / _BYTES_PER_TOKEN) + _TOKENS_PER_MESSAGE * len(self.conversation)

    async def _fits_next_request(self) -> bool:
        if self._estimated_prompt_tokens() <= self.limits.compaction_threshold:
            return True
        if not self._can_compact():
            return False
        await self._compact()
        return self._estimated_prompt_tokens() <= self.limits.compaction_threshold

    def _can_compact(self) -> bool:
        return self.limits.compaction and self.stats.compactions == 0

    async def _compact(self) -> None:
        """Replace the history by system + task + the model's own summary + the last turns."""
        self._progress("compacting")
        request = {"role": "user", "content": prompts.SUMMARY_REQUEST}
        reply = await self._complete(self.conversation, extra=[request])
        summary = reply.content.strip() or (reply.reasoning or "").strip()
        if not summary:
            raise ContextOverflow(
                "the context limit was reached and the model wrote no summary to continue from"
            )
        old = self.conversation
        tail = self._tail(old)
        self.conversation = Conversation()
        self.stats.compactions += 1
        self.stats.last_prompt_tokens = 0
        self._unreported_bytes = 0
        self._unreported_messages = 0
        self._append(old.messages[0])
        self._append(
            {
                "role": "user",
                "content": prompts.COMPACTED_TEMPLATE.format(
                    task=self.task, summary=escape(unescape(summary))
                ),
            }
        )
        for message in tail:
            self._append(message)
        self.trajectory.write(
            "compaction",
            step=self.stats.steps,
            summary=summary,
            dropped_messages=len(old) - len(tail) - 2,
            kept_messages=len(tail),
            usage=None if reply.usage is None else asdict(reply.usage),
        )

    def _tail(self, conversation: Conversation) -> list[dict[str, Any]]:
        """The last `keep_turns` assistant turns with their results, within a quarter of the
        context; they start at an assistant message so results stay paired with calls."""
        starts = [
            index
            for index, message in enumerate(conversation.messages)
            if index >= 2 and message["role"] == "assistant"
        ]
        budget = self.limits.context_tokens * _BYTES_PER_TOKEN / 4
        for start in starts[-self.limits.keep_turns :] if self.limits.keep_turns else []:
            if sum(map(len, conversation.fragments[start:])) <= budget:
                return conversation.messages[start:]
        return []

    def _progress(self, phase: str) -> None:
        if self.on_progress is not None:
            self.on_progress(
                Progress(
                    step=self.stats.steps + (1 if phase == "model" else 0),
                    max_steps=self.limits.max_steps,
                    phase=phase,
                    prompt_tokens=self.stats.last_prompt_tokens,
                    elapsed=time.monotonic() - self._started,
                )
            )

    def _result(self, reason: StopReason, detail: str, summary: str = "") -> AgentResult:
        self.stats.elapsed_seconds = time.monotonic() - self._started
        return AgentResult(reason, detail, summary, self.stats)

    def _finish(self, result: AgentResult) -> AgentResult:
        self.result = result
        self.trajectory.write(
            "run_end",
            stop_reason=result.stop_reason.value,
            detail=result.detail,
            summary=result.summary,
            steps=result.stats.steps,
            stats=asdict(result.stats),
        )
        return result
