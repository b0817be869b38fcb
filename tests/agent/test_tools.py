"""ToolBox: the tool definitions, schema validation and coercion, path rules, dispatch."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from frognano.agent.tools import schema
from frognano.agent.tools.box import ToolBox
from frognano.agent.tools.common import ToolError
from frognano.agent.tools.schema import (
    TOOL_DEFINITIONS,
    TOOL_DEFINITIONS_TEXT,
    TOOL_NAMES,
    TOOLS_JSON,
    validate,
)
from frognano.agent.turns import ToolCall, ToolResult, dumps
from frognano.errors import SandboxClosed
from frognano.sandbox.base import ExecResult
from frognano.sandbox.local import LocalSandbox

HARNESS = Path("/work/shared/research/harness.md")
# sha256 of the JSON block of harness.md section 1.1 (without its final newline).
DEFINITIONS_SHA256 = "fb1436a5e5d9a375f3cfed51ed88ffdaebabdd13328d10d56e3c6af54d55736b"


async def call(box: ToolBox, name: str, **arguments: Any) -> ToolResult:
    return await box.call(ToolCall(id="call_1", name=name, arguments=json.dumps(arguments)))


async def raw_call(box: ToolBox, name: str, arguments: str) -> ToolResult:
    return await box.call(ToolCall(id="call_1", name=name, arguments=arguments))


def error(text: str) -> ToolResult:
    return ToolResult(f"<tool_use_error>{text}</tool_use_error>", is_error=True)


class CountingSandbox:
    """A real sandbox that counts the round trips made through it."""

    backend = "local"

    def __init__(self, inner: LocalSandbox) -> None:
        self.inner = inner
        self.trips = 0

    async def exec(self, command: str, **kwargs: Any) -> ExecResult:
        self.trips += 1
        return await self.inner.exec(command, **kwargs)

    async def read_file(self, path: str, **kwargs: Any) -> bytes:
        self.trips += 1
        return await self.inner.read_file(path, **kwargs)

    async def write_file(self, path: str, data: bytes, **kwargs: Any) -> None:
        self.trips += 1
        await self.inner.write_file(path, data, **kwargs)


# --- definitions -------------------------------------------------------------------------


def test_definitions_are_the_harness_json_byte_for_byte() -> None:
    digest = hashlib.sha256(TOOL_DEFINITIONS_TEXT.encode("utf-8")).hexdigest()
    assert digest == DEFINITIONS_SHA256
    assert json.loads(TOOL_DEFINITIONS_TEXT) == TOOL_DEFINITIONS
    assert TOOL_NAMES == ("Read", "Write", "Edit", "Glob", "Bash")
    assert dumps(TOOL_DEFINITIONS) == TOOLS_JSON
    assert TOOLS_JSON.startswith(b'[{"type":"function","function":{"name":"Read","description"')
    assert b"\n" not in TOOLS_JSON
    assert b', "' not in TOOLS_JSON  # compact separators


def test_definitions_match_the_research_note_when_present() -> None:
    if not HARNESS.exists():
        pytest.skip("harness.md is not available on this machine")
    text = HARNESS.read_text(encoding="utf-8")
    block = text.split("### 1.1", 1)[1].split("```json\n", 1)[1].split("\n```", 1)[0]
    assert block == TOOL_DEFINITIONS_TEXT


async def test_tools_json_never_changes(sandbox: LocalSandbox) -> None:
    before = bytes(TOOLS_JSON)
    box = ToolBox(sandbox)
    await call(box, "Read", file_path="/workspace/missing")
    await call(box, "Bash", command="true", timeout="5000")
    await call(box, "Glob", pattern="*")
    assert before == schema.TOOLS_JSON
    assert dumps(TOOL_DEFINITIONS) == before


# --- schema validation (no sandbox involved) ------------------------------------------------


def validation_error(name: str, arguments: str) -> str:
    with pytest.raises(ToolError) as caught:
        validate(name, arguments)
    return str(caught.value)


def test_missing_and_unknown_parameters() -> None:
    assert validation_error("Read", "{}") == (
        "InputValidationError: Read failed due to the following issue:\n"
        "The required parameter `file_path` is missing"
    )
    assert validation_error("Read", '{"file_path": "/workspace/a", "path": "x"}') == (
        "InputValidationError: Read failed due to the following issue:\n"
        "An unexpected parameter `path` was provided"
    )
    assert validation_error("Edit", '{"file_path": "/workspace/a", "old_str": "x"}') == (
        "InputValidationError: Edit failed due to the following issues:\n"
        "An unexpected parameter `old_str` was provided\n"
        "The required parameter `old_string` is missing\n"
        "The required parameter `new_string` is missing"
    )
    assert validation_error("Bash", "") == (
        "InputValidationError: Bash failed due to the following issue:\n"
        "The required parameter `command` is missing"
    )


def test_wrong_types() -> None:
    assert validation_error("Read", '{"file_path": 3}') == (
        "InputValidationError: Read failed due to the following issue:\n"
        "The parameter `file_path` type is expected as `string` but provided as `integer`"
    )
    assert validation_error("Read", '{"file_path": "/workspace/a", "limit": "ten"}') == (
        "InputValidationError: Read failed due to the following issue:\n"
        'The parameter `limit` type is expected as `integer` but provided as `string` ("ten")'
    )
    assert validation_error("Read", '{"file_path": "/workspace/a", "offset": 2.5}') == (
        "InputValidationError: Read failed due to the following issue:\n"
        "The parameter `offset` type is expected as `integer` but provided as `number`"
    )
    assert validation_error("Bash", '{"command": "ls", "timeout": true}') == (
        "InputValidationError: Bash failed due to the following issue:\n"
        "The parameter `timeout` type is expected as `integer` but provided as `boolean`"
    )
    message = validation_error(
        "Edit",
        '{"file_path": "/workspace/a", "old_string": "a", "new_string": "b", "replace_all": 1}',
    )
    assert message.endswith(
        "The parameter `replace_all` type is expected as `boolean` but provided as `integer`"
    )
    message = validation_error("Write", '{"file_path": "/workspace/a", "content": ["x"]}')
    assert message.endswith(
        "The parameter `content` type is expected as `string` but provided as `array`"
    )


def test_bounds() -> None:
    assert validation_error("Read", '{"file_path": "/workspace/a", "offset": -1}').endswith(
        "The parameter `offset` must be at least 0, got -1"
    )
    assert validation_error("Read", '{"file_path": "/workspace/a", "limit": "0"}').endswith(
        "The parameter `limit` must be at least 1, got 0"
    )


def test_invalid_json_arguments() -> None:
    assert validation_error("Bash", '{"command": "ls"') == (
        "InputValidationError: Bash failed due to the following issue:\n"
        "The arguments are not valid JSON (Expecting ',' delimiter: line 1 column 17). "
        "Pass one JSON object of parameters."
    )
    assert validate("Bash", json.dumps(json.dumps({"command": "ls"}))) == {"command": "ls"}
    assert validation_error("Bash", '"ls"') == (
        "InputValidationError: Bash failed due to the following issue:\n"
        "The arguments must be a JSON object of parameters, got string"
    )
    assert validation_error("Bash", '["ls"]') == (
        "InputValidationError: Bash failed due to the following issue:\n"
        "The arguments must be a JSON object of parameters, got array"
    )


def test_coercion_like_claude_code() -> None:
    read = validate("Read", '{"file_path": "/workspace/a", "offset": "30", "limit": " 5 "}')
    assert read == {"file_path": "/workspace/a", "offset": 30, "limit": 5}
    assert validate("Read", '{"file_path": "/w", "limit": 20.0}')["limit"] == 20
    assert validate("Read", '{"file_path": "/w", "limit": "20.0"}')["limit"] == 20
    for text, value in (("true", True), ("false", False), ("True", True), ("FALSE", False)):
        edit = validate(
            "Edit",
            json.dumps(
                {"file_path": "/w", "old_string": "a", "new_string": "b", "replace_all": text}
            ),
        )
        assert edit["replace_all"] is value
    # null is how an omitted optional parameter may arrive; it counts as omitted.
    assert validate("Glob", '{"pattern": "*.py", "path": null}') == {"pattern": "*.py"}
    assert validation_error("Glob", '{"pattern": null}').endswith(
        "The required parameter `pattern` is missing"
    )
    # A lone surrogate (valid JSON, invalid UTF-8) is replaced rather than crashing later.
    assert validate("Bash", '{"command": "echo \\ud800"}')["command"] == "echo ?"


# --- dispatch through ToolBox -------------------------------------------------------------


async def test_unknown_tool_and_validation_errors_are_results(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    assert await call(box, "Grep", pattern="x") == error(
        "Error: No such tool available: Grep. Available tools: Read, Write, Edit, Glob, Bash"
    )
    assert await raw_call(box, "Read", "not json") == error(
        "InputValidationError: Read failed due to the following issue:\n"
        "The arguments are not valid JSON (Expecting value: line 1 column 1). "
        "Pass one JSON object of parameters."
    )
    assert await call(box, "Write", file_path="/workspace/a") == error(
        "InputValidationError: Write failed due to the following issue:\n"
        "The required parameter `content` is missing"
    )


async def test_zero_round_trips_for_errors_one_for_each_tool(sandbox: LocalSandbox) -> None:
    counting = CountingSandbox(sandbox)
    box = ToolBox(counting)  # type: ignore[arg-type]
    await call(box, "Nope")
    await call(box, "Read", file_path="relative.txt")
    await call(box, "Edit", file_path="/workspace/a.txt", old_string="x", new_string="x")
    assert counting.trips == 0
    trips = []
    for name, arguments in (
        ("Write", {"file_path": "/workspace/a.txt", "content": "one\ntwo\n"}),
        ("Read", {"file_path": "/workspace/a.txt"}),
        ("Edit", {"file_path": "/workspace/a.txt", "old_string": "two", "new_string": "2"}),
        ("Write", {"file_path": "/workspace/a.txt", "content": "three\n"}),
        ("Edit", {"file_path": "/workspace/a.txt", "old_string": "three", "new_string": "3"}),
        ("Glob", {"pattern": "*.txt"}),
        ("Bash", {"command": "cd /tmp && echo hi"}),
        ("Read", {"file_path": "/workspace/missing.txt"}),
    ):
        before = counting.trips
        result = await call(box, name, **arguments)
        trips.append(counting.trips - before)
        assert result.is_error == (arguments.get("file_path") == "/workspace/missing.txt")
    assert trips == [1, 1, 1, 1, 1, 1, 1, 1]
    assert await sandbox.read_file("/workspace/a.txt") == b"3\n"


async def test_coerced_arguments_reach_the_tool(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/n.txt", b"a\nb\nc\nd\n")
    result = await call(box, "Read", file_path="/workspace/n.txt", offset="2", limit="2")
    assert result == ToolResult(
        "     2\tb\n     3\tc\n\n(Showing lines 2-3 of 4. Use offset=4 to read more.)"
    )


# --- path rules ------------------------------------------------------------------------------


async def test_paths_must_be_absolute_and_inside_workspace_or_tmp(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    assert await call(box, "Read", file_path="src/app.py") == error(
        "file_path must be an absolute path, got: 'src/app.py'. Did you mean "
        "'/workspace/src/app.py'? (Bash's current working directory is /workspace.)"
    )
    outside = (
        "file_path must be inside /workspace or /tmp (the directories the tools may use), got: {}"
    )
    for path in ("/etc/passwd", "/workspace/../etc/passwd", "/workspacex/a", "/", "/home/sandbox"):
        assert await call(box, "Read", file_path=path) == error(outside.format(path))
        assert await call(box, "Write", file_path=path, content="x") == error(outside.format(path))
    assert await call(
        box, "Edit", file_path="/tmp/../etc/hosts", old_string="", new_string="x"
    ) == (error(outside.format("/tmp/../etc/hosts")))
    assert await call(box, "Read", file_path="/workspace/a\u0000b") == error(
        "file_path must not contain NUL bytes"
    )
    # Normalised paths inside the roots are fine, /tmp included.
    assert await call(box, "Write", file_path="//workspace/./x/../a.txt", content="a") == (
        ToolResult("File created successfully at: /workspace/a.txt")
    )
    assert await call(box, "Write", file_path="/tmp/t.txt", content="t\n") == ToolResult(
        "File created successfully at: /tmp/t.txt"
    )
    assert await call(box, "Read", file_path="/tmp/t.txt") == ToolResult("     1\tt")


async def test_symlinks_resolve_inside_the_sandbox(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.exec("ln -s /etc /workspace/etc-link")
    result = await call(box, "Read", file_path="/workspace/etc-link/passwd")
    assert "sandbox:x:" in result.content  # the sandbox's own passwd
    write = await call(box, "Write", file_path="/workspace/etc-link/planted", content="x")
    assert write.is_error
    assert "Read-only file system" in write.content or "Permission denied" in write.content
    assert not Path("/etc/planted").exists()


async def test_a_dead_sandbox_raises(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.close()
    with pytest.raises(SandboxClosed):
        await call(box, "Bash", command="true")
    with pytest.raises(SandboxClosed):
        await call(box, "Read", file_path="/workspace/a")
    # Mistakes of the model's are still reported without touching the sandbox.
    assert (await call(box, "Read")).is_error
