"""The model client: one chat completion per agent step, against SGLang's OpenAI-compatible API.

The request body is built as bytes from the conversation's stored fragments, so its cost does
not grow with re-serialising the history and the same conversation always gives the same
bytes (the openai SDK's `messages=` transform walks the whole history on every call, ~100 ms
near 131K tokens). It is sent through the SDK's low-level `post`, which keeps the SDK's
connection pool, headers and error classes.

The reply is parsed into an `AssistantTurn` whose `message` is the assistant message to
append to the history, built so that the Qwen3.5 chat template re-renders exactly the text
the model generated:

- `content` is echoed as received ("" for null) and `reasoning_content` as received (the key
  left out when null); the template trims both, and splits `</think>` out of a content that
  still holds the reasoning (a server without `--reasoning-parser`).
- `tool_calls` are echoed with their `arguments` re-serialised from the parsed JSON, booleans
  as the strings "true"/"false" and null as "null": the template prints scalar values with
  `|string`, which would turn the model's `true` into `True`. Objects and arrays are left as
  they are (the template prints them with `tojson`). Arguments that are not a JSON object are
  echoed as "{}" (SGLang answers 400 to invalid JSON in the history) while
  `ToolCall.arguments` keeps the raw text, so validation can report it.
- Calls parsed from qwen3_coder XML left in `content` (a server without
  `--tool-call-parser`) are not echoed as `tool_calls`: the content already holds the XML.

Retries: connection errors, timeouts, 408, 429 and 5xx, with exponential backoff and jitter
or the server's Retry-After, within `RetryPolicy.attempts` and `budget_seconds`; then
`ModelUnavailable`. A context overflow (400 whose message says the input is too long) raises
`ContextOverflow`; 401/403, 404 and other 4xx raise `ModelResponseError` at once, as does a
200 whose body is not a chat completion (a proxy's error page or a broken server does not
heal on a retry).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Self

import openai

from frognano.agent.qwen3_coder import (
    THINK_END,
    THINK_START,
    TOOL_CALL_START,
    parse_tool_calls,
    split_reasoning,
)
from frognano.agent.turns import AssistantTurn, Conversation, ToolCall, Usage, dumps
from frognano.errors import ContextOverflow, ModelResponseError, ModelUnavailable
from frognano.log import get_logger

__all__ = ["ModelClient", "RetryPolicy", "SamplingConfig", "ServerInfo", "echo_arguments"]

log = get_logger(__name__)

_CONTEXT_OVERFLOW = re.compile(
    r"context length|context window|maximum context|longer than the model|"
    r"exceeds the model|token count exceeds|too many tokens|prompt is too long|"
    r"input is too long|requested \d+ tokens|tokens? exceeds?",
    re.IGNORECASE,
)
_RETRY_STATUSES = frozenset({408, 429})
_MESSAGE_LIMIT = 500


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling values sent on every request: the model card's "thinking, precise coding"
    defaults. All are sent explicitly, since SGLang otherwise takes the checkpoint's
    generation_config.json defaults."""

    max_tokens: int = 8192
    temperature: float = 0.6
    top_p: float = 0.95
    top_k: int = 20
    min_p: float = 0.0
    presence_penalty: float = 0.0
    enable_thinking: bool = True


@dataclass(frozen=True)
class RetryPolicy:
    """How long to keep trying a server that is down, overloaded or failing."""

    attempts: int = 6
    """Requests in all, the first included."""
    initial_delay: float = 1.0
    """Backoff before the second attempt; doubled for each further one, with jitter."""
    max_delay: float = 30.0
    """Cap on one wait, Retry-After included."""
    budget_seconds: float = 300.0
    """No new attempt starts when it would have to wait past this many seconds since the first."""


@dataclass(frozen=True)
class ServerInfo:
    """What `ModelClient.check` learned from the server's `/v1/models`."""

    model: str
    max_model_len: int | None


class _Retryable(Exception):
    def __init__(self, description: str, retry_after: float | None = None) -> None:
        super().__init__(description)
        self.description = description
        self.retry_after = retry_after


