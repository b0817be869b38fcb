"""Built environments in pods: filled through an init container, or built and copied back."""

# This worker keeps the environments (run/environment/cache.py). A pod that uses one gets an
# emptyDir at ENVIRONMENT that the sandbox container mounts read-only; its init container
# (another uid) waits while FrogNano streams the cached folder in through exec, then exits, so
# the sandbox never holds a writable copy and every pod starts from the cache's. A build pod
# mounts the emptyDir writable; once its install commands succeed, FrogNano streams it back
# (`tar` in the pod) and unpacks it here with the checks an untrusted archive needs: it is
# whatever the repository's build code left there.

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import socket
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from kubernetes import client
from kubernetes.stream.ws_client import ERROR_CHANNEL, STDERR_CHANNEL, STDOUT_CHANNEL

from frognano.errors import EnvironmentBuildError, SandboxError, SandboxStartError
from frognano.sandbox.kubernetes.api import KubeApi
from frognano.sandbox.kubernetes.exec import (
    ExecRefused,
    Stdin,
    exit_code,
    open_stream,
    run_stream,
)
from frognano.sandbox.kubernetes.pod import CONTAINER, FILLED, FILLER, PodOptions, pod_options
from frognano.sandbox.kubernetes.state import FATAL_WAITING, pod_state
from frognano.sandbox.options import SandboxOptions
from frognano.sandbox.paths import ENVIRONMENT

_POLL = 0.2
_CHUNK = 64 * 1024
_TRAILING_MAX = 16 * 1024 * 1024
_ERR_LIMIT = 64 * 1024
_BASH = ["/bin/bash", "--noprofile", "--norc", "-c"]
# Runs in the init container, as its uid: unpack what FrogNano sends (exactly SIZE bytes, so
# that the v4 protocol, which has no end-of-file, works too) with umask's modes, not the
# archive's owners.
_FILL = f"""
set -o pipefail
umask 022
head -c "$1" | tar -x --no-same-owner --no-same-permissions --no-overwrite-dir -C {ENVIRONMENT} -f -
"""
_MARK = f": > {FILLED}"
# Runs in the build pod once its install commands succeeded; the image's PATH, not the
# environment's (the wrapper alone puts ENVIRONMENT/bin first).
_PACK = f"cd {ENVIRONMENT} && exec tar -c -f - --numeric-owner ."


async def pod_options_for(options: SandboxOptions) -> PodOptions:
    """The pod for `options`; for an environment build, with the index's host names resolved
    here into hostAliases, because the pod has no DNS (SandboxStartError naming a host that
    does not resolve)."""
    if options.environment is None or not options.environment_writable:
        return pod_options(options)
    return pod_options(options, await host_aliases(options.index_urls))


