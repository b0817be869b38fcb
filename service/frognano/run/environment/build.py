"""Building one environment: a sandbox whose only way out is FrogNano's proxy to the index."""

from __future__ import annotations

import base64
import dataclasses
import os
import re
import stat
import tempfile
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from frognano.errors import EnvironmentBuildError
from frognano.run.environment.detect import GENERATED
from frognano.sandbox.base import Sandbox
from frognano.sandbox.egress import EgressProxy, destinations_for, relay_source
from frognano.sandbox.options import SandboxOptions
from frognano.sandbox.paths import EGRESS, ENVIRONMENT, TOOLS, WORKSPACE
from frognano.sandbox.tree import FileSpec

RELAY_FILE = "egress_relay.py"
SOCKET_NAME = "proxy.sock"
# The relay's port inside the build sandbox: every command has a network namespace of its own,
# so this port is always free there.
RELAY_PORT = 3128
OUTPUT_BYTES = 256 * 1024
TAIL_LINES = 40

# What every install command runs with: the index URL (with the token, if any) from stdin,
# never on a command line or in the sandbox's environment; pip and uv read no configuration
# file (the host's /etc is visible in a local sandbox, the image's in a pod).
_INDEX = rf"""
if [ -n "$FROGNANO_TRUSTED" ]; then
  export PIP_TRUSTED_HOST=$FROGNANO_TRUSTED UV_INSECURE_HOST=$FROGNANO_TRUSTED
fi
export PIP_INDEX_URL=$FROGNANO_INDEX UV_INDEX_URL=$FROGNANO_INDEX UV_DEFAULT_INDEX=$FROGNANO_INDEX
export PIP_CONFIG_FILE=/dev/null UV_NO_CONFIG=1 PIP_NO_INPUT=1 PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_PROGRESS_BAR=off PIP_ROOT_USER_ACTION=ignore
unset FROGNANO_INDEX FROGNANO_TRUSTED
cd {WORKSPACE}
"""
# Local: the sandbox's network namespace has only `lo`; the network is reached only through
# the relay to FrogNano's proxy.
_PROLOGUE = (
    rf"""
set -u
IFS= read -r FROGNANO_INDEX || true
IFS= read -r FROGNANO_TRUSTED || FROGNANO_TRUSTED=""
exec 3< <(exec python3 {TOOLS}/{RELAY_FILE} {RELAY_PORT} {EGRESS}/{SOCKET_NAME} 2>&1)
IFS= read -r frognano_ready <&3 || frognano_ready=""
case $frognano_ready in
  "ready "*) ;;
  *) echo "frognano: the way to the package index did not open: $frognano_ready" >&2; exit 125 ;;
esac
proxy=http://127.0.0.1:{RELAY_PORT}
export HTTP_PROXY=$proxy HTTPS_PROXY=$proxy http_proxy=$proxy https_proxy=$proxy
export NO_PROXY= no_proxy= ALL_PROXY= all_proxy=
unset proxy frognano_ready"""
    + _INDEX
)
# Kubernetes: the pod connects to the index itself, by the addresses the worker put in its
# /etc/hosts; the cluster's NetworkPolicy decides what else it can reach (nothing).
_POD_PROLOGUE = (
    """
set -u
IFS= read -r FROGNANO_INDEX || true
IFS= read -r FROGNANO_TRUSTED || FROGNANO_TRUSTED=\"\"
"""
    + _INDEX
)
# On Kubernetes the cluster's network drops what the policy does not allow without telling
# anyone: an install that hangs or fails on connecting elsewhere is the only sign.
POD_UNSEEN = (
    "\n(On Kubernetes FrogNano cannot see what an install tried to reach besides the index: "
    "the cluster's NetworkPolicy drops such connections silently.)"
)

_PACKAGE = re.compile(
    r"(?:No matching distribution found for|Could not find a version that satisfies the "
    r"requirement|Failed to build|Failed building wheel for|Because) (\S+)"
)


@dataclass(frozen=True)
class InstallStep:
    """One install command as it ran."""

    command: str
    seconds: float
    exit_code: int | None


