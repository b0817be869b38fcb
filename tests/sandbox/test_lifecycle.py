"""Creation, cleanup on close, on errors, on cancellation and on Ctrl-C; a sandbox that dies."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from frognano.errors import SandboxClosed, SandboxError
from frognano.sandbox import create_sandbox
from frognano.sandbox.layout import BASE_PREFIX
from frognano.sandbox.local import LocalSandbox
from tests.conftest import options_for, processes_with, wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]


def _marker() -> str:
    return f"{secrets.randbelow(10**6) + 10**6}.{secrets.randbelow(900) + 100}"


def _sandbox_dir(line: str) -> Path:
    """The sandbox directory a child printed, checked before a test relies on (or deletes) it."""
    path = Path(line.strip())
    assert path.is_absolute(), line
    assert path.parent == Path(tempfile.gettempdir()), line
    assert path.name.startswith(BASE_PREFIX), line
    return path


@contextlib.contextmanager
def _start(script: Path) -> Iterator[subprocess.Popen[str]]:
    """Run `script` with this interpreter; killed and reaped on the way out, whatever happens."""
    with subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "service")},
    ) as proc:
        try:
            yield proc
        finally:
            proc.kill()


def _victim(tmp_path: Path, mechanism: str, marker: str, *, handle_signals: bool) -> Path:
    """A small real program that opens a sandbox and runs a long command in it."""
    python_env = "Path('/usr')" if mechanism == "bwrap" and os.geteuid() == 0 else "None"
    script = tmp_path / "victim.py"
    script.write_text(
        textwrap.dedent(f"""
        import asyncio, signal, sys
        from pathlib import Path
        from frognano.sandbox import SandboxOptions, create_sandbox

        async def main():
            if {handle_signals!r}:
                task = asyncio.current_task()
                asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
            opts = SandboxOptions(local_mechanism={mechanism!r}, python_env={python_env})
            async with await create_sandbox("local", opts) as box:
                print(box.layout.base, flush=True)
                await box.exec("setsid sleep {marker} </dev/null >/dev/null 2>&1 & "
                               "sleep {marker}", timeout=600)

        try:
            asyncio.run(main())
        except (KeyboardInterrupt, asyncio.CancelledError):
            sys.exit(130)
    """)
    )
    return script


async def test_close_removes_everything(mechanism: str) -> None:
    box = await create_sandbox("local", options_for(mechanism))
    assert isinstance(box, LocalSandbox)
    base = box.layout.base
    marker = _marker()
    running = asyncio.create_task(box.exec(f"sleep {marker}", timeout=60))
    assert await asyncio.to_thread(wait_until, lambda: bool(processes_with(f"sleep {marker}")))
    await box.close()
    result = await running  # the command in flight ends, it does not hang
    assert result.exit_code != 0 or result.timed_out
    assert not base.exists()
    assert wait_until(lambda: not processes_with(f"sleep {marker}"))
    await box.close()  # closing twice is harmless
    with pytest.raises(SandboxClosed):
        await box.exec("true")


async def test_exception_inside_block_cleans_up(mechanism: str) -> None:
    bases: list[Path] = []

    async def fail_inside() -> None:
        async with await create_sandbox("local", options_for(mechanism)) as box:
            assert isinstance(box, LocalSandbox)
            bases.append(box.layout.base)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await fail_inside()
    assert len(bases) == 1
    assert not bases[0].exists()


async def test_cancelled_command_leaves_nothing(sandbox: LocalSandbox) -> None:
    marker = _marker()
    task = asyncio.create_task(
        sandbox.exec(
            f"setsid sleep {marker} </dev/null >/dev/null 2>&1 & sleep {marker}", timeout=60
        )
    )
    assert await asyncio.to_thread(wait_until, lambda: len(processes_with(f"sleep {marker}")) >= 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_until(lambda: not processes_with(f"sleep {marker}"))
    assert (await sandbox.exec("echo still usable")).ok


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_program_cleans_up(mechanism: str, tmp_path: Path, sig: signal.Signals) -> None:
    """A real program using a sandbox, stopped with Ctrl-C or SIGTERM by its user."""
    marker = _marker()
    with _start(_victim(tmp_path, mechanism, marker, handle_signals=True)) as proc:
        assert proc.stdout is not None
        base = _sandbox_dir(proc.stdout.readline())
        assert base.exists()
        assert wait_until(lambda: len(processes_with(f"sleep {marker}")) >= 2)
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 130
    assert not base.exists()
    assert wait_until(lambda: not processes_with(f"sleep {marker}"))


def test_killed_owner_takes_sandbox_processes_along(mechanism: str, tmp_path: Path) -> None:
    """SIGKILL gives no chance to clean up; the sandbox's processes must still die with it."""
    marker = _marker()
    with _start(_victim(tmp_path, mechanism, marker, handle_signals=False)) as proc:
        assert proc.stdout is not None
        base = _sandbox_dir(proc.stdout.readline())
        try:
            assert wait_until(lambda: len(processes_with(f"sleep {marker}")) >= 2)
            proc.kill()
            proc.wait(timeout=30)
            assert wait_until(lambda: not processes_with(f"sleep {marker}"))
        finally:
            # A SIGKILLed owner cannot delete its directory; nothing can run at SIGKILL.
            shutil.rmtree(base, ignore_errors=True)


async def test_sandbox_that_dies_raises(sandbox: LocalSandbox) -> None:
    # The local forms of a pod being evicted: the namespace holder (unshare) is killed, or the
    # host directory the sandbox is built from (bwrap) disappears.
    holder = getattr(sandbox._launcher, "holder_pid", None)
    if holder is not None:
        os.kill(holder, signal.SIGKILL)
        assert wait_until(lambda: not Path(f"/proc/{holder}/ns").exists())
    else:
        shutil.rmtree(sandbox.layout.workspace)
    with pytest.raises(SandboxError, match="failed to start a command"):
        await sandbox.exec("true")
    with pytest.raises(SandboxError):
        await sandbox.read_file("/workspace/x")