async def host_aliases(urls: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(IP, host names) for each host name of `urls` (IP literals need none), as this worker
    resolves them now: the build pod's /etc/hosts."""
    names: dict[str, list[str]] = {}
    loop = asyncio.get_running_loop()
    for url in urls:
        host = (urlsplit(url).hostname or "").lower()
        if not host:
            continue
        with contextlib.suppress(ValueError):
            ipaddress.ip_address(host)
            continue
        try:
            found = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise SandboxStartError(
                f"the package index host {host} does not resolve on the worker ({exc}); the "
                "environment build pod has no DNS of its own and reaches the index by the "
                "addresses the worker finds"
            ) from None
        for _family, _, _, _, address in found:
            ip = str(address[0])
            if host not in names.setdefault(ip, []):
                names[ip].append(host)
    return tuple((ip, tuple(hosts)) for ip, hosts in names.items())


async def fill(api: KubeApi, namespace: str, name: str, folder: Path, timeout: float) -> None:
    """Stream `folder` into a starting pod's ENVIRONMENT through its init container, then tell
    the init container to end; SandboxError when the pod cannot take it."""
    deadline = time.monotonic() + timeout
    await _wait_for_filler(api, namespace, name, deadline)
    archive, size = await asyncio.to_thread(pack_folder, folder)
    try:
        argv = [*_BASH, _FILL, "frognano-fill", str(size)]
        outcome = await asyncio.to_thread(
            _exec, api.configuration, namespace, name, argv, Stdin(archive, size), deadline
        )
    finally:
        archive.close()
    if outcome[0] != 0:
        raise SandboxStartError(
            f"could not put the environment into the sandbox pod {name} (exit {outcome[0]}): "
            f"{outcome[1].strip()[:500]}; the image needs bash, head and GNU tar"
        )
    # The init container ends as soon as it sees the mark, maybe before this exec reports:
    # its status is not needed, the pod's readiness says whether the fill was taken.
    with contextlib.suppress(SandboxError):
        await asyncio.to_thread(
            _exec, api.configuration, namespace, name, [*_BASH, _MARK], None, deadline
        )


async def _wait_for_filler(api: KubeApi, namespace: str, name: str, deadline: float) -> None:
    while True:
        pod = await api.read_pod(namespace, name)
        state = pod_state(pod)
        if state.failure:
            raise SandboxStartError(f"the sandbox pod {name} cannot start: {state.failure}")
        for status in (pod.get("status") or {}).get("initContainerStatuses") or []:
            if status.get("name") != FILLER:
                continue
            current = status.get("state") or {}
            if current.get("running"):
                return
            reason = (current.get("waiting") or {}).get("reason")
            if reason in FATAL_WAITING or current.get("terminated"):
                why = FATAL_WAITING.get(reason or "", "its init container ended")
                raise SandboxStartError(
                    f"the sandbox pod {name} cannot receive its environment: {why} ({current})"
                )
        if time.monotonic() >= deadline:
            raise SandboxStartError(
                f"the init container of the sandbox pod {name} did not start in time "
                f"({state.waiting}); check kubectl -n {namespace} describe pod {name}"
            )
        await asyncio.sleep(_POLL)


def _exec(  # noqa: PLR0917 - called positionally through asyncio.to_thread
    configuration: client.Configuration,
    namespace: str,
    name: str,
    argv: list[str],
    stdin: Stdin | None,
    deadline: float,
) -> tuple[int | None, str]:
    """(exit status, output) of one command in the init container."""
    try:
        ws = open_stream(configuration, namespace, name, FILLER, argv, stdin=stdin is not None)
    except ExecRefused as exc:
        raise SandboxStartError(f"the API server refused the fill of pod {name}: {exc}") from None
    outcome = run_stream(
        ws, stdin=stdin, deadline=deadline, output_limit=_ERR_LIMIT, split=False,
        cancel=threading.Event(),
    )  # fmt: skip
    return outcome.exit_code, outcome.merged.getvalue().decode("utf-8", "replace")


def pack_folder(folder: Path) -> tuple[IO[bytes], int]:
    """A tar of what is in `folder` (not the folder itself: the emptyDir's root belongs to
    root), owned by nobody in particular, modes 0755 or 0644; symlinks kept as links."""
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the caller
    try:
        with tarfile.open(fileobj=spool, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for child in sorted(folder.iterdir()):
                tar.add(child, arcname=child.name, recursive=True, filter=_normal)
        size = spool.tell()
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool, size


def _normal(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        return None  # a socket or a FIFO a build left: nothing a Python environment needs
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    if not member.issym():
        member.mode = 0o755 if member.isdir() or member.mode & 0o100 else 0o644
    return member


async def download(
    api: KubeApi, namespace: str, name: str, dest: Path, *, max_bytes: int, timeout: float
) -> None:
    """Unpack the build pod's ENVIRONMENT into the empty folder `dest`; EnvironmentBuildError
    when the pod's archive is refused (a path out of `dest`, a device, over `max_bytes`)."""
    deadline = time.monotonic() + timeout
    code, errors = await asyncio.to_thread(
        _download_blocking, api.configuration, namespace, name, dest, max_bytes, deadline
    )
    if code != 0:
        raise EnvironmentBuildError(
            f"could not copy the built environment out of the pod {name} (exit {code}): "
            f"{errors.strip()[:500]}"
        )


def _download_blocking(  # noqa: PLR0917 - called positionally through asyncio.to_thread
    configuration: client.Configuration,
    namespace: str,
    name: str,
    dest: Path,
    max_bytes: int,
    deadline: float,
) -> tuple[int | None, str]:
    try:
        ws = open_stream(configuration, namespace, name, CONTAINER, [*_BASH, _PACK], stdin=False)
    except ExecRefused as exc:
        raise SandboxError(f"the API server refused the download from pod {name}: {exc}") from None
    read_fd, write_fd = os.pipe()
    failed: list[BaseException] = []
    worker = threading.Thread(
        target=_unpack_from, args=(read_fd, dest, max_bytes, failed), daemon=True
    )
    worker.start()
    status, errors = bytearray(), bytearray()
    sink = os.fdopen(write_fd, "wb")

    def drain() -> None:
        # Reading an empty channel reads more frames (into any channel): so once more after
        # the stream closed, or the last of the archive is lost.
        sink.write(ws.read_channel(STDOUT_CHANNEL))
        errors.extend(ws.read_channel(STDERR_CHANNEL)[: _ERR_LIMIT - len(errors)])
        status.extend(ws.read_channel(ERROR_CHANNEL))
        # The client also keeps everything in one buffer of its own; not needed here.
        with contextlib.suppress(AttributeError, ValueError):
            ws._all.seek(0)  # type: ignore[attr-defined]
            ws._all.truncate()  # type: ignore[attr-defined]

    try:
        ws.sock.settimeout(max(1.0, deadline - time.monotonic()))
        while ws.is_open() and time.monotonic() < deadline:
            ws.update(timeout=_POLL)
            drain()
        drain()
    except BrokenPipeError:
        pass  # the unpacking stopped: its error says why
    finally:
        with contextlib.suppress(OSError):
            sink.close()
        # As run_stream: close() skips a socket whose peer closed first; shutdown() does not.
        with contextlib.suppress(Exception):
            ws.close(timeout=1)
        with contextlib.suppress(Exception):
            ws.sock.shutdown()
        worker.join()
    if failed and isinstance(failed[0], EnvironmentBuildError):
        raise failed[0]  # refused here: what the pod says of the broken pipe is beside it
    said = errors.decode("utf-8", "replace")
    if not status:
        return None, f"the pod did not say how the copy ended (timed out or dropped) {said}"
    parsed: Any = json.loads(bytes(status))
    code = exit_code(parsed if isinstance(parsed, dict) else None)
    if failed and code == 0:
        raise EnvironmentBuildError(f"the built environment could not be unpacked: {failed[0]}")
    return code, said


def _unpack_from(read_fd: int, dest: Path, max_bytes: int, failed: list[BaseException]) -> None:
    """The unpacking thread of a download: its error, if any, goes into `failed`."""
    try:
        with os.fdopen(read_fd, "rb") as source:
            unpack_untrusted(source, dest, max_bytes)
            # tar pads its archive past the end marker that tarfile stops at: read the rest
            # (a little), or the stream would break before the pod's status arrives.
            trailing = 0
            while trailing <= _TRAILING_MAX and (chunk := source.read(_CHUNK)):
                trailing += len(chunk)
    except BaseException as exc:
        failed.append(exc)


def unpack_untrusted(source: IO[bytes], dest: Path, max_bytes: int) -> None:
    """Unpack a tar stream into `dest` refusing what could reach out of it: `..` names,
    writes through links, hard links out of it, devices and FIFOs (an absolute name lands
    inside, as tarfile's data filter makes it relative); setuid bits and
    group and other write bits dropped; past `max_bytes` of file data, refused. Symbolic
    links are kept whatever they point at (a virtual environment's python points at the
    image's interpreter): they are created, never followed here."""
    total = 0
    root = os.path.realpath(dest)
    with tarfile.open(fileobj=source, mode="r|") as tar:
        for member in tar:
            if member.isfile():
                total += member.size
                if total > max_bytes:
                    raise EnvironmentBuildError(
                        f"the built environment is larger than {max_bytes / 2**20:.0f} MiB "
                        "(FROGNANO_ENVIRONMENT_CACHE_MAX_BYTES); it was not kept"
                    )
            tar.extract(member, root, filter=lambda m, path: _checked(m, root))


def _checked(member: tarfile.TarInfo, root: str) -> tarfile.TarInfo:
    if member.issym():
        parent = os.path.realpath(os.path.join(root, os.path.dirname(member.name)))
        base = os.path.basename(member.name.rstrip("/"))
        if (
            os.path.isabs(member.name)
            or os.path.commonpath([root, parent]) != root
            or base in ("", ".", "..")
        ):
            raise EnvironmentBuildError(
                f"the built environment holds a link outside it: {member.name!r}"
            )
        return member.replace(uid=None, gid=None, uname=None, gname=None, deep=False)  # type: ignore[arg-type]
    try:
        kept = tarfile.data_filter(member, root)
    except tarfile.FilterError as exc:
        raise EnvironmentBuildError(
            f"the built environment holds an entry FrogNano does not unpack: {exc}"
        ) from None
    if kept.isdir() or kept.isfile():
        mode = 0o755 if kept.isdir() or (kept.mode or 0) & 0o100 else 0o644
        kept = kept.replace(mode=mode, deep=False)
    return kept