class ModelClient:
    """Chat completions for the agent loop; see the module docstring."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None,
        tools_json: bytes,
        tool_definitions: list[dict[str, Any]],
        sampling: SamplingConfig = SamplingConfig(),
        retry: RetryPolicy = RetryPolicy(),
        request_timeout: float = 600.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`tools_json` is sent byte for byte as the request's `tools`; `tool_definitions`
        is the same list parsed (for typing calls found in content). `sleep` and `clock` are
        for tests: the retry loop waits with `sleep` and measures its budget with `clock`."""
        if not isinstance(json.loads(tools_json), list):
            raise TypeError("tools_json must be a JSON array of tool definitions")
        self.base_url = base_url
        self.model = model
        self.sampling = sampling
        self.retry = retry
        self._tool_definitions = tool_definitions
        self._sleep = sleep
        self._clock = clock
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "EMPTY",
            max_retries=0,
            timeout=request_timeout,
        )
        self._head = b'{"model":' + dumps(model) + b',"messages":'
        self._tools = b',"tools":' + tools_json
        tail = {
            "max_tokens": sampling.max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": sampling.top_k,
            "min_p": sampling.min_p,
            "presence_penalty": sampling.presence_penalty,
            "chat_template_kwargs": {"enable_thinking": sampling.enable_thinking},
            "stream": False,
        }
        self._tail = b"," + dumps(tail)[1:]

    # -- lifecycle ---------------------------------------------------------------------------

    async def aclose(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- requests ----------------------------------------------------------------------------

    def request_body(
        self,
        conversation: Conversation,
        *,
        extra: list[dict[str, Any]] | None = None,
        with_tools: bool = True,
    ) -> bytes:
        """The exact bytes `complete` sends: model, messages (the conversation's stored
        fragments, then `extra`), tools, every sampling value, `stream: false`."""
        fragments = conversation.fragments
        if extra:
            fragments = [*fragments, *(dumps(message) for message in extra)]
        messages = b"[" + b",".join(fragments) + b"]"
        tools = self._tools if with_tools else b""
        return self._head + messages + tools + self._tail

    async def complete(
        self,
        conversation: Conversation,
        *,
        extra: list[dict[str, Any]] | None = None,
        with_tools: bool = True,
    ) -> AssistantTurn:
        """One assistant turn for the conversation plus `extra` messages (not stored).

        `with_tools=False` leaves the tools out (a summary request); calls are then neither
        expected nor parsed from the content.
        """
        body = self.request_body(conversation, extra=extra, with_tools=with_tools)
        raw = await self._send("/chat/completions", body)
        return self._parse(raw, with_tools=with_tools)

    async def check(self, *, wait: bool = True) -> ServerInfo:
        """Ask `/v1/models` whether the server is up and serves `model`: retried like a
        completion, or with `wait=False` tried once (a person at a terminal, who should hear
        at once that nothing answers). Raises ModelUnavailable or ModelResponseError with
        what to fix."""
        if wait:
            raw = await self._send("/models", None)
        else:
            try:
                raw = await self._attempt("/models", None)
            except _Retryable as exc:
                raise ModelUnavailable(
                    f"no model server answers at {self.base_url} ({exc.description}); start "
                    "one and set FROGNANO_MODEL_BASE_URL (or --model-url) to it; "
                    "`frognano model check` tells you when it is ready"
                ) from exc
        try:
            listing = json.loads(raw)
            entries = [e for e in listing["data"] if isinstance(e, dict)]
        except (ValueError, TypeError, KeyError) as exc:
            raise ModelResponseError(
                f"{self.base_url}/models did not answer with a model list: {_clip(raw)!r}"
            ) from exc
        for entry in entries:
            if entry.get("id") == self.model:
                length = entry.get("max_model_len")
                return ServerInfo(self.model, length if isinstance(length, int) else None)
        served = ", ".join(str(e.get("id")) for e in entries) or "none"
        raise ModelResponseError(
            f"the model server at {self.base_url} does not serve a model named {self.model!r} "
            f"(it serves: {served}); set FROGNANO_MODEL_NAME to one of them, or "
            "FROGNANO_MODEL_BASE_URL to the right server"
        )

    async def _send(self, path: str, body: bytes | None) -> bytes:
        policy = self.retry
        started = self._clock()
        last = "no attempt made"
        for attempt in range(1, max(1, policy.attempts) + 1):
            try:
                return await self._attempt(path, body)
            except _Retryable as exc:
                last = exc.description
                if attempt >= policy.attempts:
                    break
                if exc.retry_after is not None:
                    delay = min(max(exc.retry_after, 0.0), policy.max_delay)
                else:
                    base = min(policy.max_delay, policy.initial_delay * 2 ** (attempt - 1))
                    delay = base * random.uniform(0.5, 1.0)  # noqa: S311 - jitter only
                if self._clock() - started + delay > policy.budget_seconds:
                    break
                log.warning(
                    "model.retry",
                    url=self.base_url,
                    attempt=attempt,
                    delay=round(delay, 3),
                    error=last,
                )
                await self._sleep(delay)
        elapsed = self._clock() - started
        raise ModelUnavailable(
            f"the model server at {self.base_url} is unavailable after {attempt} attempt(s) "
            f"in {elapsed:.0f} s; last error: {last}. Check that it is running and reachable, "
            "and that FROGNANO_MODEL_BASE_URL points at it (`frognano model check` tests it)"
        )

    async def _attempt(self, path: str, body: bytes | None) -> bytes:
        try:
            if body is None:
                return await self._client.get(path, cast_to=bytes)
            return await self._client.post(path, cast_to=bytes, content=body)
        except openai.APITimeoutError as exc:
            raise _Retryable(f"timed out ({exc})") from exc
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise _Retryable(f"connection failed: {cause}") from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            detail = _error_message(exc)
            if status in _RETRY_STATUSES or status >= 500:
                raise _Retryable(
                    f"HTTP {status}: {detail}", _retry_after(exc.response.headers)
                ) from exc
            raise self._refusal(status, detail) from exc

    def _refusal(self, status: int, detail: str) -> Exception:
        if status in (400, 413) and _CONTEXT_OVERFLOW.search(detail):
            return ContextOverflow(f"the conversation no longer fits the model: {detail}")
        if status in (401, 403):
            return ModelResponseError(
                f"the model server at {self.base_url} refused the API key (HTTP {status}: "
                f"{detail}); check FROGNANO_MODEL_API_KEY"
            )
        if status == 404:
            return ModelResponseError(
                f"the model server at {self.base_url} answered 404 ({detail}): the model name "
                f"{self.model!r} or the base URL is wrong; check FROGNANO_MODEL_NAME against "
                "the server's /v1/models and FROGNANO_MODEL_BASE_URL (it usually ends in /v1)"
            )
        return ModelResponseError(
            f"the model server at {self.base_url} refused the request (HTTP {status}): {detail}"
        )

    # -- replies -----------------------------------------------------------------------------

    def _parse(self, raw: bytes, *, with_tools: bool) -> AssistantTurn:
        try:
            reply = json.loads(raw)
        except ValueError as exc:
            raise self._malformed(f"the body is not JSON: {_clip(raw)!r}") from exc
        if not isinstance(reply, dict):
            raise self._malformed(f"the body is not a JSON object: {_clip(raw)!r}")
        choices = reply.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._malformed(f"it has no choices: {_clip(raw)!r}")
        choice = choices[0]
        message = choice.get("message")
        if not isinstance(message, dict):
            raise self._malformed(f"the choice has no message: {_clip(raw)!r}")
        content = message.get("content")
        reasoning = message.get("reasoning_content")
        if content is not None and not isinstance(content, str):
            raise self._malformed(f"the message content is not a string: {_clip(raw)!r}")
        if reasoning is not None and not isinstance(reasoning, str):
            raise self._malformed(f"reasoning_content is not a string: {_clip(raw)!r}")
        content = content or ""
        finish_reason = choice.get("finish_reason")
        finish = finish_reason if isinstance(finish_reason, str) else "stop"

        calls, echoed = self._server_calls(message.get("tool_calls"), raw)

        # A server without --reasoning-parser leaves the reasoning in the content.
        answer = content
        thought = reasoning
        if reasoning is None and (
            THINK_END in content
            or content.startswith(THINK_START)
            or (self.sampling.enable_thinking and not calls and TOOL_CALL_START in content)
        ):
            thought, answer = split_reasoning(content, implicit_close=self.sampling.enable_thinking)

        # A server without --tool-call-parser leaves the calls as XML in the content.
        from_content = False
        if not calls and with_tools and TOOL_CALL_START in answer:
            visible, parsed = parse_tool_calls(answer, self._tool_definitions)
            if parsed:
                from_content = True
                answer = visible
                calls = [
                    ToolCall(
                        id=f"call_{uuid.uuid4().hex}",
                        name=name,
                        arguments=json.dumps(arguments, ensure_ascii=False),
                    )
                    for name, arguments in parsed
                ]

        echo: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning is not None:
            echo["reasoning_content"] = reasoning
        if echoed and not from_content:
            echo["tool_calls"] = echoed

        return AssistantTurn(
            content=answer.strip(),
            reasoning=(thought.strip() or None) if thought is not None else None,
            tool_calls=tuple(calls),
            finish_reason=finish,
            usage=_usage(reply.get("usage")),
            message=echo,
            calls_from_content=from_content,
        )

    def _server_calls(
        self, tool_calls: Any, raw: bytes
    ) -> tuple[list[ToolCall], list[dict[str, Any]]]:
        if tool_calls is None:
            return [], []
        if not isinstance(tool_calls, list):
            raise self._malformed(f"tool_calls is not a list: {_clip(raw)!r}")
        calls: list[ToolCall] = []
        echoed: list[dict[str, Any]] = []
        for item in tool_calls:
            function = item.get("function") if isinstance(item, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(function, dict) or not isinstance(name, str):
                raise self._malformed(f"a tool call has no function name: {_clip(raw)!r}")
            arguments = function.get("arguments")
            if isinstance(arguments, dict | list):  # some servers send the object itself
                arguments = json.dumps(arguments, ensure_ascii=False)
            elif not isinstance(arguments, str):
                arguments = "" if arguments is None else str(arguments)
            call_id = item.get("id")
            if not isinstance(call_id, str) or not call_id:
                call_id = f"call_{uuid.uuid4().hex}"
            calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
            echoed.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": echo_arguments(arguments)},
                }
            )
        return calls, echoed

    def _malformed(self, what: str) -> ModelResponseError:
        return ModelResponseError(
            f"the model server at {self.base_url} answered with something that is not a chat "
            f"completion: {what}"
        )


