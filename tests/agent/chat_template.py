"""Render a chat-completions request with the Qwen3.5 chat template, as SGLang 0.5.23 does.

SGLang (`serving_chat._apply_jinja_template`) parses each assistant tool call's `arguments`
JSON string into a dict, turns a null `content` into "", passes the tools as pydantic
`Tool.model_dump()` dicts and the request's `chat_template_kwargs` as template variables, then
calls transformers' `apply_chat_template`, whose jinja environment is reproduced here
(`transformers.utils.chat_template_utils._compile_jinja_template`: sandboxed, `trim_blocks`,
`lstrip_blocks`, `loopcontrols`, a `tojson` that keeps non-ASCII and key order and does not
escape HTML, and `raise_exception`).
"""

from __future__ import annotations

import copy
import json
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

TEMPLATE_PATH = Path(__file__).resolve().parents[1] / "data" / "qwen3.5-chat-template.jinja"
GENERATION_PROMPT = "<|im_start|>assistant\n<think>\n"


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


@cache
def _template() -> jinja2.Template:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env.from_string(TEMPLATE_PATH.read_text(encoding="utf-8"))


def _tool_dump(tool: dict[str, Any]) -> dict[str, Any]:
    """What SGLang's pydantic `Tool(...).model_dump()` gives the template for one tool.

    `Function` keeps the client's key order, drops unknown keys and unset `strict` /
    `defer_loading`, and appends an unset `description`/`parameters` as null; `Tool` itself
    appends `"defer_loading": null`.
    """
    function_in = tool["function"]
    known = ("description", "name", "parameters", "strict", "defer_loading")
    fields = {key: function_in.get(key) for key in known}
    if fields["defer_loading"] is None and tool.get("defer_loading") is not None:
        fields["defer_loading"] = tool["defer_loading"]
    order = [key for key in function_in if key in known]
    order += [key for key in known if key not in order]
    function = {
        key: fields[key]
        for key in order
        if not (key in ("strict", "defer_loading") and fields[key] is None)
    }
    return {
        "type": tool.get("type", "function"),
        "function": function,
        "defer_loading": tool.get("defer_loading"),
    }


def template_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's messages as SGLang hands them to the template."""
    messages: list[dict[str, Any]] = copy.deepcopy(request["messages"])
    for message in messages:
        if message.get("content") is None:
            message["content"] = ""
        if message.get("role") == "assistant" and isinstance(message.get("tool_calls"), list):
            for call in message["tool_calls"]:
                function = call.get("function")
                if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                    arguments = json.loads(function["arguments"])
                    if not isinstance(arguments, dict):
                        raise TypeError(
                            "Assistant tool call function.arguments must be a JSON object."
                        )
                    function["arguments"] = arguments
    return messages


def render(request: dict[str, Any], *, add_generation_prompt: bool = True) -> str:
    """The prompt text SGLang builds from a chat-completions request body (parsed)."""
    kwargs: dict[str, Any] = dict(request.get("chat_template_kwargs") or {})
    tools = request.get("tools")
    return _template().render(
        messages=template_messages(request),
        tools=[_tool_dump(tool) for tool in tools] if tools else None,
        add_generation_prompt=add_generation_prompt,
        **kwargs,
    )


def last_assistant_turn(prompt: str) -> str:
    """The last `<|im_start|>assistant ... <|im_end|>` block of a rendered prompt."""
    start = prompt.rindex("<|im_start|>assistant\n")
    end = prompt.index("<|im_end|>", start) + len("<|im_end|>")
    return prompt[start:end]