@dataclass(frozen=True)
class BuildRequest:
    """What a build needs: the repository, the commands and the way out."""

    repo_dir: Path
    exclude: Sequence[str]
    commands: Sequence[str]
    files: Sequence[tuple[str, bytes]]
    """Files FrogNano generated for the commands, put in GENERATED first."""
    index_url: str
    extra_urls: Sequence[str]
    token: str | None
    timeout: float
    backend: str = "local"
    """The sandboxes' backend: a local build goes out through FrogNano's proxy, a pod by
    the cluster's network (hostAliases and a NetworkPolicy)."""
    max_bytes: int = 1 << 40
    """The most a pod's environment may come to when it is copied back (the cache's size)."""


@runtime_checkable
class ExportsEnvironment(Protocol):
    """A sandbox whose writable ENVIRONMENT is not a host folder (a pod): it hands it back."""

    async def export_environment(self, dest: Path, *, max_bytes: int, timeout: float) -> None: ...


def trusted_hosts(urls: Sequence[str]) -> str:
    """`host:port` of each approved `http` URL, space-separated: pip (and uv) refuse a plain
    HTTP index on any host but localhost unless told to trust it, and the admin's policy
    approving the URL is that word (an in-cluster index is usually plain HTTP)."""
    hosts: dict[str, None] = {}
    for url in urls:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "http" and parts.hostname:
            host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
            hosts[f"{host}:{parts.port}" if parts.port else host] = None
    return " ".join(hosts)


def index_with_token(url: str, token: str | None) -> str:
    """The index URL pip is given: with `__token__:TOKEN@` when there is a token."""
    if not token:
        return url
    parts = urllib.parse.urlsplit(url)
    secret = urllib.parse.quote(token, safe="")
    return parts._replace(netloc=f"__token__:{secret}@{parts.netloc}").geturl()


@dataclass
class BuildLog:
    """What a build did: its commands, and what it tried to reach besides the index."""

    steps: list[InstallStep] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """`host:port (how)` of each connection the proxy refused: not an approved host."""


async def build_into(
    staging: Path,
    request: BuildRequest,
    options: SandboxOptions,
    create: Callable[[SandboxOptions], Awaitable[Sandbox]],
    log: BuildLog,
) -> None:
    """Create a virtual environment at ENVIRONMENT and run the install commands there, noting
    each in `log`, so that `staging` ends up holding it (bound there in a local sandbox, copied
    back from a pod); EnvironmentBuildError with the log's tail on the first failure."""
    if request.backend == "local":
        await _build_locally(staging, request, options, create, log)
    else:
        build_options = dataclasses.replace(
            options.for_purpose("environment"),
            environment=staging,
            environment_writable=True,
            index_urls=(request.index_url, *request.extra_urls),
        )
        async with await create(build_options) as box:
            await _run_commands(box, request, log, None)
            if not isinstance(box, ExportsEnvironment):
                raise EnvironmentBuildError(
                    f"the {request.backend} sandbox cannot hand back a built environment"
                )
            await box.export_environment(
                staging, max_bytes=request.max_bytes, timeout=request.timeout
            )
    if request.token:
        leaked = find_token(staging, request.token)
        if leaked is not None:
            raise EnvironmentBuildError(
                f"the index token was written into the environment ({leaked}); it is not used, "
                "because the agent's and verification sandboxes would see it. Something the "
                "install ran copied it: check the repository's build code"
            )


async def _build_locally(
    staging: Path,
    request: BuildRequest,
    options: SandboxOptions,
    create: Callable[[SandboxOptions], Awaitable[Sandbox]],
    log: BuildLog,
) -> None:
    # In /tmp, whatever TMPDIR says: a Unix socket's path must fit in 107 bytes, and a sandbox
    # of another uid must be able to reach it (its parent folders searchable by anyone).
    egress = Path(tempfile.mkdtemp(prefix="fn-egress-", dir="/tmp"))
    try:
        # A root-launched sandbox runs as another uid, which must reach the socket.
        os.chmod(egress, 0o755)  # noqa: S103 - the folder holds nothing but that socket
        allowed = destinations_for([request.index_url, *request.extra_urls])
        async with EgressProxy(egress / SOCKET_NAME, allowed) as proxy:
            build_options = dataclasses.replace(
                options.for_purpose("environment"),
                environment=staging,
                environment_writable=True,
                egress=egress,
                tool_files=(*options.tool_files, (RELAY_FILE, relay_source())),
            )
            try:
                async with await create(build_options) as box:
                    await _run_commands(box, request, log, proxy)
            finally:
                log.refused += [f"{a.host}:{a.port} ({a.what})" for a in proxy.refused]
    finally:
        _remove_egress(egress)


