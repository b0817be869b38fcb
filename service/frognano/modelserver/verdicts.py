"""The verdicts of `frognano model check`: pure functions from the answers to report items."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from frognano.agent.qwen3_coder import THINK_END, THINK_START, TOOL_CALL_START
from frognano.agent.tools.schema import TOOL_NAMES
from frognano.modelserver.sglang import REASONING_PARSER, TOOL_CALL_PARSER

__all__ = ["Exchange", "Item", "Status", "Target", "evaluate", "model_listed", "required_passed"]

_CLIP = 300

ENDPOINT = "endpoint reachable"
MODEL = "model served"
COMPLETION = "chat completion"
TOOL_CALLS = "tool calls parsed"
REASONING = "reasoning separated"
CACHE = "prompt-cache report"

_SERVER_FIX = "start the model server (`frognano model serve`), or point --model-url or "
_SERVER_FIX += "FROGNANO_MODEL_BASE_URL at it"
_KEY_FIX = "set FROGNANO_MODEL_API_KEY to the key the server was started with (--api-key)"
_LOG_FIX = "see the model server's log"


class Status(StrEnum):
    """How one item came out."""

    OK = "ok"
    FAIL = "fail"
    WARN = "warn"
    """Works, but something FrogNano uses is missing (only for items that are not required)."""
    SKIP = "skip"
    """Not checked, because an earlier item failed."""


@dataclass(frozen=True)
class Item:
    """One line of the report."""

    name: str
    status: Status
    detail: str
    """What was seen."""
    fix: str | None = None
    """What to change (the flag or setting), when the item did not pass."""
    required: bool = True
    """False for items that only warn: FrogNano works without them."""


@dataclass(frozen=True)
class Target:
    """The server and model to check."""

    base_url: str
    """The OpenAI-compatible root, e.g. http://localhost:30000/v1 (no trailing slash)."""
    model: str
    api_key: str | None = None


@dataclass(frozen=True)
class Exchange:
    """One HTTP request's outcome: the JSON body, or why there is none."""

    status: int | None = None
    """HTTP status; None when no answer came (connection error, timeout)."""
    body: Any = None
    """The parsed JSON body; None when it was not JSON (or there was no answer)."""
    text: str = ""
    """The start of the raw body, for messages."""
    error: str | None = None
    """Why no answer came."""
    timed_out: bool = False
    seconds: float = 0.0

    @classmethod
    def answer(cls, status: int, text: str, seconds: float = 0.0) -> Exchange:
        """An HTTP answer: the body parsed when it is JSON, its start kept for messages."""
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        return cls(status=status, body=body, text=_clip(text), seconds=seconds)


def evaluate(
    target: Target, models: Exchange, reply: Exchange | None, *, max_tokens: int
) -> list[Item]:
    """Every item of the report, from the `/models` exchange and the chat completion's
    (None when it was not sent because the model list already failed)."""
    endpoint = endpoint_item(target.base_url, models)
    if endpoint.status is not Status.OK:
        after = _skipped((MODEL, COMPLETION, TOOL_CALLS, REASONING, CACHE), f"{ENDPOINT} failed")
        return [endpoint, *after]
    model = model_item(target.model, models.body)
    if model.status is not Status.OK or reply is None:
        why = f"{MODEL} failed" if model.status is not Status.OK else "no completion was sent"
        return [endpoint, model, *_skipped((COMPLETION, TOOL_CALLS, REASONING, CACHE), why)]
    completion, choice = completion_item(target, reply)
    if choice is None:
        after = _skipped((TOOL_CALLS, REASONING, CACHE), f"{COMPLETION} failed")
        return [endpoint, model, completion, *after]
    message, finish_reason, usage = choice
    return [
        endpoint,
        model,
        completion,
        tool_call_item(message, finish_reason, max_tokens=max_tokens),
        reasoning_item(message),
        cache_item(usage),
    ]


def model_listed(target: Target, models: Exchange) -> bool:
    """Whether the `/models` answer lists the model, so a completion is worth sending."""
    listed = endpoint_item(target.base_url, models).status is Status.OK
    return listed and model_item(target.model, models.body).status is Status.OK


def required_passed(items: Sequence[Item]) -> bool:
    """True when every required item passed (warnings do not count)."""
    return all(item.status is Status.OK for item in items if item.required)


