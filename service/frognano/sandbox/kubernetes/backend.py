"""The Kubernetes backend: one hardened pod per sandbox, every operation over `pods/exec`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shlex
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from kubernetes import client

from frognano.errors import (
    SandboxClosed,
    SandboxError,
    SandboxStartError,
    SandboxUnavailable,
)
from frognano.log import get_logger
from frognano.sandbox.base import RawResult, SandboxBase
from frognano.sandbox.hostpaths import HostPaths
from frognano.sandbox.kubernetes import environment
from frognano.sandbox.kubernetes.api import KubeApi, KubeApiError, connect, creation_error
from frognano.sandbox.kubernetes.exec import (
    ExecOutcome,
    ExecRefused,
    Stdin,
    open_stream,
    run_stream,
)
from frognano.sandbox.kubernetes.pod import CONTAINER, PATH_FIRST, PodOptions, sandbox_pod
from frognano.sandbox.kubernetes.state import pod_state
from frognano.sandbox.options import SandboxLimits, SandboxOptions
from frognano.sandbox.pyenv import PythonEnv

log = get_logger(__name__)

# The in-pod `timeout` fires first; the client gives up this much later, for a pod that
# stopped answering, and then kills the command's process group itself.
CLIENT_GRACE = 15.0
KILL_TIMEOUT = 15.0
_POLL_FIRST = 0.2
_POLL_MAX = 2.0
_SPOOL_IN_MEMORY = 64 * 1024 * 1024
_PIDS = "/tmp/.frognano-exec"  # noqa: S108 - inside the pod

# Runs every command. Input comes through `head -c SIZE`, so it ends at its length even on
# the v4 protocol, where the client cannot send an end-of-file. GNU timeout bounds the whole
# run; SUPERVISE runs the command in a process group of its own, records that group so a
# later exec can kill it, and when the command ends (or timeout's TERM arrives) kills what
# it left in the background: as in a local sandbox, `server &` does not outlive its Bash
# call, and does not hold the exec stream open until the timeout.
WRAPPER = r"""
id=$1 cwd=$2 limit=$3 size=$4 nofile=$5 fsize=$6 cmd=$7
shift 7
umask 022
ulimit -S -H -n "$nofile" -f "$fsize" || exit 125
cd -- "$cwd" || exit 126
if [ "$size" -ge 0 ]; then exec < <(exec head -c "$size"); else exec < /dev/null; fi
exec timeout -k 5 "$limit" /bin/bash --noprofile --norc -c "$SUPERVISE" frognano-run \
  "$id" "$cmd" "$@"
"""
SUPERVISE = r"""
id=$1 cmd=$2
shift 2
run=$(type -P setsid)  # found on the image's PATH: an environment cannot stand in for it
(PATH=${$FIRST:+$$FIRST:}$PATH; unset $FIRST; exec "$run" /bin/bash -c -- "$cmd" bash "$@") <&0 &
pid=$!
{ mkdir -p "$PIDS" && printf '%s' "$pid" > "$PIDS/$id"; } 2>/dev/null
trap 'kill -KILL -- "-$pid" 2>/dev/null; exit 143' TERM
wait "$pid"
rc=$?
kill -KILL -- "-$pid" 2>/dev/null
exit "$rc"
""".replace("$PIDS", _PIDS).replace("$FIRST", PATH_FIRST)
WRAPPER = WRAPPER.replace('"$SUPERVISE"', shlex.quote(SUPERVISE))
KILL = f"""p=$(cat "{_PIDS}/$1" 2>/dev/null) && kill -KILL -- "-$p" 2>/dev/null; exit 0"""
_BASH = ["/bin/bash", "--noprofile", "--norc", "-c"]


def _delete_now(configuration: client.Configuration, namespace: str, name: str) -> None:
    # Last resort when a sandbox is garbage-collected or the interpreter exits unclosed.
    with contextlib.suppress(Exception):
        api = client.CoreV1Api(client.ApiClient(configuration))
        api.delete_namespaced_pod(name, namespace, grace_period_seconds=0, _request_timeout=10)


def _spool(fd: int) -> tempfile.SpooledTemporaryFile[bytes]:
    """Read a pipe to its end into a spooled file; exec needs the input's length up front."""
    # Closed by _spawn once streamed.
    spool: tempfile.SpooledTemporaryFile[bytes] = tempfile.SpooledTemporaryFile(  # noqa: SIM115
        max_size=_SPOOL_IN_MEMORY
    )
    while chunk := os.read(fd, 1024 * 1024):
        spool.write(chunk)
    spool.seek(0)
    return spool


