"""The five tool definitions sent to the model (byte for byte) and argument validation."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from frognano.agent.tools.common import ToolError, clean_text
from frognano.agent.turns import dumps

__all__ = ["TOOLS_JSON", "TOOL_DEFINITIONS", "TOOL_NAMES", "validate"]

# harness.md section 1.1, byte for byte. Never edit it casually: it is rendered first in every
# prompt, so any change invalidates every cached prefix.
TOOL_DEFINITIONS_TEXT = r"""[
 {"type":"function","function":{"name":"Read","description":"Read a text file from the local filesystem. file_path must be an absolute path. By default reads up to 2000 lines from the start of the file; pass offset and limit only for long files. Lines longer than 2000 characters are truncated. Output is in cat -n format with line numbers starting at 1. Directories cannot be read; use Bash ls.","parameters":{"type":"object","properties":{"file_path":{"type":"string","description":"Absolute path of the file to read"},"offset":{"type":"integer","description":"1-based line number to start reading from. Only provide if the file is too large to read at once"},"limit":{"type":"integer","description":"Number of lines to read. Only provide if the file is too large to read at once"}},"required":["file_path"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"Write","description":"Write a file to the local filesystem, overwriting any existing file. An existing file must be Read first. Prefer Edit for modifying existing files; use Write for new files or complete rewrites.","parameters":{"type":"object","properties":{"file_path":{"type":"string","description":"Absolute path of the file to write"},"content":{"type":"string","description":"Full content to write"}},"required":["file_path","content"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"Edit","description":"Replace an exact string in a file. The file must have been Read first. old_string must match the file exactly (preserve indentation; never include the line-number prefix from Read output) and must be unique unless replace_all is true.","parameters":{"type":"object","properties":{"file_path":{"type":"string","description":"Absolute path of the file to modify"},"old_string":{"type":"string","description":"The exact text to replace"},"new_string":{"type":"string","description":"The replacement text (must differ from old_string)"},"replace_all":{"type":"boolean","description":"Replace every occurrence of old_string (default false)"}},"required":["file_path","old_string","new_string"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"Glob","description":"Find files by glob pattern such as \"**/*.py\" or \"src/**/*.ts\". Returns matching paths sorted by modification time, at most 100.","parameters":{"type":"object","properties":{"pattern":{"type":"string","description":"Glob pattern to match files against"},"path":{"type":"string","description":"Directory to search in. Omit to use the current working directory"}},"required":["pattern"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"Bash","description":"Run a bash command and return its combined stdout/stderr. The working directory persists between calls; environment variables do not. Default timeout 120000 ms, maximum 600000 ms. Output longer than 30000 characters is truncated. Do not run interactive commands.","parameters":{"type":"object","properties":{"command":{"type":"string","description":"The command to execute"},"timeout":{"type":"integer","description":"Optional timeout in milliseconds (max 600000)"},"description":{"type":"string","description":"Short description of what the command does"}},"required":["command"],"additionalProperties":false}}}
]"""  # noqa: E501

TOOL_DEFINITIONS: list[dict[str, Any]] = json.loads(TOOL_DEFINITIONS_TEXT)
TOOLS_JSON: bytes = dumps(TOOL_DEFINITIONS)
"""The `tools` array as sent on every request; built once so its bytes never change."""
TOOL_NAMES: tuple[str, ...] = tuple(tool["function"]["name"] for tool in TOOL_DEFINITIONS)

_SCHEMAS: dict[str, dict[str, Any]] = {
    tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOL_DEFINITIONS
}
# Bounds the schema leaves out (Claude Code's: offset >= 0, limit > 0).
_MINIMUM = {("Read", "offset"): 0, ("Read", "limit"): 1}


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _coerce(kind: str, value: object) -> object:
    """`value` as JSON-schema type `kind`, converting as Claude Code does ("30" -> 30,
    "true" -> True); raise ValueError when it cannot be."""
    if kind == "string" and isinstance(value, str):
        return clean_text(value)
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
    if kind == "integer" and not isinstance(value, bool):
        if isinstance(value, int):
            return value
        number = value
        if isinstance(value, str):
            text = value.strip()
            try:
                return int(text)
            except ValueError:
                try:
                    number = float(text)
                except ValueError:
                    raise ValueError(value) from None
        if isinstance(number, float) and number.is_integer():
            return int(number)
    raise ValueError(value)


def validate(name: str, arguments: str) -> dict[str, Any]:
    """The call's arguments checked against the tool's schema (and coerced), or ToolError."""
    schema = _SCHEMAS[name]
    heading = f"InputValidationError: {name} failed due to the following issue"
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"{heading}:\nThe arguments are not valid JSON ({exc.msg}: line {exc.lineno} "
            f"column {exc.colno}). Pass one JSON object of parameters."
        ) from None
    if isinstance(parsed, str) and parsed.lstrip().startswith("{"):
        # Arguments encoded twice: a JSON string holding the object.
        with contextlib.suppress(json.JSONDecodeError):
            parsed = json.loads(parsed)
    if not isinstance(parsed, dict):
        raise ToolError(
            f"{heading}:\nThe arguments must be a JSON object of parameters, "
            f"got {_json_type(parsed)}"
        )
    properties: dict[str, dict[str, Any]] = schema["properties"]
    issues = [
        f"An unexpected parameter `{key}` was provided" for key in parsed if key not in properties
    ]
    args: dict[str, Any] = {}
    for key, spec in properties.items():
        value = parsed.get(key)
        if value is None:  # null is how the parser renders an omitted optional parameter
            if key in schema["required"]:
                issues.append(f"The required parameter `{key}` is missing")
            continue
        try:
            args[key] = _coerce(spec["type"], value)
        except ValueError:
            shown = (
                f" ({json.dumps(value, ensure_ascii=False)[:80]})" if isinstance(value, str) else ""
            )
            issues.append(
                f"The parameter `{key}` type is expected as `{spec['type']}` but provided as "
                f"`{_json_type(value)}`{shown}"
            )
            continue
        minimum = _MINIMUM.get((name, key))
        if minimum is not None and args[key] < minimum:
            issues.append(f"The parameter `{key}` must be at least {minimum}, got {args[key]}")
    if issues:
        plural = "s" if len(issues) > 1 else ""
        raise ToolError(f"{heading}{plural}:\n" + "\n".join(issues))
    return args