def _skipped(names: Sequence[str], because: str) -> list[Item]:
    return [
        Item(name, Status.SKIP, f"not checked: {because}", required=name != CACHE) for name in names
    ]


def endpoint_item(base_url: str, models: Exchange) -> Item:
    """Did `GET {base_url}/models` answer with a model list?"""
    url = f"{base_url}/models"
    if models.status is None:
        return Item(ENDPOINT, Status.FAIL, f"no answer from {url}: {models.error}", _SERVER_FIX)
    if models.status in (401, 403):
        detail = f"{url} refused the API key (HTTP {models.status}: {_message(models)})"
        return Item(ENDPOINT, Status.FAIL, detail, _KEY_FIX)
    if models.status == 404:
        fix = "set --model-url or FROGNANO_MODEL_BASE_URL to the server's OpenAI-compatible root"
        fix += ", which ends in /v1 (e.g. http://localhost:30000/v1)"
        if not base_url.endswith("/v1"):
            fix += f"; did you mean {base_url}/v1?"
        return Item(ENDPOINT, Status.FAIL, f"{url} answered 404: no model list there", fix)
    if models.status != 200:
        detail = f"{url} answered HTTP {models.status}: {_message(models)}"
        return Item(ENDPOINT, Status.FAIL, detail, _LOG_FIX)
    if served_models(models.body) is None:
        detail = f"{url} answered, but not with a model list: {models.text!r}"
        fix = "point --model-url or FROGNANO_MODEL_BASE_URL at an OpenAI-compatible server "
        fix += "(SGLang's /v1)"
        return Item(ENDPOINT, Status.FAIL, detail, fix)
    return Item(ENDPOINT, Status.OK, f"{url} answered in {models.seconds:.2f} s")


def served_models(listing: Any) -> list[Mapping[str, Any]] | None:
    """The entries of a `/v1/models` answer, or None when it is not a model list."""
    if not isinstance(listing, dict) or not isinstance(listing.get("data"), list):
        return None
    return [entry for entry in listing["data"] if isinstance(entry, dict)]


def model_item(model: str, listing: Any) -> Item:
    """Is `model` among the served models?"""
    entries = served_models(listing) or []
    for entry in entries:
        if entry.get("id") == model:
            length = entry.get("max_model_len")
            context = f" (max_model_len {length})" if isinstance(length, int) else ""
            return Item(MODEL, Status.OK, f"serves {model!r}{context}")
    names = [str(entry.get("id")) for entry in entries]
    served = ", ".join(repr(name) for name in names) or "no model"
    fix = f"start SGLang with --served-model-name {model}"
    if names:
        fix = (
            f"pass --model or set FROGNANO_MODEL_NAME to {' or '.join(map(repr, names))}; or {fix}"
        )
    return Item(MODEL, Status.FAIL, f"the server serves {served}, not {model!r}", fix)


