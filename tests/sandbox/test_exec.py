"""exec semantics: status, output order, stdin, working directory, stderr, signals."""

from __future__ import annotations

import asyncio

import pytest

from frognano.sandbox.base import MAX_COMMAND_BYTES
from frognano.sandbox.local import LocalSandbox


async def test_exit_status_and_output_order(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec("echo one; echo two >&2; echo three; exit 3")
    assert result.exit_code == 3
    assert not result.ok
    assert result.output == "one\ntwo\nthree\n"
    assert result.stderr is None
    assert result.duration > 0


async def test_split_stderr(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec("echo out; echo err >&2", split_stderr=True)
    assert result.ok
    assert result.stderr == "err\n"
    assert sorted(result.output.splitlines()) == ["err", "out"]


async def test_stdin_bytes(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec("wc -c", stdin=b"x" * 300_000)
    assert result.output.strip() == "300000"
    ignored = await sandbox.exec("true", stdin=b"y" * 1_000_000)  # never read: not an error
    assert ignored.ok
    none = await sandbox.exec("cat")  # no stdin: end of file at once, no hang
    assert none.ok
    assert none.output == ""


async def test_working_directory(sandbox: LocalSandbox) -> None:
    assert (await sandbox.exec("pwd")).output == "/workspace\n"
    await sandbox.exec("mkdir -p /workspace/sub")
    assert (await sandbox.exec("pwd", cwd="/workspace/sub")).output == "/workspace/sub\n"
    missing = await sandbox.exec("pwd", cwd="/workspace/nope")
    assert missing.exit_code == 126
    assert "No such file or directory" in missing.output


async def test_killed_by_signal_and_crash_are_results(sandbox: LocalSandbox) -> None:
    killed = await sandbox.exec("kill -9 $$")
    assert killed.exit_code == 137
    assert killed.output == ""  # no job-control chatter from the sandbox's init
    segv = await sandbox.exec(
        "python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'"
    )
    assert segv.exit_code == 139


async def test_files_persist_between_commands_processes_do_not(sandbox: LocalSandbox) -> None:
    await sandbox.exec("echo kept > /tmp/state; echo kept > ~/state; cd /tmp")
    result = await sandbox.exec("cat /tmp/state ~/state; pwd")
    assert result.output == "kept\nkept\n/workspace\n"


async def test_non_utf8_output_is_replaced(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec("printf 'ok \\377\\376 end\\n'")
    assert result.output == "ok \ufffd\ufffd end\n"


async def test_overlong_command_is_a_result(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec("echo " + "x" * (MAX_COMMAND_BYTES + 1))
    assert result.exit_code == 126
    assert "limit" in result.output


async def test_bad_arguments_raise(sandbox: LocalSandbox) -> None:
    with pytest.raises(ValueError, match="timeout"):
        await sandbox.exec("true", timeout=0)
    with pytest.raises(ValueError, match="absolute"):
        await sandbox.exec("true", cwd="relative")


async def test_concurrent_commands(sandbox: LocalSandbox) -> None:
    results = await asyncio.gather(*(sandbox.exec(f"sleep 0.2; echo {i}") for i in range(8)))
    assert [r.output for r in results] == [f"{i}\n" for i in range(8)]


async def test_command_starting_with_dash(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec("-x")
    assert result.exit_code == 127
    assert "-x: command not found" in result.output
