"""Bash: output shaping, exit codes, timeouts, and the working directory that persists."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from frognano.agent.tools.bash import (
    EMPTY_OUTPUT,
    cap_output,
    clamp_timeout,
    clean_output,
    format_duration,
)
from frognano.agent.tools.box import ToolBox
from frognano.agent.turns import ToolCall, ToolResult
from frognano.sandbox.local import LocalSandbox

TRUNCATION = re.compile(r"\n\n\.\.\. \[(\d+) characters truncated\] \.\.\.\n\n")


async def call(box: ToolBox, name: str, **arguments: Any) -> ToolResult:
    return await box.call(ToolCall(id="call_1", name=name, arguments=json.dumps(arguments)))


async def bash(box: ToolBox, command: str, **arguments: Any) -> str:
    result = await call(box, "Bash", command=command, **arguments)
    assert not result.is_error
    return result.content


def split_truncated(text: str) -> tuple[str, int, str]:
    match = TRUNCATION.search(text)
    assert match is not None, text[:200]
    return text[: match.start()], int(match.group(1)), text[match.end() :]


async def test_output_exit_code_and_empty_output(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    assert await bash(box, "echo out; echo err >&2; echo  ", description="two lines") == (
        "out\nerr"
    )
    assert await bash(box, "echo partial; exit 3") == "partial\nExit code 3"
    assert await bash(box, "false") == "Exit code 1"
    assert await bash(box, "true") == EMPTY_OUTPUT
    assert EMPTY_OUTPUT == "Your command ran successfully and did not produce any output."
    assert await bash(box, "printf '\\n\\n  indented\\n\\n'") == "  indented"
    assert await bash(box, "cat; echo $?") == "0"  # stdin is /dev/null: no hang
    assert await bash(box, "echo $PAGER $GIT_PAGER") == "cat cat"
    syntax = await bash(box, 'echo "unclosed')
    assert syntax.endswith("Exit code 2")
    assert "unexpected EOF" in syntax


async def test_ansi_codes_and_carriage_returns(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    colored = r"printf '\033[1;31mred\033[0m plain \033]0;title\007done\n'"
    assert await bash(box, colored) == "red plain done"
    assert await bash(box, r"printf 'progress 10%%\rprogress 100%%\r\nnext\n'") == (
        "progress 100%\nnext"
    )


async def test_working_directory_persists(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    assert box.cwd == "/workspace"
    assert await bash(box, "mkdir -p sub/deeper && cd sub") == EMPTY_OUTPUT
    assert box.cwd == "/workspace/sub"
    assert await bash(box, "pwd") == "/workspace/sub"
    assert await bash(box, "cd deeper && exit 3") == "Exit code 3"
    assert box.cwd == "/workspace/sub/deeper"
    assert await bash(box, "cd /tmp; false") == "Exit code 1"
    assert await bash(box, "pwd") == "/tmp"
    failed = await bash(box, "cd /workspace/nope")
    assert failed.endswith("No such file or directory\nExit code 1")
    assert box.cwd == "/tmp"
    # Shell state other than the directory does not persist.
    assert await bash(box, "export X=1; Y=2") == EMPTY_OUTPUT
    assert await bash(box, "echo ${X:-unset} ${Y:-unset}") == "unset unset"
    # A directory that disappears sends the next command to /workspace.
    await bash(box, "mkdir /workspace/gone && cd /workspace/gone")
    await sandbox.exec("rmdir /workspace/gone")
    assert await bash(box, "pwd") == "/workspace"
    assert box.cwd == "/workspace"


async def test_the_cwd_report_never_shows(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    marker = box._bash._marker
    output = await bash(box, "printf 'no newline at end'")
    assert output == "no newline at end"
    assert marker not in await bash(box, "cd /tmp && echo x && exit 0")
    # A command that silences the report keeps the previous directory.
    assert await bash(box, "cd /workspace && cd /tmp && exec >/dev/null") == EMPTY_OUTPUT
    assert box.cwd == "/tmp"


async def test_timeout(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    assert await bash(box, "echo started; sleep 5", timeout=1000) == (
        "started\nCommand timed out after 1s"
    )
    # A 1 ms timeout acts as 1,000 ms; the directory of a killed command is not kept.
    assert await bash(box, "cd /tmp && sleep 5", timeout="1") == "Command timed out after 1s"
    assert box.cwd == "/workspace"


def test_timeout_clamping_and_duration() -> None:
    assert clamp_timeout(None) == 120_000
    assert clamp_timeout(1) == 1_000
    assert clamp_timeout(-5) == 1_000
    assert clamp_timeout(30_000) == 30_000
    assert clamp_timeout(10**9) == 600_000
    assert format_duration(1_000) == "1s"
    assert format_duration(1_500) == "1.5s"
    assert format_duration(90_000) == "1m 30s"
    assert format_duration(120_000) == "2m"
    assert format_duration(600_000) == "10m"


async def test_output_capped_keeping_head_and_tail(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    expected = "\n".join(str(n) for n in range(1, 20_001))
    assert len(expected) > 30_000
    output = await bash(box, "seq 1 20000; exit 4")
    body, exit_line = output.rsplit("\n", 1)
    assert exit_line == "Exit code 4"
    head, dropped, tail = split_truncated(body)
    assert len(head) + len(tail) <= 30_000
    assert len(head) > 13_000
    assert len(tail) > 13_000
    assert expected.startswith(head + "\n")  # cut at a line boundary
    assert expected.endswith("\n" + tail)
    assert dropped == len(expected) - len(head) - len(tail)


async def test_huge_output_is_bounded_in_the_sandbox_too(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    expected = "\n".join(str(n) for n in range(1, 300_001))
    output = await bash(box, "seq 1 300000")
    head, dropped, tail = split_truncated(output)
    assert len(head) + len(tail) <= 30_000
    assert expected.startswith(head + "\n")
    assert expected.endswith("\n" + tail)
    assert dropped == len(expected) - len(head) - len(tail)
    assert box.cwd == "/workspace"  # the report at the very end survived the sandbox's cap
    await bash(box, "cd /tmp; seq 1 300000")
    assert box.cwd == "/tmp"


def test_cap_output_exact() -> None:
    assert cap_output("short") == "short"
    text = "a" * 20 + "\n" + "b" * 20
    assert cap_output(text, limit=20) == "a" * 10 + "\n\n... [21 characters truncated] ...\n\n" + (
        "b" * 10
    )
    lines = "\n".join(f"{n:04}" for n in range(100))  # 499 characters, lines of 5
    capped = cap_output(lines, limit=100)
    head, dropped, tail = split_truncated(capped)
    assert head == "\n".join(f"{n:04}" for n in range(10))  # whole lines only
    assert tail == "\n".join(f"{n:04}" for n in range(90, 100))
    assert dropped == len(lines) - len(head) - len(tail)
    assert cap_output("h" * 5, "t" * 5, dropped=7) == (
        "hhhhh\n\n... [7 characters truncated] ...\n\nttttt"
    )
    assert clean_output("\n\n\x1b[32mok\x1b[0m  \n\n") == "ok"


async def test_command_rules(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    too_long = await bash(box, "echo " + "x" * 130_000)
    assert too_long.startswith("frognano: the command is ")
    assert too_long.endswith("Write long scripts to a file first and run that.\nExit code 126")
    nul = await call(box, "Bash", command="echo a\u0000b")
    assert nul == ToolResult(
        "<tool_use_error>command must not contain NUL bytes</tool_use_error>", is_error=True
    )
    heredoc = await bash(box, "cat <<'EOF'\n$HOME 'quoted' \"double\"\nEOF")
    assert heredoc == "$HOME 'quoted' \"double\""


@pytest.mark.parametrize("timeout", ["soon", 1.5, [1000]])
async def test_bad_timeouts_are_validation_errors(sandbox: LocalSandbox, timeout: object) -> None:
    box = ToolBox(sandbox)
    result = await call(box, "Bash", command="true", timeout=timeout)
    assert result.is_error
    assert result.content.startswith(
        "<tool_use_error>InputValidationError: Bash failed due to the following issue:\n"
        "The parameter `timeout` type is expected as `integer` but provided as "
    )
