"""The local backend: Linux namespaces on this host, for laptops, CI and researchers."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import resource
import secrets
import signal
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from frognano.errors import SandboxClosed, SandboxStartError
from frognano.log import get_logger
from frognano.sandbox.base import RawResult, SandboxBase
from frognano.sandbox.cgroup import MemoryCgroup, create_memory_cgroup
from frognano.sandbox.holder import UnshareLauncher
from frognano.sandbox.isolation import (
    HOST_UID_RANGE,
    INNER_UID,
    LAUNCH_ENV,
    Layout,
    choose_mechanism,
    groups_problem,
)
from frognano.sandbox.keyring import join_fresh_session_keyring
from frognano.sandbox.layout import kept_groups, make_layout, remove_tree, warn_groups
from frognano.sandbox.options import SandboxLimits, SandboxOptions
from frognano.sandbox.output import HeadTail
from frognano.sandbox.pyenv import PythonEnv, resolve_python_env
from frognano.sandbox.seccomp import filter_program
from frognano.sandbox.userns import UsernsLauncher

log = get_logger(__name__)

# After a kill, how long to wait for the pipes to close before giving up on the rest.
KILL_GRACE = 5.0
_CHUNK = 64 * 1024


def _clamp(value: int, which: int) -> int:
    """A limit no higher than the hard limit this process has (lowering is always allowed)."""
    _, hard = resource.getrlimit(which)
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def _finalize(base: Path, holder_pids: list[int], cgroups: list[MemoryCgroup]) -> None:
    # Last resort when a sandbox is garbage-collected or the interpreter exits unclosed.
    for pid in holder_pids:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        remove_tree(base)
    for cgroup in cgroups:
        cgroup.remove()


class LocalSandbox(SandboxBase):
    """Each command runs in fresh pid, network, IPC and UTS namespaces over a per-sandbox
    root filesystem: system directories read-only, a private /workspace, /tmp and home, and
    the chosen Python environment read-only. No process outlives the command that started it.
    """

    backend: ClassVar[str] = "local"

    def __init__(
        self,
        layout: Layout,
        launcher: UsernsLauncher | UnshareLauncher,
        limits: SandboxLimits,
        python_env: PythonEnv,
        host_uid: int | None,
    ) -> None:
        self.layout = layout
        self.mechanism = launcher.name
        self.python_env = python_env
        self.host_paths = python_env.host_paths()
        """The host folders commands see at their own paths (the Python environment's)."""
        self.host_uid = host_uid
        """The host uid commands run as when root launched them (None: the invoking user)."""
        self.kept_groups = (
            kept_groups()
            if isinstance(launcher, UsernsLauncher) and not launcher.clear_groups
            else ()
        )
        """Supplementary host groups commands keep: an ordinary user's sandbox drops them only
        where newgidmap and subordinate gids let its user namespace call setgroups (userns.py);
        otherwise files those groups may read are readable inside. Root clears them."""
        self._launcher = launcher
        self._limits = limits
        self._closed = False
        self._running: set[asyncio.subprocess.Process] = set()
        self._holder_pids: list[int] = []
        self._cgroups: list[MemoryCgroup] = []
        self._finalizer = weakref.finalize(
            self, _finalize, layout.base, self._holder_pids, self._cgroups
        )

    @property
    def memory_cgroup(self) -> MemoryCgroup | None:
        """The cgroup capping the whole sandbox's memory, where one could be made."""
        return self._cgroups[0] if self._cgroups else None

    @classmethod
    async def create(cls, options: SandboxOptions) -> LocalSandbox:
        """Build a sandbox with an empty /workspace; raise SandboxError if that is impossible."""
        mechanism = await asyncio.to_thread(choose_mechanism, options.local_mechanism)
        python_env = resolve_python_env(options.python_env, options.repo_venv)
        # Root hands each sandbox a fresh unprivileged host uid; anyone else runs it as self.
        host_uid: int | None = None
        if os.geteuid() == 0:
            span = HOST_UID_RANGE[1] - HOST_UID_RANGE[0]
            host_uid = HOST_UID_RANGE[0] + secrets.randbelow(span)
        inner_uid = host_uid if mechanism == "unshare" and host_uid is not None else INNER_UID
        program = await asyncio.to_thread(filter_program)
        layout = await asyncio.to_thread(
            functools.partial(
                make_layout,
                python_env,
                inner_uid,
                host_uid,
                options.tool_files,
                program,
                environment=options.environment,
                environment_writable=options.environment_writable,
                egress=options.egress,
            )
        )
        limits = options.limits
        launcher: UsernsLauncher | UnshareLauncher
        try:
            if host_uid is not None:
                launcher = UnshareLauncher(
                    layout,
                    host_uid,
                    limits.disk_bytes,
                    limits.shm_bytes,
                    inner_uid=inner_uid,
                    name=mechanism,
                )
            else:
                groups = kept_groups()
                clear = bool(groups) and await asyncio.to_thread(groups_problem) is None
                launcher = UsernsLauncher(
                    layout, limits.disk_bytes, limits.shm_bytes, clear_groups=clear
                )
            sandbox = cls(layout, launcher, options.limits, python_env, host_uid)
        except BaseException:
            await asyncio.to_thread(remove_tree, layout.base)
            raise
        cgroup = await asyncio.to_thread(create_memory_cgroup, limits.memory_bytes)
        if cgroup is not None:
            sandbox._cgroups.append(cgroup)
        try:
            await launcher.start()
            if launcher.holder_pid is not None:
                sandbox._holder_pids.append(launcher.holder_pid)
            # One trivial command proves the whole chain works before anyone relies on it.
            probe = await sandbox.exec("true", timeout=60)
        except BaseException:
            await sandbox.close()
            raise
        if not probe.ok:
            await sandbox.close()
            raise SandboxStartError(f"the sandbox's first command failed: {probe.output}")
        if sandbox.kept_groups:
            warn_groups(sandbox.kept_groups, groups_problem() or "unknown")
        log.debug(
            "sandbox.created",
            mechanism=mechanism,
            base=str(layout.base),
            python_env=str(python_env.prefix),
        )
        return sandbox

    def _limit_args(self) -> list[str]:
        limits = self._limits
        return [
            str(_clamp(limits.processes, resource.RLIMIT_NPROC)),
            str(_clamp(limits.open_files, resource.RLIMIT_NOFILE)),
            str(max(1, _clamp(limits.file_size_bytes, resource.RLIMIT_FSIZE) // 1024)),
            str(max(1, _clamp(limits.memory_bytes, resource.RLIMIT_AS) // 1024)),
        ]

    async def _spawn(
        self,
        script: str,
        args: Sequence[str],
        *,
        cwd: str,
        timeout: float,
        stdin: bytes | int | None,
        output_limit: int,
        split: bool,
    ) -> RawResult:
        if self._closed:
            raise SandboxClosed("the sandbox is closed")
        status_read, status_write = os.pipe()
        os.set_blocking(status_read, False)
        seccomp_fd = os.open(self.layout.seccomp, os.O_RDONLY | os.O_CLOEXEC)
        argv = self._launcher.argv(
            [str(status_write), *self._limit_args(), cwd, script, *args], seccomp_fd
        )
        if self._cgroups:
            argv = self._cgroups[0].launcher_prefix() + argv
        feed = stdin if isinstance(stdin, bytes) else None
        stdin_arg: int = (
            asyncio.subprocess.DEVNULL
            if stdin is None
            else asyncio.subprocess.PIPE
            if feed is not None
            else int(stdin)
        )
        started = time.monotonic()
        # The launcher inherits this thread's session keyring: a new, empty one every time.
        join_fresh_session_keyring()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=stdin_arg,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE if split else asyncio.subprocess.STDOUT,
                env=LAUNCH_ENV,
                pass_fds=(status_write, seccomp_fd),
                start_new_session=True,
                cwd="/",
            )
        except OSError as exc:
            os.close(status_read)
            raise SandboxStartError(f"could not launch the sandbox ({argv[0]}): {exc}") from exc
        finally:
            os.close(status_write)
            os.close(seccomp_fd)
        self._running.add(proc)
        if self._closed:
            self._kill(proc)  # close() ran while this command was being launched
        try:
            raw = await self._collect(
                proc,
                feed,
                timeout=timeout,
                output_limit=output_limit,
                split=split,
                started=started,
            )
        finally:
            self._running.discard(proc)
            try:
                marker = os.read(status_read, 64)
            except BlockingIOError:
                marker = b""
            os.close(status_read)
        if not marker.startswith(b"started"):
            if self._closed:
                raise SandboxClosed("the sandbox was closed while a command was starting")
            detail = raw.output.decode("utf-8", "replace").strip()
            if raw.timed_out:
                detail = f"it did not start within {timeout:g}s"
            raise SandboxStartError(f"the sandbox failed to start a command: {detail}")
        return raw

    async def _collect(
        self,
        proc: asyncio.subprocess.Process,
        feed: bytes | None,
        *,
        timeout: float,
        output_limit: int,
        split: bool,
        started: float,
    ) -> RawResult:
        merged = HeadTail(output_limit)
        out = HeadTail(output_limit) if split else None
        err = HeadTail(output_limit) if split else None

        async def pump(stream: asyncio.StreamReader | None, own: HeadTail | None) -> None:
            if stream is None:
                return
            while chunk := await stream.read(_CHUNK):
                merged.write(chunk)
                if own is not None:
                    own.write(chunk)

        async def feed_stdin() -> None:
            if proc.stdin is None:
                return
            # A command that exits without reading its input is not an error.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                if feed:
                    proc.stdin.write(feed)
                    await proc.stdin.drain()
                proc.stdin.close()
                await proc.stdin.wait_closed()

        tasks = [
            asyncio.create_task(pump(proc.stdout, out)),
            asyncio.create_task(feed_stdin()),
            asyncio.create_task(proc.wait()),
        ]
        if split:
            tasks.append(asyncio.create_task(pump(proc.stderr, err)))
        timed_out = False
        try:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
            if pending:
                timed_out = True
                self._kill(proc)
                _, pending = await asyncio.wait(pending, timeout=KILL_GRACE)
                for task in pending:
                    task.cancel()
                if pending:
                    log.warning("sandbox.kill_incomplete", pid=proc.pid)
        except BaseException:
            # Cancelled (Ctrl-C, job cancel): nothing the command started may survive.
            self._kill(proc)
            for task in tasks:
                task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(proc.wait()), KILL_GRACE)
            raise
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise SandboxStartError(f"lost contact with the sandbox: {task.exception()}")
        code = proc.returncode
        if timed_out:
            code = None
        elif code is not None and code < 0:
            code = 128 - code  # the launcher itself died of a signal (OOM killer, for one)
        return RawResult(
            exit_code=code,
            output=merged.getvalue(),
            duration=time.monotonic() - started,
            timed_out=timed_out,
            truncated=merged.truncated,
            stdout=None if out is None else out.getvalue(),
            stderr=None if err is None else err.getvalue(),
        )

    def _kill(self, proc: asyncio.subprocess.Process) -> None:
        # The launcher and the namespace's pid 1 share a process group; pid 1 dying takes
        # every process of the namespace with it, setsid escapees and daemons included.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    async def close(self) -> None:
        """Kill everything still running, release the namespaces and delete the host files."""
        if self._closed:
            return
        self._closed = True
        running = list(self._running)
        for proc in running:
            self._kill(proc)
        if running:
            # Their exit releases the held namespace; until then its mount points keep the
            # host folders busy and the removal below would fail half-way.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(*(proc.wait() for proc in running)), KILL_GRACE
                )
        await self._launcher.stop()
        await asyncio.to_thread(remove_tree, self.layout.base)
        for cgroup in self._cgroups:
            await asyncio.to_thread(cgroup.remove)
        self._finalizer.detach()
        log.debug("sandbox.closed", base=str(self.layout.base))