def echo_arguments(arguments: str) -> str:
    """The `arguments` string to echo back so that the chat template prints each value as
    the model wrote it: booleans become "true"/"false" and null "null" (the template prints
    scalars with `|string`), integers outside 64 bits their digits (SGLang reads the history
    with orjson, which turns them into floats), everything else is kept; "{}" when
    `arguments` is not a JSON object (SGLang rejects a history whose arguments are not)."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return "{}"
    if not isinstance(parsed, dict):
        return "{}"
    return json.dumps(
        {key: _echo_value(value) for key, value in parsed.items()},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _echo_value(value: Any) -> Any:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int) and not _ORJSON_INTS[0] <= value <= _ORJSON_INTS[1]:
        return str(value)
    return value


_ORJSON_INTS = (-(2**63), 2**64 - 1)
"""The integers orjson reads as integers (i64 and u64); beyond them it makes floats."""


def _usage(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        cached_tokens=cached if isinstance(cached, int) and not isinstance(cached, bool) else None,
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _error_message(exc: openai.APIStatusError) -> str:
    """The server's own words: SGLang's `{"message": ...}`, OpenAI's `{"error": {"message":
    ...}}` (unwrapped by the SDK), FastAPI's `{"detail": ...}`, or the raw text."""
    body = exc.body
    text: str | None = None
    if isinstance(body, Mapping):
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, str) and value:
                text = value
                break
            if isinstance(value, Mapping) and isinstance(value.get("message"), str):
                text = value["message"]
                break
        if text is None:
            text = json.dumps(body, ensure_ascii=False, default=str)
    elif isinstance(body, str) and body:
        text = body
    if text is None:
        try:
            text = exc.response.text
        except Exception:  # a streamed or closed response has no text
            text = ""
    return _clip(text.strip() or exc.message)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `Retry-After` (seconds or an HTTP date) or `retry-after-ms`; None if
    absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _clip(text: str | bytes) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "…"
