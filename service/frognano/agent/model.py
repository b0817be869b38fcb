"""The model client: one chat completion per agent step, against SGLang's OpenAI-compatible API."""

# The request body is built as bytes from the conversation's stored fragments (`RequestBody`),
# so its cost does not grow with re-serialising the history and the same conversation always
# gives the same bytes (the openai SDK's `messages=` transform walks the whole history on every
# call, ~100 ms near 131K tokens). It is sent through the SDK's low-level `post`, which keeps
# the SDK's connection pool, headers and error classes. The reply is parsed into an
# `AssistantTurn` whose `message` echoes exactly what the model generated (`reply.py`).
#
# Retries: connection errors, timeouts, 408, 429 and 5xx, with exponential backoff and jitter
# or the server's Retry-After, within `RetryPolicy.attempts` and `budget_seconds`; then
# `ModelUnavailable`. A context overflow (400 whose message says the input is too long) raises
# `ContextOverflow`; 401/403, 404 and other 4xx raise `ModelResponseError` at once, as does a
# 200 whose body is not a chat completion (a proxy's error page or a broken server does not
# heal on a retry); see `model_errors.py`.

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Self

import openai

from frognano import backoff
from frognano.agent.model_errors import Retryable, failure
from frognano.agent.reply import clip, parse_completion
from frognano.agent.request import RequestBody, SamplingConfig
from frognano.agent.turns import AssistantTurn, Conversation
from frognano.errors import ModelError, ModelResponseError, ModelUnavailable
from frognano.log import get_logger

__all__ = ["ModelClient", "RetryPolicy", "ServerInfo"]

log = get_logger(__name__)

_DEFAULT_SAMPLING = SamplingConfig()


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
    """What `ModelClient.check` learned: the `/v1/models` entry of the model, and SGLang's
    `/model_info` (or the older `/get_model_info`) where the server answers it."""

    model: str
    max_model_len: int | None
    served: dict[str, Any] = field(default_factory=dict)
    """The entry's `id`, `root`, `owned_by`, `max_model_len` (those the server sent)."""
    model_info: dict[str, Any] = field(default_factory=dict)
    """SGLang's `model_path`, `tokenizer_path`, `weight_version`...; empty elsewhere."""

    def to_json(self) -> dict[str, Any]:
        return {"served": self.served, "model_info": self.model_info}


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
        sampling: SamplingConfig = _DEFAULT_SAMPLING,
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
        self._body = RequestBody(model, tools_json, sampling)
        self.server: ServerInfo | None = None
        self.identity_timeout = 10.0
        """Seconds to wait for `/model_info`: the identity is a nicety, never a stall."""
        """What the last `check` learned; None before one succeeds."""

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
        return self._body.build(conversation, extra=extra, with_tools=with_tools)

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
        return parse_completion(
            raw,
            base_url=self.base_url,
            with_tools=with_tools,
            thinking=self.sampling.enable_thinking,
            tool_definitions=self._tool_definitions,
        )

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
            except Retryable as exc:
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
                f"{self.base_url}/models did not answer with a model list: {clip(raw)!r}"
            ) from exc
        for entry in entries:
            if entry.get("id") == self.model:
                length = entry.get("max_model_len")
                self.server = ServerInfo(
                    self.model,
                    length if isinstance(length, int) else None,
                    _plain(entry, _SERVED_KEYS),
                    await self._model_info(),
                )
                return self.server
        served = ", ".join(str(e.get("id")) for e in entries) or "none"
        raise ModelResponseError(
            f"the model server at {self.base_url} does not serve a model named {self.model!r} "
            f"(it serves: {served}); set FROGNANO_MODEL_NAME to one of them, or "
            "FROGNANO_MODEL_BASE_URL to the right server"
        )

    def describe(self) -> dict[str, Any]:
        """What a trajectory's `run_info` records of the model: the name asked for and what
        `check` learned of the server (not its address, which may be a private one)."""
        about: dict[str, Any] = {"kind": "server", "name": self.model}
        if self.server is not None:
            about.update(self.server.to_json())
        return about

    async def _model_info(self) -> dict[str, Any]:
        """SGLang's model identity, asked once (no retry); {} from a server without it."""
        root = self.base_url.rstrip("/")
        if not root.endswith("/v1"):
            return {}
        for path in ("/model_info", "/get_model_info"):
            try:
                async with asyncio.timeout(self.identity_timeout):
                    raw = await self._attempt(root.removesuffix("/v1") + path, None)
                info = json.loads(raw)
            except (Retryable, ModelError, ValueError, TimeoutError):
                continue
            if isinstance(info, dict):
                return _plain(info, _MODEL_INFO_KEYS)
        return {}

    async def _send(self, path: str, body: bytes | None) -> bytes:
        policy = self.retry
        started = self._clock()
        last = "no attempt made"
        for attempt in range(1, max(1, policy.attempts) + 1):
            try:
                return await self._attempt(path, body)
            except Retryable as exc:
                last = exc.description
                if attempt >= policy.attempts:
                    break
                if exc.retry_after is not None:
                    delay = min(exc.retry_after, policy.max_delay)
                else:
                    delay = backoff.delay(
                        attempt, initial=policy.initial_delay, cap=policy.max_delay
                    )
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
        except (openai.APIConnectionError, openai.APIStatusError) as exc:
            raise failure(exc, base_url=self.base_url, model=self.model) from exc


_SERVED_KEYS = ("id", "root", "owned_by", "max_model_len")
_MODEL_INFO_KEYS = ("model_path", "tokenizer_path", "weight_version", "model_type", "architectures")


def _plain(source: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The `keys` of `source` whose values are short strings, integers or lists of strings."""
    kept: dict[str, Any] = {}
    for key in keys:
        value = source.get(key)
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            kept[key] = clip(value) if isinstance(value, str) else value
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            kept[key] = [clip(v) for v in value[:8]]
    return kept
