"""A fake Kubernetes API server for tests: pods endpoints and pods/exec, each pod a LocalSandbox."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import ipaddress
import itertools
import json
import logging
import os
import re
import secrets
import shutil
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import kubernetes_validate  # type: ignore[import-untyped]
import uvicorn
import yaml
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from frognano.errors import SandboxClosed, SandboxError
from frognano.sandbox.base import RawResult
from frognano.sandbox.egress import Destination, EgressProxy, relay_source
from frognano.sandbox.isolation import choose_mechanism
from frognano.sandbox.local import LocalSandbox
from frognano.sandbox.options import SandboxOptions
from frognano.sandbox.paths import EGRESS, ENVIRONMENT, TOOLS

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
STDIN, STDOUT, STDERR, STATUS, CLOSE = 0, 1, 2, 3, 255
FRAME = 16 * 1024
"""Largest payload of an output frame: small, so that every large output spans many frames."""
EXEC_TIMEOUT = 3600.0
EXEC_OUTPUT_LIMIT = 256 * 1024 * 1024
KUBERNETES_VERSION = "1.33"
TOKEN = "fake-token"
# The alphabet the API server draws generateName suffixes from (no vowels, no 0/1/3).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

ExecFault = Literal[None, "drop", "stall"]

# The pod network of a pod the NetworkPolicy lets out (see FakeKube): each exec'd command gets
# a relay to the fake's allowlisting proxy and the proxy variables that lead to it.
RELAY_FILE = "fake_pod_network.py"
RELAY_SOCKET = "network.sock"
POD_NETWORK = rf"""
exec 3< <(exec python3 {TOOLS}/{RELAY_FILE} 0 {EGRESS}/{RELAY_SOCKET} 2>&1)
IFS= read -r fake_ready <&3 || fake_ready=""
case $fake_ready in
  "ready "*) ;;
  *) echo "fake kube: the pod network did not start: $fake_ready" >&2; exit 125 ;;
esac
fake_proxy=http://127.0.0.1:${{fake_ready#ready }}
export HTTP_PROXY=$fake_proxy HTTPS_PROXY=$fake_proxy http_proxy=$fake_proxy https_proxy=$fake_proxy
unset fake_ready fake_proxy
"""
PURPOSE = "frognano.dev/purpose"

# The uvicorn transport of the WebSocket being served, so that a "drop" fault can cut the TCP
# connection without the close handshake Starlette would otherwise send.
_TRANSPORT: ContextVar[asyncio.BaseTransport | None] = ContextVar("_TRANSPORT", default=None)


@dataclass
class ExecRecord:
    """One pods/exec connection that the fake accepted."""

    namespace: str
    pod: str
    container: str
    argv: list[str]
    subprotocol: str
    stdin_closed: bool = False
    """True once the client sent the v5 close frame for stdin ([255, 0])."""
    client_gone: bool = False
    """True when the client went away before the command ended."""
    exit_code: int | None = None
    """The command's exit status once it ended; None before, or when it had none."""
    finished: threading.Event = field(default_factory=threading.Event, repr=False)
    """Set when the command ended (the fake may still be sending its output)."""
    _received: bytearray = field(default_factory=bytearray, repr=False)

    @property
    def stdin(self) -> bytes:
        """Every stdin byte the client sent."""
        return bytes(self._received)


class _PodTable(dict[tuple[str, str], dict[str, Any]]):
    """The stored pods. Iterating gives a snapshot, because tests read the table while the
    server's thread adds and removes pods."""

    def _snapshot(self) -> dict[tuple[str, str], dict[str, Any]]:
        # Built in C from the items view, so no other thread runs while it is copied.
        return dict(dict.items(self))

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._snapshot())

    def keys(self) -> Any:
        return self._snapshot().keys()

    def values(self) -> Any:
        return self._snapshot().values()

    def items(self) -> Any:
        return self._snapshot().items()


@dataclass
class _Runtime:
    """What backs one pod: its sandbox, once started."""

    sandbox: LocalSandbox | None = None
    booting: asyncio.Task[None] | None = None
    init: tuple[str, LocalSandbox] | None = None
    """The init container running now, by name, and its sandbox."""
    volumes: dict[str, Path] = field(default_factory=dict)
    """emptyDir volumes by name: a host folder each, deleted with the pod."""
    network: tuple[EgressProxy, Path] | None = None
    """The pod network of a pod the NetworkPolicy lets out: the proxy and its folder."""
    scripted: bool = False
    """A test set the status; a sandbox that comes up later must not overwrite it."""
    commands: set[asyncio.Task[RawResult | SandboxError]] = field(default_factory=set)