async def _run_commands(
    box: Sandbox, request: BuildRequest, log: BuildLog, proxy: EgressProxy | None
) -> None:
    await box.upload_tree(request.repo_dir, exclude=request.exclude)
    generated = [FileSpec(name, data) for name, data in request.files]
    await box.upload_files(generated, GENERATED)
    log.steps.append(await _create_venv(box))
    secret = index_with_token(request.index_url, request.token).encode() + b"\n"
    secret += trusted_hosts([request.index_url, *request.extra_urls]).encode() + b"\n"
    for command in request.commands:
        log.steps.append(await _install(box, command, secret, request.timeout, proxy))


async def _create_venv(box: Sandbox) -> InstallStep:
    command = f"python3 -m venv {ENVIRONMENT}"
    # The base interpreter's own command: it runs before the environment exists.
    result = await box.exec(command, cwd=WORKSPACE, timeout=600, output_limit=OUTPUT_BYTES)
    if not result.ok:
        raise EnvironmentBuildError(
            f"could not create the virtual environment (`{command}` exited "
            f"{result.exit_code}):\n{_tail(result.output)}"
        )
    return InstallStep(command, result.duration, result.exit_code)


async def _install(
    box: Sandbox, command: str, secret: bytes, timeout: float, proxy: EgressProxy | None
) -> InstallStep:
    result = await box.exec(
        (_POD_PROLOGUE if proxy is None else _PROLOGUE) + command + "\n",
        cwd=WORKSPACE,
        timeout=timeout,
        stdin=secret,
        output_limit=OUTPUT_BYTES,
    )
    if result.ok:
        return InstallStep(command, result.duration, result.exit_code)
    status = f"timed out after {timeout:g} s" if result.timed_out else f"exited {result.exit_code}"
    found = _PACKAGE.findall(result.output)
    package = f" (it names {found[-1].strip('.,:')})" if found else ""
    refused = POD_UNSEEN if proxy is None else _attempts(proxy)
    raise EnvironmentBuildError(
        f"the install command `{command}` {status}{package}.{refused}\n"
        f"The last lines of its output:\n{_tail(result.output)}"
    )


def _attempts(proxy: EgressProxy) -> str:
    refused = "".join(
        f"\nIt tried to reach {attempt.host}:{attempt.port}, which is not an approved package "
        "index host (policy environment.index_url and environment.extra_urls)."
        for attempt in proxy.refused
    )
    # An approved host that did not answer is the admins' to fix (a wrong URL, an index down).
    unreachable = {(a.host, a.port): a.detail for a in proxy.failed}
    return refused + "".join(
        f"\nThe approved host {host}:{port} did not answer ({detail}): check "
        "environment.index_url and that the index is running."
        for (host, port), detail in unreachable.items()
    )


def _tail(output: str) -> str:
    return "\n".join(output.rstrip().splitlines()[-TAIL_LINES:])


def _remove_egress(folder: Path) -> None:
    for child in folder.iterdir():
        child.unlink(missing_ok=True)
    folder.rmdir()


def find_token(root: Path, token: str) -> Path | None:
    """The first regular file under `root` holding the token as is, base64 or URL-quoted, or a
    symlink whose target does. A build that hides it otherwise (encrypted, split) is not found:
    docs/sandbox-image.md says so. Only regular files are opened: a FIFO the build left would
    block the read for ever."""
    raw = token.encode()
    needles = [raw, base64.b64encode(raw), urllib.parse.quote(token, safe="").encode()]
    overlap = max(len(needle) for needle in needles) - 1
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            try:
                info = path.lstat()
                if stat.S_ISLNK(info.st_mode):
                    data = os.fsencode(os.readlink(path))
                    if any(needle in data for needle in needles):
                        return path.relative_to(root)
                elif stat.S_ISREG(info.st_mode) and _holds(path, needles, overlap):
                    return path.relative_to(root)
            except OSError:
                continue
    return None


def _holds(path: Path, needles: Sequence[bytes], overlap: int) -> bool:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        tail = b""
        while chunk := handle.read(1 << 20):
            window = tail + chunk
            if any(needle in window for needle in needles):
                return True
            tail = window[-overlap:] if overlap else b""
    return False
