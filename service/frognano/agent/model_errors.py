"""What a failed request to the model server means: worth a retry, a context overflow, a refusal."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping

import openai

from frognano import backoff
from frognano.agent.reply import clip
from frognano.errors import ContextOverflow, ModelResponseError

__all__ = ["Retryable", "failure"]

_CONTEXT_OVERFLOW = re.compile(
    r"context length|context window|maximum context|longer than the model|"
    r"exceeds the model|token count exceeds|too many tokens|prompt is too long|"
    r"input is too long|requested \d+ tokens|tokens? exceeds?",
    re.IGNORECASE,
)
_RETRY_STATUSES = frozenset({408, 429})


class Retryable(Exception):
    """A failure that may heal: `description` for messages, the server's `retry_after` (s)."""

    def __init__(self, description: str, retry_after: float | None = None) -> None:
        super().__init__(description)
        self.description = description
        self.retry_after = retry_after


def failure(
    exc: openai.APIConnectionError | openai.APIStatusError, *, base_url: str, model: str
) -> Exception:
    """The exception to raise for `exc`. Connection errors, timeouts, 408, 429 and 5xx are
    `Retryable` (with the server's wait when it sent one); a 400 or 413 that says the input
    is too long is a `ContextOverflow`; 401/403, 404 and other 4xx are a `ModelResponseError`
    naming the setting to check, since a refused request does not heal on a retry."""
    if isinstance(exc, openai.APITimeoutError):
        return Retryable(f"timed out ({exc})")
    if isinstance(exc, openai.APIConnectionError):
        return Retryable(f"connection failed: {exc.__cause__ or exc}")
    status = exc.status_code
    detail = _error_message(exc)
    if status in _RETRY_STATUSES or status >= 500:
        return Retryable(f"HTTP {status}: {detail}", _retry_after(exc.response.headers))
    return _refusal(status, detail, base_url=base_url, model=model)


def _refusal(status: int, detail: str, *, base_url: str, model: str) -> Exception:
    if status in (400, 413) and _CONTEXT_OVERFLOW.search(detail):
        return ContextOverflow(f"the conversation no longer fits the model: {detail}")
    if status in (401, 403):
        return ModelResponseError(
            f"the model server at {base_url} refused the API key (HTTP {status}: "
            f"{detail}); check FROGNANO_MODEL_API_KEY"
        )
    if status == 404:
        return ModelResponseError(
            f"the model server at {base_url} answered 404 ({detail}): the model name "
            f"{model!r} or the base URL is wrong; check FROGNANO_MODEL_NAME against "
            "the server's /v1/models and FROGNANO_MODEL_BASE_URL (it usually ends in /v1)"
        )
    return ModelResponseError(
        f"the model server at {base_url} refused the request (HTTP {status}): {detail}"
    )


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
    return clip(text.strip() or exc.message)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """The server's wait in seconds: `retry-after-ms` (OpenAI's) before `Retry-After`."""
    millis = backoff.retry_after_ms(headers.get("retry-after-ms"))
    if millis is not None:
        return millis
    return backoff.retry_after(headers.get("retry-after"), time.time())