def completion_item(
    target: Target, reply: Exchange
) -> tuple[Item, tuple[Mapping[str, Any], str | None, Any] | None]:
    """Did the tool-calling request come back as a chat completion? With the item, the
    first choice's message, its finish_reason and the usage, when it did."""
    url = f"{target.base_url}/chat/completions"
    if reply.status is None:
        fix = _SERVER_FIX
        if reply.timed_out:
            fix = "raise --timeout, or see the model server's log (it may be overloaded or "
            fix += "still starting)"
        return Item(COMPLETION, Status.FAIL, f"no answer from {url}: {reply.error}", fix), None
    if reply.status in (401, 403):
        detail = f"{url} refused the API key (HTTP {reply.status}: {_message(reply)})"
        return Item(COMPLETION, Status.FAIL, detail, _KEY_FIX), None
    if reply.status != 200:
        detail = f"{url} answered HTTP {reply.status}: {_message(reply)}"
        return Item(COMPLETION, Status.FAIL, detail, _LOG_FIX), None
    body = reply.body
    choices = body.get("choices") if isinstance(body, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or not isinstance(message, dict):
        detail = f"{url} answered, but not with a chat completion: {reply.text!r}"
        return Item(COMPLETION, Status.FAIL, detail, _LOG_FIX), None
    finish = choice.get("finish_reason")
    finish_reason = finish if isinstance(finish, str) else None
    usage = body.get("usage") if isinstance(body, dict) else None
    tokens = ""
    if isinstance(usage, dict):
        tokens = (
            f", {usage.get('prompt_tokens')} prompt + {usage.get('completion_tokens')} "
            "completion tokens"
        )
    detail = f"finish_reason {finish_reason}{tokens} in {reply.seconds:.2f} s"
    return Item(COMPLETION, Status.OK, detail), (message, finish_reason, usage)


def tool_call_item(
    message: Mapping[str, Any], finish_reason: str | None, *, max_tokens: int
) -> Item:
    """Did the server parse the model's tool call into `tool_calls`?"""
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        seen: list[str] = []
        for call in calls:
            shown, problem = _read_call(call)
            if problem is not None:
                return Item(TOOL_CALLS, Status.FAIL, shown, problem)
            seen.append(shown)
        return Item(TOOL_CALLS, Status.OK, "tool_calls: " + ", ".join(seen))
    if TOOL_CALL_START in text or "<function=" in text:
        detail = f"the call came back as raw {TOOL_CALL_START} XML in content: {_clip(text)!r}"
        fix = f"start SGLang with --tool-call-parser {TOOL_CALL_PARSER}"
        return Item(TOOL_CALLS, Status.FAIL, detail, fix)
    if finish_reason == "length":
        detail = f"the reply was cut off at {max_tokens} tokens before any tool call"
        fix = "run the check again with a larger --max-tokens"
        return Item(TOOL_CALLS, Status.FAIL, detail, fix)
    detail = f"the model answered without calling a tool: {_clip(text)!r}"
    fix = "run the check again (sampling varies); if it persists, check that the server runs "
    fix += "FrogNano-4B (--model-path) with its own chat template"
    return Item(TOOL_CALLS, Status.FAIL, detail, fix)


def _read_call(call: Any) -> tuple[str, str | None]:
    """One entry of `tool_calls` as `Name({...})`, or what is wrong with it and the fix."""
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(function, dict) or name not in TOOL_NAMES:
        fix = "check that the server runs FrogNano-4B, with --tool-call-parser "
        fix += TOOL_CALL_PARSER
        return f"a tool call names no tool that was offered: {_clip(call)!r}", fix
    arguments = function.get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        shown = f"the {name} call's arguments are not a JSON object: {_clip(arguments)!r}"
        return shown, f"start SGLang with --tool-call-parser {TOOL_CALL_PARSER}"
    return f"{name}({_clip(json.dumps(parsed, ensure_ascii=False), 80)})", None


def reasoning_item(message: Mapping[str, Any]) -> Item:
    """Did the server split the thinking into `reasoning_content`?"""
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    reasoning = message.get("reasoning_content")
    fix = f"start SGLang with --reasoning-parser {REASONING_PARSER}"
    tags = [tag for tag in (THINK_START, THINK_END) if tag in text]
    if tags:
        detail = f"{' and '.join(tags)} left in content: {_clip(text)!r}"
        return Item(REASONING, Status.FAIL, detail, fix)
    if not isinstance(reasoning, str) or not reasoning.strip():
        detail = "no reasoning_content in the reply, although thinking was asked for"
        fix += " (and keep the model's own chat template, which honours enable_thinking)"
        return Item(REASONING, Status.FAIL, detail, fix)
    return Item(REASONING, Status.OK, f"reasoning_content: {_clip(reasoning.strip(), 80)!r}")


def cache_item(usage: Any) -> Item:
    """Does the server report cached prompt tokens (a warning only: FrogNano works without)?"""
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if isinstance(cached, int) and not isinstance(cached, bool):
        prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        of = f" of {prompt}" if isinstance(prompt, int) else ""
        return Item(CACHE, Status.OK, f"cached_tokens reported ({cached}{of})", required=False)
    detail = "no usage.prompt_tokens_details.cached_tokens: trajectories and metrics will not "
    detail += "show prefix-cache hits"
    fix = "start SGLang with --enable-cache-report"
    return Item(CACHE, Status.WARN, detail, fix, required=False)


def _message(exchange: Exchange) -> str:
    """The server's own words from an error body: SGLang's `message`, OpenAI's
    `error.message`, FastAPI's `detail`, or the raw text."""
    body = exchange.body
    if isinstance(body, dict):
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if isinstance(value, str) and value:
                return _clip(value)
    return exchange.text or "(empty body)"


def _clip(value: Any, limit: int = _CLIP) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"