class KubernetesSandbox(SandboxBase):
    """A pod in the sandbox namespace (no network, no token, non-root, read-only root) that
    lives as long as this object; commands run in it through the API server's exec."""

    backend: ClassVar[str] = "kubernetes"

    def __init__(
        self, api: KubeApi, pod: dict[str, object], options: PodOptions, limits: SandboxLimits
    ) -> None:
        metadata = pod.get("metadata")
        if not isinstance(metadata, dict):
            raise SandboxStartError("the API server returned a pod without metadata")
        self.namespace = str(metadata["namespace"])
        self.name = str(metadata["name"])
        self.mechanism = f"pod {self.namespace}/{self.name}"
        self.options = options
        self._api = api
        self._limits = limits
        self._closed = False
        self.client_grace = CLIENT_GRACE
        self.kill_timeout = KILL_TIMEOUT
        self._finalizer = weakref.finalize(
            self, _delete_now, api.configuration, self.namespace, self.name
        )

    @classmethod
    async def create(cls, options: SandboxOptions) -> KubernetesSandbox:
        """Create the pod and wait until it runs a first command; raise SandboxError if not."""
        if options.egress is not None:
            # A Unix socket on this host (the local build's proxy): a pod cannot reach it.
            raise SandboxUnavailable("a pod cannot use a local egress proxy; see index_urls")
        wanted = await environment.pod_options_for(options)
        api = await connect(options.kubeconfig)
        manifest = sandbox_pod(wanted)
        try:
            pod = await api.create_pod(wanted.namespace, manifest)
        except KubeApiError as exc:
            api.close()
            raise creation_error(exc, wanted.namespace) from None
        sandbox = cls(api, pod, wanted, options.limits)
        log.info("sandbox.pod_created", pod=sandbox.name, namespace=sandbox.namespace)
        try:
            if wanted.environment == "filled" and options.environment is not None:
                await environment.fill(
                    api, sandbox.namespace, sandbox.name, options.environment,
                    wanted.start_timeout,
                )  # fmt: skip
            await sandbox._wait_ready(wanted.start_timeout)
            probe = await sandbox.exec("true", timeout=60)
        except BaseException:
            await sandbox.close()
            raise
        if not probe.ok:
            await sandbox.close()
            raise SandboxStartError(
                f"the sandbox pod {sandbox.name} could not run a first command "
                f"(exit {probe.exit_code}): {probe.output.strip()[:500]}; check that the image "
                f"{wanted.image} has bash, GNU coreutils (timeout, head), setsid and tar"
            )
        return sandbox

    async def export_environment(self, dest: Path, *, max_bytes: int, timeout: float) -> None:
        """Copy this build pod's ENVIRONMENT into the empty host folder `dest`."""
        await environment.download(
            self._api, self.namespace, self.name, dest, max_bytes=max_bytes, timeout=timeout
        )

    @property
    def python_env(self) -> PythonEnv | None:
        """None: the pod's image brings its own Python; nothing of this host is mounted."""
        return None

    @property
    def host_paths(self) -> HostPaths | None:
        """None: a pod shows no folder of this host."""
        return None

    @property
    def api_server(self) -> str:
        """The URL of the API server this sandbox is driven through."""
        return str(self._api.configuration.host)

    async def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        waiting = "Pending"
        # Quick at first (a pulled image starts in about a second), then every 2 s.
        poll = _POLL_FIRST
        while True:
            try:
                pod = await self._api.read_pod(self.namespace, self.name)
            except KubeApiError as exc:
                if exc.status == 404:
                    raise SandboxStartError(
                        f"the sandbox pod {self.name} was deleted before it started"
                    ) from None
                raise
            state = pod_state(pod)
            if state.ready:
                return
            if state.failure:
                raise SandboxStartError(
                    f"the sandbox pod {self.name} cannot start: {state.failure}"
                )
            waiting = state.waiting
            if time.monotonic() >= deadline:
                raise SandboxStartError(
                    f"the sandbox pod {self.name} was not ready after {timeout:g}s ({waiting}); "
                    "check the namespace's quota and events (kubectl -n "
                    f"{self.namespace} describe pod {self.name})"
                )
            await asyncio.sleep(poll)
            poll = min(poll * 2, _POLL_MAX)

    async def _why_gone(self) -> str | None:
        """Why the pod can no longer run commands, or None while it still can."""
        try:
            pod = await self._api.read_pod(self.namespace, self.name)
        except KubeApiError as exc:
            if exc.status == 404:
                return "the pod was deleted"
            return None  # the API server is unwell, not necessarily the pod
        state = pod_state(pod)
        return state.failure if not state.ready else None

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
        data: Stdin | None = None
        if isinstance(stdin, bytes):
            data = Stdin(stdin, len(stdin))
        elif isinstance(stdin, int):
            spool = await asyncio.to_thread(_spool, stdin)
            data = Stdin(spool, spool.seek(0, os.SEEK_END))
            spool.seek(0)
        exec_id = secrets.token_hex(8)
        limits = self._limits
        argv = [
            *_BASH, WRAPPER, "frognano-exec", exec_id, cwd, f"{timeout:g}",
            str(data.size if data else -1), str(limits.open_files),
            str(max(1, limits.file_size_bytes // 1024)), script, *args,
        ]  # fmt: skip
        started = time.monotonic()
        cancel = threading.Event()
        work = asyncio.ensure_future(
            asyncio.to_thread(
                self._exec_blocking, argv, data, started + timeout + self.client_grace,
                output_limit, split, cancel,
            )
        )  # fmt: skip
        try:
            outcome = await asyncio.shield(work)
        except asyncio.CancelledError:
            # Cancelled (job cancel, Ctrl-C): stop streaming and kill what the command started.
            cancel.set()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(work, self.client_grace)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._kill(exec_id)), self.kill_timeout)
            raise
        finally:
            if data is not None and not isinstance(data.data, bytes):
                data.data.close()
        return await self._result(outcome, exec_id, timeout, started)

    def _exec_blocking(  # noqa: PLR0917 - one call site, run through asyncio.to_thread
        self,
        argv: list[str],
        data: Stdin | None,
        deadline: float,
        output_limit: int,
        split: bool,
        cancel: threading.Event,
    ) -> ExecOutcome | ExecRefused:
        try:
            ws = open_stream(
                self._api.configuration, self.namespace, self.name, CONTAINER, argv,
                stdin=data is not None,
            )  # fmt: skip
        except ExecRefused as exc:
            return exc
        return run_stream(
            ws, stdin=data, deadline=deadline, output_limit=output_limit, split=split,
            cancel=cancel,
        )  # fmt: skip

    async def _result(
        self, outcome: ExecOutcome | ExecRefused, exec_id: str, timeout: float, started: float
    ) -> RawResult:
        if isinstance(outcome, ExecRefused):
            gone = await self._why_gone()
            if gone:
                raise SandboxError(f"the sandbox pod {self.name} is gone: {gone}")
            hint = ""
            if outcome.status == 403:
                hint = "; the worker's Role needs pods/exec with both create and get"
            raise SandboxError(
                f"the API server refused to run a command in the sandbox pod {self.name} "
                f"({outcome}){hint}"
            )
        duration = time.monotonic() - started
        output = outcome.merged.getvalue()
        code = outcome.exit_code
        timed_out = False
        if outcome.deadline_hit:
            # The pod did not end the command itself: kill its process group from outside.
            await self._kill(exec_id)
            timed_out, code = True, None
        elif outcome.status is None:
            gone = await self._why_gone()
            if gone:
                raise SandboxError(f"the sandbox pod {self.name} is gone: {gone}")
            log.warning("sandbox.exec_dropped", pod=self.name)
            output += (
                b"\n[frognano: the connection to the sandbox pod dropped while the command "
                b"ran; its outcome is unknown]\n"
            )
        elif code is None:
            message = str(outcome.status.get("message") or outcome.status)
            gone = await self._why_gone()
            raise SandboxError(
                f"the sandbox pod {self.name} could not run a command: {gone or message}"
            )
        elif code in (124, 137) and duration >= timeout:
            # GNU timeout's own statuses, once the limit has passed: the command was killed.
            timed_out, code = True, None
        return RawResult(
            exit_code=code,
            output=output,
            duration=duration,
            timed_out=timed_out,
            truncated=outcome.merged.truncated,
            stdout=None if outcome.stdout is None else outcome.stdout.getvalue(),
            stderr=None if outcome.stderr is None else outcome.stderr.getvalue(),
        )

    async def _kill(self, exec_id: str) -> None:
        """Kill one command's process group through a second exec (best effort)."""
        argv = [*_BASH, KILL, "frognano-kill", exec_id]

        def kill() -> None:
            try:
                ws = open_stream(
                    self._api.configuration, self.namespace, self.name, CONTAINER, argv,
                    stdin=False,
                )  # fmt: skip
            except ExecRefused:
                return
            run_stream(
                ws, stdin=None, deadline=time.monotonic() + self.kill_timeout, output_limit=4096,
                split=False, cancel=threading.Event(),
            )  # fmt: skip

        await asyncio.to_thread(kill)

    async def close(self) -> None:
        """Delete the pod at once; the reaper removes it later if the API server is away."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._api.delete_pod(self.namespace, self.name)
            self._finalizer.detach()
            log.info("sandbox.pod_deleted", pod=self.name, namespace=self.namespace)
        except KubeApiError as exc:
            log.warning("sandbox.pod_delete_failed", pod=self.name, error=str(exc))
        finally:
            self._api.close()
