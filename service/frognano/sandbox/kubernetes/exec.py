"""One command over `pods/exec`: the channel protocol, stdin, caps and deadlines (blocking)."""

from __future__ import annotations

import ast
import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, Protocol, cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream
from kubernetes.stream.ws_client import (
    ERROR_CHANNEL,
    STDERR_CHANNEL,
    STDIN_CHANNEL,
    STDOUT_CHANNEL,
    V5_CHANNEL_PROTOCOL,
)

from frognano.sandbox.output import HeadTail

_FRAME = 1024 * 1024
_HANDSHAKE = re.compile(r"Handshake status (\d{3})[^-]*")
# How often a waiting stream wakes up to look at its deadline and the cancel flag.
_TICK = 0.2


class ExecStream(Protocol):
    """What this module uses of the client's (untyped) WSClient."""

    subprotocol: str | None
    sock: Any

    def read_channel(self, channel: int, timeout: float = 0) -> bytes: ...
    def is_open(self) -> bool: ...
    def write_stdin(self, data: bytes) -> None: ...
    def update(self, timeout: float = 0) -> None: ...
    def close_channel(self, channel: int) -> None: ...
    def close(self, *, timeout: float = 3) -> None: ...


class ExecRefused(Exception):
    """The API server would not open the exec stream (pod gone, not running, forbidden)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status or 'no status'}: {reason}")
        self.status = status
        self.reason = reason


@dataclass
class Stdin:
    """Data for the command's standard input: bytes, or a file read in frames."""

    data: bytes | IO[bytes]
    size: int

    def frames(self) -> Iterator[bytes]:
        if isinstance(self.data, bytes):
            for start in range(0, len(self.data), _FRAME):
                yield self.data[start : start + _FRAME]
            return
        while chunk := self.data.read(_FRAME):
            yield chunk


@dataclass
class ExecOutcome:
    """What came back from one exec stream."""

    status: dict[str, Any] | None
    """The status channel's JSON; None when the stream ended without one (dropped)."""
    merged: HeadTail
    stdout: HeadTail | None
    stderr: HeadTail | None
    protocol: str | None
    deadline_hit: bool = False
    cancelled: bool = False

    @property
    def exit_code(self) -> int | None:
        """0, the command's status, or None when the status does not carry one."""
        return exit_code(self.status)


def exit_code(status: dict[str, Any] | None) -> int | None:
    # Parsed here rather than with WSClient.returncode, which raises KeyError on failures
    # without causes and is wrong for fast commands (kubernetes-client/python#2328).
    if not status:
        return None
    if status.get("status") == "Success":
        return 0
    if status.get("reason") == "NonZeroExitCode":
        for cause in (status.get("details") or {}).get("causes") or []:
            if cause.get("reason") == "ExitCode":
                try:
                    return int(cause.get("message", ""))
                except ValueError:
                    return None
    return None


def open_stream(
    configuration: client.Configuration,
    namespace: str,
    pod: str,
    container: str,
    argv: list[str],
    *,
    stdin: bool,
) -> ExecStream:
    """Open an exec WebSocket; raise ExecRefused when the server says no."""
    # stream() swaps methods on the ApiClient it is given, so each stream gets its own
    # (kubernetes-client/python: not thread-safe on a shared client).
    api = client.CoreV1Api(client.ApiClient(configuration))
    try:
        ws = stream(
            api.connect_get_namespaced_pod_exec,
            pod,
            namespace,
            container=container,
            command=argv,
            stdin=stdin,
            stdout=True,
            stderr=True,
            tty=False,
            binary=True,
            _preload_content=False,
        )
    except ApiException as exc:
        # A refused WebSocket handshake comes back as status 0 with the HTTP status, headers
        # and body joined into `reason`: "Handshake status 404 Not Found -+-+- {...} -+-+- ...".
        reason = str(exc.reason or exc.body or exc)
        found = _HANDSHAKE.search(reason)
        status = int(found.group(1)) if found else int(exc.status or 0)
        parts = reason.split(" -+-+- ")
        detail = parts[-1].strip() if len(parts) > 1 else reason
        message = _status_message(detail) or (found.group(0) if found else reason)
        raise ExecRefused(status, message) from None
    return cast(ExecStream, ws)


def _status_message(text: str) -> str | None:
    """The `message` of a Kubernetes Status object, if `text` is one."""
    try:
        parsed = json.loads(text)
    except ValueError:
        try:
            parsed = ast.literal_eval(text)  # the client may show the body as a bytes repr
            parsed = json.loads(parsed) if isinstance(parsed, bytes | str) else parsed
        except (ValueError, SyntaxError):
            return None
    if isinstance(parsed, dict) and parsed.get("message"):
        return str(parsed["message"])
    return None


def run_stream(
    ws: ExecStream,
    *,
    stdin: Stdin | None,
    deadline: float,
    output_limit: int,
    split: bool,
    cancel: threading.Event,
) -> ExecOutcome:
    """Feed stdin, collect output until the server closes the stream, the deadline passes or
    `cancel` is set; always closes the stream."""
    merged = HeadTail(output_limit)
    out = HeadTail(output_limit) if split else None
    err = HeadTail(output_limit) if split else None
    status = bytearray()
    outcome = ExecOutcome(None, merged, out, err, ws.subprotocol)

    def drain() -> None:
        # Frames are consumed in arrival order per channel; stdout before stderr within
        # one update, which is as close to the command's interleaving as exec allows.
        for channel, own in ((STDOUT_CHANNEL, out), (STDERR_CHANNEL, err)):
            data = ws.read_channel(channel)
            if data:
                merged.write(data)
                if own is not None:
                    own.write(data)
        status.extend(ws.read_channel(ERROR_CHANNEL))

    def stop_now() -> bool:
        if cancel.is_set():
            outcome.cancelled = True
            return True
        if time.monotonic() >= deadline:
            outcome.deadline_hit = True
            return True
        return False

    try:
        # A server that stops reading must not block a send past the deadline.
        ws.sock.settimeout(max(1.0, deadline - time.monotonic()))
        if stdin is not None:
            for frame in stdin.frames():
                if stop_now() or not ws.is_open():
                    break
                ws.write_stdin(frame)
                ws.update(timeout=0)
                drain()
            else:
                # v5 delivers a real end-of-file; v4 cannot, and the wrapper's `head -c`
                # ends the input at its length instead.
                if ws.subprotocol == V5_CHANNEL_PROTOCOL and ws.is_open():
                    ws.close_channel(STDIN_CHANNEL)
        while ws.is_open() and not stop_now():
            ws.update(timeout=min(_TICK, max(0.0, deadline - time.monotonic())))
            drain()
        drain()
    except OSError:
        pass  # a dropped connection: the missing status says so
    except Exception as exc:  # websocket-client raises its own exception types
        if type(exc).__module__.split(".")[0] != "websocket":
            raise
    finally:
        # websocket-client's close() skips a socket whose peer already closed the
        # connection; shutdown() releases it either way.
        with contextlib.suppress(Exception):
            ws.close(timeout=1)
        ws.sock.shutdown()
    if status:
        try:
            parsed = json.loads(bytes(status))
        except (ValueError, UnicodeDecodeError):
            parsed = {
                "status": "Failure",
                "message": bytes(status)[:500].decode("utf-8", "replace"),
            }
        outcome.status = parsed if isinstance(parsed, dict) else None
    return outcome
