"""`frognano model check`: ask a model server the two questions whose answers the verdicts judge."""

from __future__ import annotations

import json
import time
from typing import Any

import openai

from frognano.agent.prompts import SYSTEM_PROMPT
from frognano.agent.request import SamplingConfig
from frognano.agent.tools.schema import TOOL_DEFINITIONS
from frognano.modelserver.verdicts import Exchange, Item, Target, evaluate, model_listed

__all__ = ["CHECK_PROMPT", "check_request", "check_server"]

CHECK_PROMPT = "Read the file /workspace/README.md."
"""The one user message: a task whose obvious first step is a Read call."""


def check_request(model: str, max_tokens: int) -> dict[str, Any]:
    """The one chat completion sent: FrogNano's system prompt, tools and sampling values (as
    the agent sends them), thinking on, and a task that calls for a Read."""
    return {
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": CHECK_PROMPT},
        ],
        "tools": TOOL_DEFINITIONS,
        **SamplingConfig(max_tokens=max_tokens).request_fields(),
    }


async def check_server(
    target: Target, *, max_tokens: int = 512, timeout: float = 120.0
) -> list[Item]:
    """Ask `/models`, then (when the model is served) send one tool-calling completion, and
    judge both. Each request is tried once: a check should report, not ride out, a failure."""
    async with openai.AsyncOpenAI(
        base_url=target.base_url,
        api_key=target.api_key or "EMPTY",
        max_retries=0,
        timeout=timeout,
    ) as client:
        models = await _exchange(client, "/models", None)
        reply: Exchange | None = None
        if model_listed(target, models):
            body = json.dumps(check_request(target.model, max_tokens)).encode()
            reply = await _exchange(client, "/chat/completions", body)
    return evaluate(target, models, reply, max_tokens=max_tokens)


async def _exchange(client: openai.AsyncOpenAI, path: str, body: bytes | None) -> Exchange:
    started = time.monotonic()
    try:
        if body is None:
            raw = await client.get(path, cast_to=bytes)
        else:
            raw = await client.post(path, cast_to=bytes, content=body)
    except openai.APITimeoutError:
        elapsed = time.monotonic() - started
        return Exchange(error=f"timed out after {elapsed:.0f} s", timed_out=True)
    except openai.APIConnectionError as exc:
        return Exchange(error=f"cannot connect ({exc.__cause__ or exc})")
    except openai.APIStatusError as exc:
        return Exchange.answer(exc.status_code, exc.response.text)
    seconds = time.monotonic() - started
    return Exchange.answer(200, raw.decode("utf-8", "replace"), seconds)
