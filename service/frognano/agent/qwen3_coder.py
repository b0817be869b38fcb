"""Qwen3-Coder tool-call XML and Qwen3 reasoning, parsed as SGLang 0.5.23 parses them."""

# Used when the model server was started without `--tool-call-parser qwen3_coder` (the calls
# arrive as XML inside `content`) or without `--reasoning-parser qwen3` (the reasoning arrives in
# `content`, ended by `</think>`). The tool-call parser is a faithful copy of the non-streaming
# path of SGLang 0.5.23's `Qwen3CoderDetector.detect_and_parse`
# (`sglang/srt/function_call/qwen3_coder_detector.py`, `function_call/utils.py`), quirks included,
# so that both server setups give the loop the same calls:
#
# - Nothing is parsed unless the text contains `<tool_call>`. Closed
#   `<tool_call>…</tool_call>` blocks are parsed; only when there is none (a truncated call)
#   is the whole text searched for `<function=`.
# - A function runs to `</function>` or to the end of the text; a parameter ends at
#   `</parameter>`, the next `<parameter=`, `</function>` or the end of the text, so a cut-off
#   call still parses, with a truncated value. One leading and one trailing `\n` are removed.
# - Values are converted by the parameter's schema type; a failed conversion keeps the string.
#   `null` (any case) becomes None whatever the type. Unknown tools and parameters are returned
#   with string values.
# - The content is the text before the first `<tool_call>`, unstripped (SGLang does not strip
#   it; the chat template trims it when it renders the turn). Text after the calls is dropped.

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["THINK_END", "THINK_START", "TOOL_CALL_START", "parse_tool_calls", "split_reasoning"]

TOOL_CALL_START = "<tool_call>"
FUNCTION_PREFIX = "<function="
THINK_START = "<think>"
THINK_END = "</think>"

_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_FUNCTION = re.compile(r"<function=(.*?)</function>|<function=(.*)$", re.DOTALL)
_PARAMETER = re.compile(
    r"<parameter=(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|$)", re.DOTALL
)

_STRING_TYPES = frozenset({"string", "str", "text", "varchar", "char", "enum"})
_INT_PREFIXES = ("int", "uint", "long", "short", "unsigned")
_BOOL_TYPES = frozenset({"boolean", "bool", "binary"})
_JSON_TYPES = frozenset({"object", "array", "arr"})


def parse_tool_calls(
    text: str, tool_definitions: Iterable[Mapping[str, Any]] | None
) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """Split `text` (the model's answer, after any reasoning) into content and tool calls.

    `tool_definitions` are the OpenAI `tools` entries (`{"type": "function", "function":
    {"name", "parameters"}}`); they only steer type conversion. Returns the text before the
    first `<tool_call>` and the calls as `(name, arguments)` in order. When the text holds no
    `<tool_call>`, returns `(text, [])`. When it holds the marker but no call parses, returns
    `("<text before the marker>", [])`, as SGLang's detector does (SGLang's server then keeps
    the whole text as content; callers wanting that must check for an empty call list).
    """
    if TOOL_CALL_START not in text:
        return text, []
    tools = list(tool_definitions or ())
    blocks: list[str] = _TOOL_CALL.findall(text)
    if not blocks and FUNCTION_PREFIX in text:
        blocks = [text]

    calls: list[tuple[str, dict[str, Any]]] = []
    for block in blocks:
        for closed, open_ended in _FUNCTION.findall(block):
            body: str = closed or open_ended
            if ">" not in body:
                continue
            name_end = body.index(">")
            name = body[:name_end]
            properties = _argument_schemas(name, tools)
            arguments: dict[str, Any] = {}
            for match in _PARAMETER.findall(body[name_end + 1 :]):
                if ">" not in match:
                    continue
                key_end = match.index(">")
                key = match[:key_end]
                value = match[key_end + 1 :]
                if value.startswith("\n"):
                    value = value[1:]
                if value.endswith("\n"):
                    value = value[:-1]
                arguments[key] = _convert(value, key, properties)
            calls.append((name, arguments))

    start = text.find(TOOL_CALL_START)
    return (text[:start] if start > 0 else ""), calls


