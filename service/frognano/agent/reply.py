"""A chat completion's body parsed into an `AssistantTurn`, with the exact message to echo back."""

# The echo is built so that the Qwen3.5 chat template re-renders exactly the text the model
# generated:
#
# - `content` is echoed as received ("" for null) and `reasoning_content` as received (the key
#   left out when null); the template trims both, and splits `</think>` out of a content that
#   still holds the reasoning (a server without `--reasoning-parser`).
# - `tool_calls` are echoed with their `arguments` re-serialised from the parsed JSON, booleans
#   as the strings "true"/"false" and null as "null": the template prints scalar values with
#   `|string`, which would turn the model's `true` into `True`. Objects and arrays are left as
#   they are (the template prints them with `tojson`). Arguments that are not a JSON object are
#   echoed as "{}" (SGLang answers 400 to invalid JSON in the history) while
#   `ToolCall.arguments` keeps the raw text, so validation can report it.
# - Calls parsed from qwen3_coder XML left in `content` (a server without
#   `--tool-call-parser`) are not echoed as `tool_calls`: the content already holds the XML.

from __future__ import annotations

import json
import uuid
from typing import Any

from frognano.agent.qwen3_coder import (
    THINK_END,
    THINK_START,
    TOOL_CALL_START,
    parse_tool_calls,
    split_reasoning,
)
from frognano.agent.turns import AssistantTurn, ToolCall, Usage
from frognano.errors import ModelResponseError

__all__ = ["clip", "echo_arguments", "parse_completion"]

_MESSAGE_LIMIT = 500


def parse_completion(
    raw: bytes,
    *,
    base_url: str,
    with_tools: bool,
    thinking: bool,
    tool_definitions: list[dict[str, Any]],
) -> AssistantTurn:
    """The turn in `raw`, or ModelResponseError naming `base_url` when it is not a chat
    completion. `thinking` says whether the request asked for reasoning (a content with no
    `</think>` may then still be one); calls in the content are looked for only `with_tools`,
    typed by `tool_definitions`."""
    try:
        reply = json.loads(raw)
    except ValueError as exc:
        raise _malformed(base_url, f"the body is not JSON: {clip(raw)!r}") from exc
    if not isinstance(reply, dict):
        raise _malformed(base_url, f"the body is not a JSON object: {clip(raw)!r}")
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _malformed(base_url, f"it has no choices: {clip(raw)!r}")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise _malformed(base_url, f"the choice has no message: {clip(raw)!r}")
    content = message.get("content")
    reasoning = message.get("reasoning_content")
    if content is not None and not isinstance(content, str):
        raise _malformed(base_url, f"the message content is not a string: {clip(raw)!r}")
    if reasoning is not None and not isinstance(reasoning, str):
        raise _malformed(base_url, f"reasoning_content is not a string: {clip(raw)!r}")
    content = content or ""
    finish_reason = choice.get("finish_reason")
    finish = finish_reason if isinstance(finish_reason, str) else "stop"

    calls, echoed = _server_calls(message.get("tool_calls"), raw, base_url)

    # A server without --reasoning-parser leaves the reasoning in the content.
    answer = content
    thought = reasoning
    if reasoning is None and (
        THINK_END in content
        or content.startswith(THINK_START)
        or (thinking and not calls and TOOL_CALL_START in content)
    ):
        thought, answer = split_reasoning(content, implicit_close=thinking)

    # A server without --tool-call-parser leaves the calls as XML in the content.
    from_content = False
    if not calls and with_tools and TOOL_CALL_START in answer:
        visible, parsed = parse_tool_calls(answer, tool_definitions)
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
        model=_text(reply.get("model")),
    )


def _server_calls(
    tool_calls: Any, raw: bytes, base_url: str
) -> tuple[list[ToolCall], list[dict[str, Any]]]:
    if tool_calls is None:
        return [], []
    if not isinstance(tool_calls, list):
        raise _malformed(base_url, f"tool_calls is not a list: {clip(raw)!r}")
    calls: list[ToolCall] = []
    echoed: list[dict[str, Any]] = []
    for item in tool_calls:
        function = item.get("function") if isinstance(item, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(function, dict) or not isinstance(name, str):
            raise _malformed(base_url, f"a tool call has no function name: {clip(raw)!r}")
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


def _malformed(base_url: str, what: str) -> ModelResponseError:
    return ModelResponseError(
        f"the model server at {base_url} answered with something that is not a chat "
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


def _text(value: Any) -> str | None:
    """A string the server sent for a name, cut to 500 characters; None for anything else."""
    return clip(value) if isinstance(value, str) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def clip(text: str | bytes) -> str:
    """`text` cut to 500 characters for a message (a server's error page can be long)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "…"