class _StdinFeed(asyncio.Protocol):
    """The write end of a command's stdin pipe, fed from the event loop without blocking it."""

    def __init__(self) -> None:
        self.read_fd = -1
        self._transport: asyncio.WriteTransport | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._lost = False

    @classmethod
    async def open(cls) -> _StdinFeed:
        feed = cls()
        read_fd, write_fd = os.pipe()
        feed.read_fd = read_fd
        pipe = os.fdopen(write_fd, "wb", buffering=0)
        transport, _ = await asyncio.get_running_loop().connect_write_pipe(lambda: feed, pipe)
        feed._transport = transport
        return feed

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._writable.set()

    async def write(self, data: bytes) -> None:
        if self._transport is None or self._transport.is_closing():
            return
        self._transport.write(data)
        # Backpressure: a command that reads slowly slows the client down, as a real pod does.
        await self._writable.wait()

    def close(self) -> None:
        """End of input once what is buffered has been written."""
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    def finish(self) -> None:
        """The command is over: drop unread input and release both ends."""
        # A transport that is fully closed already must not be aborted (asyncio fails then).
        if self._transport is not None and not self._lost:
            self._transport.abort()
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_object(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A Kubernetes `Status` describing a failed request."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        body["details"] = details
    return body


def _failure(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> JSONResponse:
    return JSONResponse(status_object(code, reason, message, details), status_code=code)


def _not_found(name: str, kind: str = "pods") -> JSONResponse:
    return _failure(404, "NotFound", f'{kind} "{name}" not found', {"name": name, "kind": kind})


def _flag(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes")


def _field_path(path: Any) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".")


# Label selectors --------------------------------------------------------------------------

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_REQUIREMENT = re.compile(
    rf"""^(?:
        !\s*(?P<absent>{_KEY})
      | (?P<key>{_KEY})\s*(?:
            (?P<op>==|=|!=)\s*(?P<value>[-A-Za-z0-9_.]*)
          | \s(?P<setop>in|notin)\s*\((?P<values>[^()]*)\)
        )?
    )$""",
    re.VERBOSE,
)
Labels = Mapping[str, str]


def _split_selector(selector: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part.strip() for part in parts if part.strip()]


def _requirement(text: str) -> Callable[[Labels], bool]:
    found = _REQUIREMENT.match(text)
    if found is None:
        raise ValueError(f"unable to parse requirement: {text!r}")
    if found["absent"]:
        absent = found["absent"]
        return lambda labels: absent not in labels
    key, op = found["key"], found["op"]
    if op in ("=", "=="):
        value = found["value"]
        return lambda labels: labels.get(key) == value
    if op == "!=":
        value = found["value"]
        return lambda labels: labels.get(key) != value
    if found["setop"]:
        values = {v.strip() for v in found["values"].split(",")}
        if found["setop"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    return lambda labels: key in labels


def label_matcher(selector: str) -> Callable[[Labels], bool]:
    """A predicate for a label selector (equality, inequality, existence, in/notin; all of
    its comma-separated requirements must hold). ValueError when it does not parse."""
    requirements = [_requirement(part) for part in _split_selector(selector)]
    return lambda labels: all(requirement(labels) for requirement in requirements)


# The server ---------------------------------------------------------------------------------


class _DenialNoise(logging.Filter):
    """Drops the error uvicorn's sans-I/O protocol logs after every WebSocket denial response
    (which does end the exchange properly): the fake refuses handshakes on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing handshake."


class FakeKube:
    """The pods and pods/exec endpoints of a Kubernetes API server, served by uvicorn on a free
    loopback port in a thread with its own event loop. Each pod is a real LocalSandbox; exec
    runs its command there. Attributes below script failures; change them from any thread.

    Unlike a kubelet, exec sends a command's output only once it has ended (stdout's frames,
    then stderr's, then the status), and each exec runs in its own pid namespace, so one exec
    cannot signal another's processes.

    Volumes: an emptyDir mounted at ENVIRONMENT is a host folder per pod, bound into the
    container's sandbox read-only when its volumeMount says readOnly, else writable (the
    only emptyDir the fake models; the sandbox's own /workspace, /tmp and home stand for the
    others). Init containers run one after the other before the pod's container, each in a
    sandbox of its own with that folder writable, running its `command` as given; exec
    reaches an init container while it runs (the pod Pending, its status `running`), and a
    non-zero exit fails the pod, as with restartPolicy Never. The sandboxes' uids are the
    local mechanism's, not runAsUser: what keeps the pod's container from writing the
    environment here is the read-only bind, as in a kubelet it is the readOnly mount. The
    container's `env` is not applied: the local sandbox sets its own (with ENVIRONMENT/bin first
    on PATH and VIRTUAL_ENV when the environment is bound, as the pod's env asks).

    The network: a pod has none (the local sandbox's empty network namespace), except a pod
    labelled frognano.dev/purpose=environment when `network_policy` is given, which stands for
    the chart's NetworkPolicy: such a pod's commands get HTTP(S)_PROXY pointing (through a
    relay in the sandbox) at FrogNano's EgressProxy, allowing exactly the host names of the
    pod's hostAliases whose address and port `network_policy` lists, and those addresses
    themselves. A name outside hostAliases fails, as a pod without DNS fails; an address
    outside the policy is refused. Not emulated: a real pod connects directly (no proxy
    variables; a client that ignores them would find no network at all here), and the proxy
    connects by resolving the name on this host, not by the hostAliases address (the tests
    use names that resolve to the same address, such as localhost)."""

    def __init__(
        self,
        *,
        mechanism: str = "auto",
        sandbox_options: SandboxOptions | None = None,
        protocols: tuple[str, ...] = (V5, V4),
        token: str | None = TOKEN,
        kubernetes_version: str = KUBERNETES_VERSION,
        network_policy: tuple[tuple[str, int], ...] = (),
    ) -> None:
        self.url = ""
        """http://127.0.0.1:PORT once started."""
        self.pods: dict[tuple[str, str], dict[str, Any]] = _PodTable()
        """Stored pods by (namespace, name), as the API returns them."""
        self.created: list[dict[str, Any]] = []
        """Every pod a POST created, as the answer showed it; kept after the pod is deleted."""
        self.execs: list[ExecRecord] = []
        self.protocols = protocols
        """Exec subprotocols accepted; the client's first offer found here wins."""
        self.create_error: tuple[int, str, str] | None = None
        """(code, reason, message): every create answers with this Status while it is set."""
        self.hold_pending = False
        """New pods stay Pending, with no sandbox, until `start_pod` or `set_status`."""
        self.exec_fault: ExecFault = None
        """"drop": run the command, send its first output frame, then cut the TCP connection
        (no status, no close frame); "stall": accept, then neither run the command nor send
        anything until the client leaves. Read when a connection is accepted."""
        self.token = token
        """The bearer token every request must carry; None accepts any request."""
        self.kubernetes_version = kubernetes_version
        self.mechanism = mechanism
        self.network_policy = network_policy
        """(IP, port) pairs environment pods may reach; empty: no pod reaches anything."""
        self._sandbox_options = sandbox_options
        self._runtimes: dict[tuple[str, str], _Runtime] = {}
        self._lock = threading.Lock()
        self._versions = itertools.count(1000)
        self._ips = itertools.count(2)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self.app = self._build_app()

    # Lifecycle --------------------------------------------------------------------------------

    def start(self) -> Self:
        """Serve on a free loopback port; returns once uvicorn accepts connections."""
        if self._thread is not None:
            return self
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._asgi,
            log_config=None,
            access_log=False,
            lifespan="on",
            interface="asgi3",
            ws="websockets-sansio",
            # The client only answers pings while it reads; a stalled reader must not be cut.
            ws_ping_interval=None,
            proxy_headers=False,
            timeout_graceful_shutdown=5,
        )
        server = uvicorn.Server(config)
        uvicorn_log = logging.getLogger("uvicorn.error")
        if not any(isinstance(known, _DenialNoise) for known in uvicorn_log.filters):
            uvicorn_log.addFilter(_DenialNoise())
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="fake-kube", daemon=True
        )
        self._server, self._thread, self._socket = server, thread, sock
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not server.started:
            self.close()
            raise RuntimeError("the fake Kubernetes API server did not start")
        self.url = f"http://127.0.0.1:{port}"
        return self

    def close(self) -> None:
        """Delete every pod's sandbox and stop the server."""
        server, thread, loop = self._server, self._thread, self._loop
        if server is None or thread is None:
            return
        if loop is not None and thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._close_sandboxes(), loop).result(60)
        server.should_exit = True
        thread.join(30)
        if self._socket is not None:
            self._socket.close()
        self._server = self._thread = self._socket = None
        if thread.is_alive():
            raise RuntimeError("the fake Kubernetes API server did not stop")

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # Scripting --------------------------------------------------------------------------------

    def kubeconfig(self, path: Path, *, namespace: str = "default") -> Path:
        """Write a kubeconfig for this server (bearer token, plain http) to `path`."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": self.token or TOKEN}}],
            "contexts": [
                {
                    "name": "fake",
                    "context": {"cluster": "fake", "user": "fake", "namespace": namespace},
                }
            ],
            "current-context": "fake",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        return path

    def set_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        """Replace a pod's status; a sandbox still starting will not overwrite it. The sandbox
        (if any) stays, but exec follows the new phase; a pod set Running without a sandbox
        (use `start_pod`) reads as ready yet refuses exec."""
        key = (namespace, name)
        with self._lock:
            pod = self.pods[key]
            pod["status"] = copy.deepcopy(status)
            pod["metadata"]["resourceVersion"] = self._next_version()
            self._runtimes.setdefault(key, _Runtime()).scripted = True

    def start_pod(self, namespace: str, name: str) -> None:
        """Start a held pod's sandbox and mark it Running; returns once it is."""
        key = (namespace, name)
        if key not in self.pods:
            raise KeyError(key)
        with self._lock:
            self._runtimes.setdefault(key, _Runtime()).scripted = False
        asyncio.run_coroutine_threadsafe(self._start(key), self._running_loop()).result(120)

    def add_pod(self, pod: dict[str, Any]) -> dict[str, Any]:
        """Store a pod object as given (no validation, no sandbox); metadata the API server
        would set is filled in when missing. Returns the stored object."""
        stored = copy.deepcopy(pod)
        stored.setdefault("apiVersion", "v1")
        stored.setdefault("kind", "Pod")
        metadata = stored.setdefault("metadata", {})
        if not metadata.get("name"):
            raise ValueError("add_pod needs metadata.name")
        metadata.setdefault("namespace", "default")
        metadata.setdefault("uid", str(uuid.uuid4()))
        metadata.setdefault("creationTimestamp", _now())
        stored.setdefault("spec", {})
        stored.setdefault("status", {"phase": "Pending"})
        key = (metadata["namespace"], metadata["name"])
        with self._lock:
            metadata["resourceVersion"] = self._next_version()
            self.pods[key] = stored
            self._runtimes[key] = _Runtime(scripted=True)
        return stored

    def sandbox(self, namespace: str, name: str) -> LocalSandbox | None:
        """The sandbox behind a pod, if it has one running."""
        runtime = self._runtimes.get((namespace, name))
        return None if runtime is None else runtime.sandbox

    def environment_folder(self, namespace: str, name: str) -> Path | None:
        """The host folder behind a pod's ENVIRONMENT emptyDir, while the pod exists."""
        runtime = self._runtimes.get((namespace, name))
        return next(iter(runtime.volumes.values()), None) if runtime else None

    def _box(self, namespace: str, name: str, container: str) -> LocalSandbox | None:
        """The sandbox of one container of a pod: an init container's while it runs."""
        runtime = self._runtimes.get((namespace, name))
        if runtime is None:
            return None
        if runtime.init is not None and runtime.init[0] == container:
            return runtime.init[1]
        inits = self.pods.get((namespace, name), {}).get("spec", {}).get("initContainers") or []
        return None if any(c.get("name") == container for c in inits) else runtime.sandbox

    # Internals --------------------------------------------------------------------------------

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None or self._thread is None:
            raise RuntimeError("the fake Kubernetes API server is not running")
        return self._loop

    def _next_version(self) -> str:
        return str(next(self._versions))

    def _options(self) -> SandboxOptions:
        if self._sandbox_options is not None:
            return self._sandbox_options
        mechanism = choose_mechanism(self.mechanism)
        return SandboxOptions(local_mechanism=mechanism)

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app behind a bearer-token check, remembering each WebSocket's transport."""
        if scope["type"] in ("http", "websocket") and self.token is not None:
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode("latin-1") != f"Bearer {self.token}":
                prefix = "websocket." if scope["type"] == "websocket" else ""
                body = json.dumps(status_object(401, "Unauthorized", "Unauthorized")).encode()
                await send(
                    {
                        "type": f"{prefix}http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json")],
                    }
                )
                await send({"type": f"{prefix}http.response.body", "body": body})
                return
        if scope["type"] == "websocket":
            # uvicorn hands the app its protocol's bound methods; the protocol owns the socket.
            _TRANSPORT.set(getattr(getattr(receive, "__self__", None), "transport", None))
        await self.app(scope, receive, send)

    async def _close_sandboxes(self) -> None:
        with self._lock:
            runtimes = list(self._runtimes.values())
        await asyncio.gather(*(self._stop(runtime) for runtime in runtimes))

    async def _stop(self, runtime: _Runtime) -> None:
        booting, runtime.booting = runtime.booting, None
        if booting is not None and not booting.done():
            booting.cancel()
            with contextlib.suppress(BaseException):
                await booting
        box, runtime.sandbox = runtime.sandbox, None
        if box is not None:
            with contextlib.suppress(Exception):
                await box.close()
        init, runtime.init = runtime.init, None
        if init is not None:
            with contextlib.suppress(Exception):
                await init[1].close()
        network, runtime.network = runtime.network, None
        if network is not None:
            with contextlib.suppress(Exception):
                await network[0].__aexit__(None, None, None)
            shutil.rmtree(network[1], ignore_errors=True)
        for folder in runtime.volumes.values():
            shutil.rmtree(folder, ignore_errors=True)
        runtime.volumes.clear()
        # A command still starting when the sandbox closed escapes close(); cancelling its
        # _spawn kills it.
        for task in list(runtime.commands):
            task.cancel()
        for task in list(runtime.commands):
            with contextlib.suppress(BaseException):
                await task

    def _boot(self, key: tuple[str, str]) -> None:
        runtime = self._runtimes.setdefault(key, _Runtime())
        runtime.booting = asyncio.get_running_loop().create_task(self._start(key))

    async def _start(self, key: tuple[str, str]) -> None:
        runtime = self._runtimes.get(key)
        if runtime is None:
            return
        if runtime.sandbox is None:
            pod = self.pods.get(key)
            if pod is None:
                return
            try:
                base = await asyncio.to_thread(self._options)
                runtime.volumes = _volumes(pod)
                if not await self._run_init_containers(key, runtime, pod, base):
                    return
                options = await self._container_options(runtime, pod, base)
                box = await LocalSandbox.create(options)
            except (SandboxError, OSError) as exc:
                self._failed_to_start(key, runtime, str(exc))
                return
            if self._runtimes.get(key) is not runtime:  # deleted while it started
                await box.close()
                return
            runtime.sandbox = box
        with self._lock:
            pod = self.pods.get(key)
            if pod is None or runtime.scripted:
                return
            pod["spec"]["nodeName"] = "fake-node"
            pod["status"] = self._running_status(pod)
            pod["metadata"]["resourceVersion"] = self._next_version()

    async def _run_init_containers(
        self, key: tuple[str, str], runtime: _Runtime, pod: dict[str, Any], base: SandboxOptions
    ) -> bool:
        """Run each init container to its end; False (the pod Failed) when one fails."""
        inits = pod["spec"].get("initContainers") or []
        done: list[dict[str, Any]] = []
        for index, container in enumerate(inits):
            name = container["name"]
            folder, _ = _environment_mount(runtime, container)
            options = dataclasses.replace(base, environment=folder, environment_writable=True)
            box = await LocalSandbox.create(options)
            runtime.init = (name, box)
            waiting = [_init_status(c, {"waiting": {"reason": "PodInitializing"}})
                       for c in inits[index + 1 :]]  # fmt: skip
            self._set_init_statuses(
                key, runtime, [*done, _init_status(container, {"running": {"startedAt": _now()}}),
                               *waiting],
            )  # fmt: skip
            try:
                result = await box._spawn(
                    'exec "$@"', container.get("command") or [], cwd="/", timeout=EXEC_TIMEOUT,
                    stdin=None, output_limit=64 * 1024, split=False,
                )  # fmt: skip
            finally:
                runtime.init = None
                await box.close()
            code = result.exit_code if result.exit_code is not None else 137
            ended = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                     "message": result.output.decode("utf-8", "replace")[-1000:],
                     "startedAt": _now(), "finishedAt": _now()}  # fmt: skip
            done.append(_init_status(container, {"terminated": ended}))
            if code != 0:
                self._set_init_statuses(key, runtime, done, phase="Failed")
                return False
        return True

    def _set_init_statuses(
        self,
        key: tuple[str, str],
        runtime: _Runtime,
        statuses: list[dict[str, Any]],
        phase: str = "Pending",
    ) -> None:
        with self._lock:
            pod = self.pods.get(key)
            if pod is None or runtime.scripted:
                return
            status: dict[str, Any] = {"phase": phase, "initContainerStatuses": statuses}
            if phase == "Failed":
                status["reason"] = "InitContainerFailed"
                status["message"] = "an init container exited non-zero"
            pod["spec"]["nodeName"] = "fake-node"
            pod["status"] = status
            pod["metadata"]["resourceVersion"] = self._next_version()

    async def _container_options(
        self, runtime: _Runtime, pod: dict[str, Any], base: SandboxOptions
    ) -> SandboxOptions:
        """The pod's container's sandbox: its ENVIRONMENT bound as its volumeMount says, and a
        pod network when the NetworkPolicy lets this pod out."""
        (container,) = pod["spec"]["containers"]
        folder, read_only = _environment_mount(runtime, container)
        options = dataclasses.replace(
            base, environment=folder, environment_writable=folder is not None and not read_only
        )
        labels = pod["metadata"].get("labels") or {}
        if labels.get(PURPOSE) != "environment" or not self.network_policy:
            return options
        allowed: list[Destination] = []
        for alias in pod["spec"].get("hostAliases") or []:
            for ip, port in self.network_policy:
                if alias["ip"] == ip:
                    allowed += [Destination(host, port) for host in alias.get("hostnames") or []]
        allowed += [Destination(ip, port) for ip, port in self.network_policy]
        # In /tmp: a Unix socket's path must be short, and reachable by the sandbox's uid.
        folder_out = Path(tempfile.mkdtemp(prefix="fake-net-", dir="/tmp"))
        folder_out.chmod(0o755)
        proxy = EgressProxy(folder_out / RELAY_SOCKET, allowed)
        await proxy.__aenter__()
        runtime.network = (proxy, folder_out)
        return dataclasses.replace(
            options,
            egress=folder_out,
            tool_files=(*options.tool_files, (RELAY_FILE, relay_source())),
        )

    def _failed_to_start(self, key: tuple[str, str], runtime: _Runtime, why: str) -> None:
        with self._lock:
            pod = self.pods.get(key)
            if pod is None or runtime.scripted:
                return
            pod["status"] = {
                "phase": "Pending",
                "containerStatuses": [
                    {
                        "name": container.get("name", ""),
                        "ready": False,
                        "started": False,
                        "restartCount": 0,
                        "image": container.get("image", ""),
                        "imageID": "",
                        "state": {"waiting": {"reason": "CreateContainerError", "message": why}},
                    }
                    for container in pod["spec"].get("containers") or []
                ],
            }
            pod["metadata"]["resourceVersion"] = self._next_version()

    def _running_status(self, pod: dict[str, Any]) -> dict[str, Any]:
        now = _now()
        ip = f"10.244.0.{next(self._ips) % 250 + 2}"
        conditions = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                      "PodScheduled")  # fmt: skip
        previous = (pod.get("status") or {}).get("initContainerStatuses")
        extra = {"initContainerStatuses": previous} if previous else {}
        return {
            **extra,
            "phase": "Running",
            "conditions": [
                {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                for kind in conditions
            ],
            "hostIP": "10.0.0.10",
            "hostIPs": [{"ip": "10.0.0.10"}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": pod["metadata"]["creationTimestamp"],
            "qosClass": "Burstable",
            "containerStatuses": [
                {
                    "name": container.get("name", ""),
                    "state": {"running": {"startedAt": now}},
                    "lastState": {},
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "image": container.get("image", ""),
                    "imageID": "",
                    "containerID": f"containerd://{secrets.token_hex(32)}",
                }
                for container in pod["spec"].get("containers") or []
            ],
        }

    # The HTTP API -----------------------------------------------------------------------------

    def _build_app(self) -> FastAPI:
        @asynccontextmanager
        async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
            self._loop = asyncio.get_running_loop()
            try:
                yield
            finally:
                await self._close_sandboxes()

        app = FastAPI(lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
        pods = "/api/v1/namespaces/{namespace}/pods"
        app.add_api_route("/version", self._version, methods=["GET"])
        app.add_api_route("/api/v1/namespaces/{namespace}", self._namespace, methods=["GET"])
        app.add_api_route(pods, self._create, methods=["POST"])
        app.add_api_route(pods, self._list, methods=["GET"])
        app.add_api_route("/api/v1/pods", self._list_all, methods=["GET"])
        app.add_api_route(pods + "/{name}", self._read, methods=["GET"])
        app.add_api_route(pods + "/{name}", self._delete, methods=["DELETE"])
        app.add_api_websocket_route(pods + "/{name}/exec", self._exec)
        return app

    async def _version(self) -> dict[str, str]:
        major, minor = self.kubernetes_version.split(".")[:2]
        return {
            "major": major,
            "minor": minor,
            "gitVersion": f"v{major}.{minor}.0",
            "gitCommit": "0" * 40,
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.24.0",
            "compiler": "gc",
            "platform": "linux/amd64",
        }

    async def _namespace(self, namespace: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": namespace,
                "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, namespace)),
                "resourceVersion": "1",
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"kubernetes.io/metadata.name": namespace},
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }

    async def _create(self, namespace: str, request: Request) -> Response:
        if self.create_error is not None:
            code, reason, message = self.create_error
            return _failure(code, reason, message)
        try:
            body = json.loads(await request.body())
        except ValueError as exc:
            return _failure(400, "BadRequest", f"the body of the request was invalid: {exc}")
        problem = await asyncio.to_thread(self._invalid, namespace, body)
        if problem is not None:
            return problem
        metadata = body["metadata"]
        with self._lock:
            name = metadata.get("name") or self._generate_name(namespace, metadata["generateName"])
            if (namespace, name) in self.pods:
                return _failure(
                    409, "AlreadyExists", f'pods "{name}" already exists',
                    {"name": name, "kind": "pods"},
                )  # fmt: skip
            metadata.update(
                name=name,
                namespace=namespace,
                uid=str(uuid.uuid4()),
                resourceVersion=self._next_version(),
                creationTimestamp=_now(),
            )
            body["status"] = {"phase": "Pending"}
            self.pods[(namespace, name)] = body
            self._runtimes[(namespace, name)] = _Runtime()
            created = copy.deepcopy(body)
            self.created.append(copy.deepcopy(body))
        if not self.hold_pending:
            self._boot((namespace, name))
        return JSONResponse(created, status_code=201)

    def _generate_name(self, namespace: str, prefix: str) -> str:
        while True:
            name = prefix + "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))
            if (namespace, name) not in self.pods:
                return name

    def _invalid(self, namespace: str, body: Any) -> JSONResponse | None:
        """The error the API server would answer an invalid pod with, or None."""
        if (
            not isinstance(body, dict)
            or body.get("kind") != "Pod"
            or body.get("apiVersion") != "v1"
        ):
            return _failure(400, "BadRequest", "the request must be a v1 Pod")
        metadata = body.get("metadata")
        if not isinstance(metadata, dict):
            metadata = {}
        name = metadata.get("name") or metadata.get("generateName")
        if not isinstance(name, str) or not name:
            return _invalid_pod(
                "", [("metadata.name", "Required value: name or generateName is required")]
            )
        if metadata.get("namespace", namespace) != namespace:
            return _failure(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the "
                "request",
            )
        return _invalid_spec(name, body)

    async def _read(self, namespace: str, name: str) -> Response:
        with self._lock:
            pod = copy.deepcopy(self.pods.get((namespace, name)))
        return _not_found(name) if pod is None else JSONResponse(pod)

    async def _list(self, namespace: str, request: Request) -> Response:
        return self._listing(namespace, request.query_params.get("labelSelector") or "")

    async def _list_all(self, request: Request) -> Response:
        return self._listing(None, request.query_params.get("labelSelector") or "")

    def _listing(self, namespace: str | None, selector: str) -> Response:
        try:
            matches = label_matcher(selector)
        except ValueError as exc:
            return _failure(400, "BadRequest", str(exc))
        with self._lock:
            items = [
                copy.deepcopy(pod)
                for (where, _), pod in sorted(dict.items(self.pods))
                if namespace in (None, where)
                and matches(pod.get("metadata", {}).get("labels") or {})
            ]
            version = self._next_version()
        for item in items:
            # As the real API server does: list items carry no kind or apiVersion.
            item.pop("kind", None)
            item.pop("apiVersion", None)
        return JSONResponse(
            {
                "kind": "PodList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": version},
                "items": items,
            }
        )

    async def _delete(self, namespace: str, name: str) -> Response:
        key = (namespace, name)
        with self._lock:
            pod = self.pods.pop(key, None)
            runtime = self._runtimes.pop(key, None)
        if pod is None:
            return _not_found(name)
        if runtime is not None:
            await self._stop(runtime)
        pod["metadata"].update(
            deletionTimestamp=_now(),
            deletionGracePeriodSeconds=0,
            resourceVersion=self._next_version(),
        )
        return JSONResponse(pod)

    # pods/exec ----------------------------------------------------------------------------------

    def _exec_refusal(
        self, namespace: str, name: str, container: str, argv: list[str], query: Mapping[str, str]
    ) -> JSONResponse | None:
        """The answer the API server gives instead of upgrading, or None to go ahead."""
        pod = self.pods.get((namespace, name))
        if pod is None:
            return _not_found(name)
        if not argv or not any(_flag(query.get(s)) for s in ("stdin", "stdout", "stderr")):
            return _failure(
                400,
                "BadRequest",
                "you must specify at least 1 of stdin, stdout, stderr"
                if argv
                else "you must specify at least one command for the container",
            )
        names = [c.get("name") for c in pod.get("spec", {}).get("containers") or []]
        inits = [c.get("name") for c in pod.get("spec", {}).get("initContainers") or []]
        if container not in names + inits:
            return _failure(400, "BadRequest", f"container {container} is not valid for pod {name}")
        phase = (pod.get("status") or {}).get("phase")
        # An init container is reachable only while it runs (the pod Pending), as in a kubelet.
        if container not in inits and phase in ("Succeeded", "Failed"):
            return _failure(
                400,
                "BadRequest",
                f"cannot exec into a container in a completed pod; current phase is {phase}",
            )
        running = container in inits or phase == "Running"
        if not running or self._box(namespace, name, container) is None:
            return _failure(
                400,
                "BadRequest",
                f'unable to upgrade connection: container not found ("{container}")',
            )
        return None

    async def _exec(self, websocket: WebSocket, namespace: str, name: str) -> None:
        query = websocket.query_params
        argv = query.getlist("command")
        pod = self.pods.get((namespace, name)) or {}
        containers = pod.get("spec", {}).get("containers") or [{}]
        container = query.get("container") or containers[0].get("name", "")
        refusal = self._exec_refusal(namespace, name, container, argv, query)
        if refusal is not None:
            await websocket.send_denial_response(refusal)
            return
        offered = list(websocket.scope.get("subprotocols") or [])
        chosen = next((p for p in offered if p in self.protocols), None)
        if chosen is None:
            # What k8s.io/apimachinery's wsstream answers when no protocol is shared.
            await websocket.send_denial_response(
                Response(
                    f"requested protocol(s) are not supported: {offered}; "
                    f"supports {list(self.protocols)}",
                    status_code=403,
                    media_type="text/plain",
                )
            )
            return
        box = self._box(namespace, name, container)
        assert box is not None  # _exec_refusal checked it
        record = ExecRecord(namespace, name, container, argv, chosen)
        # Recorded before the handshake completes, so a client that has its stream can see it.
        self.execs.append(record)
        fault = self.exec_fault
        await websocket.accept(subprotocol=chosen)
        if fault == "stall":
            await self._read_client(websocket, record, None)
            return
        await self._run_exec(websocket, box, record, fault, query)

    async def _run_exec(
        self,
        websocket: WebSocket,
        box: LocalSandbox,
        record: ExecRecord,
        fault: ExecFault,
        query: Mapping[str, str],
    ) -> None:
        feed = await _StdinFeed.open() if _flag(query.get("stdin")) else None
        reader = asyncio.create_task(self._read_client(websocket, record, feed))
        # Its own task: a client that leaves (or a server that stops waiting) does not end the
        # command, as in Kubernetes (kubernetes#89031); deleting the pod does.
        command = asyncio.create_task(self._command(box, record, feed))
        runtime = self._runtimes.get((record.namespace, record.pod))
        if runtime is not None:
            runtime.commands.add(command)
            command.add_done_callback(runtime.commands.discard)
        try:
            # wait(), not await: a handler that is cancelled leaves the command running.
            await asyncio.wait({command})
            result: RawResult | SandboxError
            if command.cancelled():  # killed with its pod
                result = RawResult(exit_code=137, output=b"", duration=0.0)
            else:
                result = command.result()
            frames = _output_frames(result, query)
            with contextlib.suppress(WebSocketDisconnect, OSError):
                if fault == "drop":
                    await self._drop(websocket, frames[:1])
                    return
                for frame in frames:
                    await websocket.send_bytes(frame)
                status = _exec_status(record.argv, result)
                await websocket.send_bytes(bytes([STATUS]) + json.dumps(status).encode())
                await websocket.close(1000)
        finally:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader

    async def _command(
        self, box: LocalSandbox, record: ExecRecord, feed: _StdinFeed | None
    ) -> RawResult | SandboxError:
        runtime = self._runtimes.get((record.namespace, record.pod))
        network = runtime is not None and runtime.network is not None and box is runtime.sandbox
        try:
            result = await box._spawn(
                (POD_NETWORK if network else "") + 'exec "$@"',
                record.argv,
                cwd="/",
                timeout=EXEC_TIMEOUT,
                stdin=None if feed is None else feed.read_fd,
                output_limit=EXEC_OUTPUT_LIMIT,
                split=True,
            )
        except SandboxClosed:
            # Its pod was deleted as it started: as if the kubelet killed it with the pod.
            result = RawResult(exit_code=137, output=b"", duration=0.0)
        except SandboxError as exc:  # the sandbox broke
            return exc
        except asyncio.CancelledError:
            record.exit_code = 137
            raise
        finally:
            if feed is not None:
                feed.finish()
            record.finished.set()
        record.exit_code = result.exit_code
        return result

    async def _read_client(
        self, websocket: WebSocket, record: ExecRecord, feed: _StdinFeed | None
    ) -> None:
        """Feed stdin frames to the command until the client leaves."""
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    if not record.finished.is_set():
                        record.client_gone = True
                    return
                data = message.get("bytes")
                if data is None:
                    data = (message.get("text") or "").encode()
                if not data:
                    continue
                if data[0] == STDIN and feed is not None and not record.stdin_closed:
                    record._received.extend(data[1:])
                    await feed.write(data[1:])
                elif data[0] == CLOSE and record.subprotocol == V5 and data[1:2] == bytes([STDIN]):
                    record.stdin_closed = True
                    if feed is not None:
                        feed.close()
        finally:
            # A client that is gone sends no more input: the command sees its end.
            if feed is not None:
                feed.close()

    async def _drop(self, websocket: WebSocket, frames: list[bytes]) -> None:
        """Send `frames`, then cut the TCP connection: no status, no close handshake."""
        for frame in frames:
            await websocket.send_bytes(frame)
        transport = _TRANSPORT.get()
        if transport is None:  # not under uvicorn's sans-I/O protocol: the nearest thing
            await websocket.close(1011)
            return
        if not isinstance(transport, asyncio.WriteTransport):
            transport.close()
            return
        # abort() discards what the transport has not written yet: let the frames out first.
        for _ in range(100):
            if transport.get_write_buffer_size() == 0:
                break
            await asyncio.sleep(0.01)
        transport.abort()


def _volumes(pod: dict[str, Any]) -> dict[str, Path]:
    """A host folder for each emptyDir mounted at ENVIRONMENT (mode 0777, as a kubelet makes
    an emptyDir)."""
    spec = pod["spec"]
    mounted = {
        mount["name"]
        for container in [*(spec.get("initContainers") or []), *spec["containers"]]
        for mount in container.get("volumeMounts") or []
        if mount.get("mountPath") == ENVIRONMENT
    }
    folders = {}
    for volume in spec.get("volumes") or []:
        if volume["name"] in mounted and "emptyDir" in volume:
            folder = Path(tempfile.mkdtemp(prefix="fake-emptydir-"))
            folder.chmod(0o777)
            folders[volume["name"]] = folder
    return folders


def _environment_mount(runtime: _Runtime, container: dict[str, Any]) -> tuple[Path | None, bool]:
    """The host folder a container mounts at ENVIRONMENT, and whether read-only."""
    for mount in container.get("volumeMounts") or []:
        if mount.get("mountPath") == ENVIRONMENT and mount["name"] in runtime.volumes:
            return runtime.volumes[mount["name"]], bool(mount.get("readOnly"))
    return None, False


def _init_status(container: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": container.get("name", ""),
        "state": state,
        "lastState": {},
        "ready": "terminated" in state and state["terminated"].get("exitCode") == 0,
        "restartCount": 0,
        "image": container.get("image", ""),
        "imageID": "",
        "started": "running" in state,
    }


_SPEC_VALUES = {
    "restartPolicy": ("Always", "OnFailure", "Never"),
    "dnsPolicy": ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"),
}
_CONTAINER_VALUES = {"imagePullPolicy": ("Always", "Never", "IfNotPresent")}
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def _unsupported(value: object, allowed: tuple[str, ...]) -> str:
    return f'Unsupported value: "{value}": supported values: ' + ", ".join(
        f'"{one}"' for one in allowed
    )


def _invalid_spec(name: str, body: dict[str, Any]) -> JSONResponse | None:
    """The 422 answer to a pod whose fields do not validate, or None: the OpenAPI schema, then
    a few of the API server's own checks that the schema leaves out."""
    try:
        kubernetes_validate.validate(body, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return _invalid_pod(
            name, [(_field_path(exc.absolute_path), f"Invalid value: {exc.message}")]
        )
    spec = body.get("spec") or {}
    problems: list[tuple[str, str]] = []
    for key, allowed in _SPEC_VALUES.items():
        if key in spec and spec[key] not in allowed:
            problems.append((f"spec.{key}", _unsupported(spec[key], allowed)))
    containers = spec.get("containers") or []
    if not containers:
        problems.append(("spec.containers", "Required value"))
    volumes = {volume.get("name") for volume in spec.get("volumes") or []}
    listed = [("containers", containers), ("initContainers", spec.get("initContainers") or [])]
    for kind, entries in listed:
        for index, container in enumerate(entries):
            problems += _container_problems(f"spec.{kind}[{index}]", container, volumes)
    for index, alias in enumerate(spec.get("hostAliases") or []):
        try:
            ipaddress.ip_address(alias.get("ip") or "")
        except ValueError:
            problems.append((f"spec.hostAliases[{index}].ip", "Invalid value: not an IP"))
    return _invalid_pod(name, problems) if problems else None


def _container_problems(
    where: str, container: dict[str, Any], volumes: set[Any]
) -> list[tuple[str, str]]:
    problems = []
    if not _DNS_LABEL.fullmatch(container.get("name") or ""):
        problems.append((f"{where}.name", "Invalid value: must be a DNS-1123 label"))
    # The schema leaves image optional (for controllers); pod validation does not.
    if not container.get("image"):
        problems.append((f"{where}.image", "Required value"))
    for key, allowed in _CONTAINER_VALUES.items():
        if key in container and container[key] not in allowed:
            problems.append((f"{where}.{key}", _unsupported(container[key], allowed)))
    for at, mount in enumerate(container.get("volumeMounts") or []):
        if mount.get("name") not in volumes:
            problems.append((f"{where}.volumeMounts[{at}].name", "Not found"))
    return problems


def _invalid_pod(name: str, problems: list[tuple[str, str]]) -> JSONResponse:
    """422 Invalid, worded as the API server words it: one cause inline, several in brackets."""
    listed = [f"{path}: {problem}" for path, problem in problems]
    joined = listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"
    causes = [
        {"reason": "FieldValueInvalid", "message": problem, "field": path}
        for path, problem in problems
    ]
    return _failure(
        422,
        "Invalid",
        f'Pod "{name}" is invalid: {joined}',
        {"name": name, "kind": "Pod", "causes": causes},
    )


def _output_frames(result: RawResult | SandboxError, query: Mapping[str, str]) -> list[bytes]:
    """stdout's frames, then stderr's, as asked for; with a tty, both merged on stdout."""
    if not isinstance(result, RawResult):
        return []
    if _flag(query.get("tty")):
        return _frames(STDOUT, result.output) if _flag(query.get("stdout")) else []
    frames = []
    if _flag(query.get("stdout")):
        frames += _frames(STDOUT, result.stdout or b"")
    if _flag(query.get("stderr")):
        frames += _frames(STDERR, result.stderr or b"")
    return frames


def _frames(channel: int, data: bytes) -> list[bytes]:
    prefix = bytes([channel])
    return [prefix + data[start : start + FRAME] for start in range(0, len(data), FRAME)]


def _exec_status(argv: list[str], result: RawResult | SandboxError) -> dict[str, Any]:
    """The status channel's message, as the kubelet words it."""
    if isinstance(result, RawResult) and result.exit_code == 0:
        return {"metadata": {}, "status": "Success"}
    if isinstance(result, RawResult) and result.exit_code is not None:
        code = result.exit_code
        return {
            "metadata": {},
            "status": "Failure",
            "message": "command terminated with non-zero exit code: error executing command "
            f"[{' '.join(argv)}], exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
        }
    why = "timed out" if isinstance(result, RawResult) else str(result)
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"error executing command [{' '.join(argv)}]: {why}",
        "reason": "InternalError",
        "code": 500,
    }


@contextmanager
def running_fake_kube(**kwargs: Any) -> Iterator[FakeKube]:
    """A started FakeKube (keyword arguments as for FakeKube), closed afterwards."""
    with FakeKube(**kwargs) as fake:
        yield fake