def split_reasoning(text: str, *, implicit_close: bool = True) -> tuple[str | None, str]:
    """Split raw generated text into (reasoning, rest) like SGLang's `qwen3` reasoning parser.

    For a server started without `--reasoning-parser`, whose `content` still holds the
    reasoning. The generation prompt already ends in `<think>\\n`, so the model normally writes
    only the closing tag; any leading `<think>` tags are removed first.

    - `</think>` present: everything before the first one is reasoning, everything after it
      the rest (both unstripped, as SGLang returns them).
    - no `</think>` but a `<tool_call>` (and `implicit_close`): the tool call closes the
      reasoning implicitly (Qwen3.5 sometimes skips `</think>`); the rest starts at the tag.
    - neither, but the text began with `<think>`: generation stopped inside the reasoning;
      all of it is reasoning and the rest is empty.
    - no markers at all: `(None, text)`. Without a reasoning parser there is no telling
      whether the text is an unfinished thought or an answer given with thinking off, so it is
      left as content, where a reader can see it.
    """
    body = text
    opened = False
    while body.startswith(THINK_START):
        body = body[len(THINK_START) :]
        opened = True
    if THINK_END in body:
        reasoning, rest = body.split(THINK_END, 1)
        return reasoning, rest
    if implicit_close:
        start = body.find(TOOL_CALL_START)
        if start != -1:
            return body[:start], body[start:]
    if opened:
        return body, ""
    return None, text


def _argument_schemas(name: str, tools: list[Mapping[str, Any]]) -> dict[str, Any]:
    """`_get_arguments_config`: the tool's parameter schemas by name, {} for an unknown tool."""
    for tool in tools:
        function = tool.get("function")
        if tool.get("type", "function") != "function" or not isinstance(function, Mapping):
            continue
        if function.get("name") != name:
            continue
        params = function.get("parameters")
        if not isinstance(params, dict):
            return {}
        properties = _schema_properties(params)
        if properties or "properties" in params:
            return properties
        return params
    return {}


def _schema_properties(schema: Any) -> dict[str, Any]:
    """`get_schema_properties`: top-level properties, merged from anyOf/oneOf/allOf branches
    when the top level declares none."""
    if not isinstance(schema, dict):
        return {}
    properties = schema.get("properties")
    if isinstance(properties, dict):
        return properties
    merged: dict[str, Any] = {}
    for keyword in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list):
            for branch in branches:
                for key, value in _schema_properties(branch).items():
                    merged.setdefault(key, value)
    return merged


def _schema_type(schema: Any) -> str:
    inferred = _infer_type(schema)
    return "string" if inferred is None else str(inferred).strip().lower()


def _infer_type(schema: Any) -> str | None:  # noqa: PLR0911, PLR0912
    """`infer_type_from_json_schema`, branch for branch."""
    if not isinstance(schema, dict):
        return None
    if "type" in schema:
        declared = schema["type"]
        if isinstance(declared, str):
            return declared
        if isinstance(declared, list) and declared:
            non_null = [t for t in declared if t != "null"]
            return str(non_null[0]) if non_null else "string"
    if "anyOf" in schema or "oneOf" in schema:
        branches = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(branches, list):
            types = [t for t in (_infer_type(b) for b in branches) if t]
            if types:
                distinct = set(types)
                if len(distinct) == 1:
                    return types[0]
                if len(distinct) == 2 and "null" in types:
                    return next(t for t in types if t != "null")
                if "string" in types:
                    return "string"
                return types[0]
    if "enum" in schema and isinstance(schema["enum"], list):
        if not schema["enum"]:
            return "string"
        kinds = {_json_kind(value) for value in schema["enum"]}
        return kinds.pop() if len(kinds) == 1 else "string"
    if "allOf" in schema and isinstance(schema["allOf"], list):
        for branch in schema["allOf"]:
            inferred = _infer_type(branch)
            if inferred and inferred != "string":
                return inferred
        return "string"
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return None


_JSON_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: bool is an int
    (int, "integer"),
    (float, "number"),
    (list, "array"),
    (dict, "object"),
)


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return next((kind for cls, kind in _JSON_KINDS if isinstance(value, cls)), "string")


def _convert(value: str, key: str, properties: dict[str, Any]) -> Any:  # noqa: PLR0911
    """`_convert_param_value`: the value typed by its schema, the string when that fails."""
    if value.lower() == "null":
        return None
    if key not in properties:
        return value
    kind = _schema_type(properties[key])
    if kind in _STRING_TYPES:
        return value
    if kind.startswith(_INT_PREFIXES):
        try:
            return int(value)
        except ValueError:
            return value
    if kind.startswith(("num", "float")):
        try:
            number = float(value)
        except ValueError:
            return value
        written_as_int = "." not in value and "e" not in value.lower()
        return int(number) if written_as_int and number.is_integer() else number
    if kind in _BOOL_TYPES:
        return value.lower() == "true"
    if kind in _JSON_TYPES or kind.startswith(("dict", "list")):
        try:
            return json.loads(value)
        except ValueError:
            pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            return ast.literal_eval(value)
    except Exception:  # SGLang keeps the string on any failure
        return value
