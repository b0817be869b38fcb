"""The environment phase's only way out: an allowlisting HTTP proxy on a Unix socket."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

HEAD_LIMIT = 64 * 1024
CHUNK = 64 * 1024
# After an error answer the proxy reads on briefly, so that a client still sending its head
# gets the answer rather than a reset; bounded so a client cannot keep the task alive.
LINGER_SECONDS = 2.0
LINGER_BYTES = 1024 * 1024

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a method or a header name (RFC 9110)
_VERSION = re.compile(r"HTTP/1\.[01]")
_HOST = re.compile(r"[A-Za-z0-9._-]+")
_PORT = re.compile(r"[0-9]{1,5}")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# Hop-by-hop headers meant for this proxy or for the client's connection to it.
_DROPPED = frozenset({"proxy-authorization", "proxy-connection", "connection", "keep-alive"})
_DROPPED_ANSWER = frozenset({b"proxy-connection", b"connection", b"keep-alive"})


@dataclass(frozen=True)
class Destination:
    """One approved host:port; `host` is lowercased, an IPv6 literal has no brackets."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class Attempt:
    """A connection the proxy refused or could not make; `what` is the request's method."""

    host: str
    port: int
    what: str
    detail: str = ""


def _normal_host(host: str) -> str:
    """The form both sides of the decision are compared in: lowercase, IP literals canonical."""
    host = host.lower()
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(host))
    return host


def destinations_for(urls: Sequence[str]) -> tuple[Destination, ...]:
    """The host:port pairs of the admin's package index URLs, in order, without repeats."""
    found: dict[Destination, None] = {}
    for url in urls:
        try:
            parts = urlsplit(url.strip())
        except ValueError as error:
            raise ValueError(f"package index URL {url!r} is not a URL: {error}") from None
        if parts.scheme.lower() not in ("http", "https"):
            raise ValueError(f"package index URL {url!r} must start with http:// or https://")
        if not parts.hostname:
            raise ValueError(f"package index URL {url!r} has no host")
        try:
            port = parts.port
        except ValueError as error:
            raise ValueError(f"package index URL {url!r} has an invalid port: {error}") from None
        if port is None:
            port = 443 if parts.scheme.lower() == "https" else 80
        if port == 0:
            raise ValueError(f"package index URL {url!r} has port 0")
        host = _normal_host(parts.hostname)
        if not _HOST.fullmatch(host) and ":" not in host:
            raise ValueError(f"package index URL {url!r} has an invalid host {host!r}")
        found[Destination(host, port)] = None
    return tuple(found)


def relay_source() -> bytes:
    """The relay script that runs inside the sandbox (stdlib only, any Python 3.8+)."""
    return resources.files("frognano.sandbox").joinpath("egress_relay.py").read_bytes()


class BadRequest(ValueError):
    """A request head this proxy does not serve; never leaves it: it becomes the answer."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status


@dataclass
class RequestHead:
    """What a request asks for, and the head to send upstream once it is allowed."""

    method: str
    destination: Destination
    forward: bytes  # what goes upstream first: nothing for CONNECT, the rewritten head otherwise


def _split_authority(authority: str) -> Destination:
    """`host:port` or `[v6]:port` as written in a request; BadRequest if it is anything else."""
    host, colon, port = authority.rpartition(":")
    if not colon or not _PORT.fullmatch(port) or not 0 < int(port) < 65536:
        raise BadRequest(400, f"bad host:port {authority!r}")
    if host.startswith("[") and host.endswith("]"):
        try:
            return Destination(str(ipaddress.IPv6Address(host[1:-1])), int(port))
        except ValueError:
            raise BadRequest(400, f"bad IPv6 address in {authority!r}") from None
    if not _HOST.fullmatch(host):
        raise BadRequest(400, f"bad host in {authority!r}")
    return Destination(_normal_host(host), int(port))


def parse_head(head: bytes) -> RequestHead:
    """Read a proxy request head (ending in a blank line); BadRequest if it is malformed."""
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError:
        raise BadRequest(400, "the request head is not ASCII") from None
    lines = text[:-4].split("\r\n")
    # A lone CR or LF, or another control byte, could be read differently by the upstream server.
    if any(_CONTROL.search(line) for line in lines):
        raise BadRequest(400, "control characters in the request head")
    request_line, headers = lines[0], lines[1:]
    parts = request_line.split(" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _VERSION.fullmatch(parts[2]):
        raise BadRequest(400, "malformed request line")
    method, target, version = parts
    for line in headers:
        name, colon, _ = line.partition(":")
        if not colon or not _TOKEN.fullmatch(name):
            raise BadRequest(400, "malformed header line")
    if method.upper() == "CONNECT":
        return RequestHead("CONNECT", _split_authority(target), b"")
    if target.startswith("/") or target == "*":
        raise BadRequest(400, "this is a proxy: the request line must name http://host/path")
    try:
        url = urlsplit(target)
    except ValueError:
        raise BadRequest(400, f"bad URL {target!r}") from None
    if url.scheme.lower() != "http" or not url.netloc or "@" in url.netloc:
        raise BadRequest(400, "only http://host[:port]/path targets, or CONNECT, are served")
    default_port = "" if re.search(r":[0-9]+$", url.netloc) else ":80"
    destination = _split_authority(url.netloc.removesuffix(":") + default_port)
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    # Host names the approved destination (a proxy must replace it, RFC 9112 3.2.2), and the
    # upstream closes after one answer, so a client that reuses this connection for another
    # host (urllib3 does for http://) gets a fresh connection instead of the wrong server.
    kept = [line for line in headers if line.partition(":")[0].lower() not in {*_DROPPED, "host"}]
    rewritten = [f"{method} {path} {version}", f"Host: {url.netloc}", *kept, "Connection: close"]
    return RequestHead(method, destination, ("\r\n".join(rewritten) + "\r\n\r\n").encode("ascii"))


def _reason(error: BaseException, timeout: float) -> str:
    if isinstance(error, socket.gaierror):
        return f"cannot resolve the host name: {error.strerror or error}"
    if isinstance(error, TimeoutError):
        return f"no connection within {timeout:g}s"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    return (error.strerror if isinstance(error, OSError) else None) or str(error) or repr(error)


def _answer(status: int, text: str) -> bytes:
    body = (text + "\n").encode("utf-8")
    return (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode("ascii") + body


class EgressProxy:
    """Serves on `socket_path`; tunnels only to `allowed`, decided on names, never resolved.

    `refused` lists what the allowlist turned away (403), `failed` the approved destinations
    that could not be reached (502); `bytes_up` and `bytes_down` count what went each way.
    """

    def __init__(
        self,
        socket_path: Path,
        allowed: Sequence[Destination],
        *,
        connect_timeout: float = 30.0,
        head_timeout: float = 10.0,
    ) -> None:
        self.socket_path = socket_path
        self.allowed = frozenset(Destination(_normal_host(d.host), d.port) for d in allowed)
        self.connect_timeout = connect_timeout
        self.head_timeout = head_timeout
        self.refused: list[Attempt] = []
        self.failed: list[Attempt] = []
        self.bytes_up = 0
        self.bytes_down = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_unix_server(
            self._track, path=os.fspath(self.socket_path), limit=HEAD_LIMIT
        )
        # The sandbox may run as another uid; who can reach the socket is up to its folder.
        os.chmod(self.socket_path, 0o666)  # noqa: S103
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        self.socket_path.unlink(missing_ok=True)

    async def _track(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # start_server runs each client in a task of its own: __aexit__ cancels them.
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.CancelledError):
            # The client went away, or __aexit__ cancelled this task, which nothing awaits but
            # asyncio's own callback (3.12.1's raises on a cancelled task): end here, quietly.
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(self.head_timeout):
                raw = await reader.readuntil(b"\r\n\r\n")
            head = parse_head(raw)
        except BadRequest as error:
            return await _refuse(reader, writer, error.status, str(error))
        except asyncio.LimitOverrunError:
            text = f"the request head is over {HEAD_LIMIT} bytes"
            return await _refuse(reader, writer, 431, text)
        except asyncio.IncompleteReadError:
            return None  # closed before a whole head: nobody to answer
        except TimeoutError:
            text = f"no complete request head within {self.head_timeout:g}s"
            return await _refuse(reader, writer, 408, text)
        target = head.destination
        if target not in self.allowed:
            self.refused.append(Attempt(target.host, target.port, head.method))
            text = f"{target} is not an approved package index host"
            return await _refuse(reader, writer, 403, text)
        try:
            async with asyncio.timeout(self.connect_timeout):
                up_reader, up_writer = await asyncio.open_connection(
                    target.host, target.port, limit=HEAD_LIMIT
                )
        except (OSError, TimeoutError) as error:
            reason = _reason(error, self.connect_timeout)
            self.failed.append(Attempt(target.host, target.port, head.method, reason))
            return await _refuse(reader, writer, 502, f"cannot reach {target}: {reason}")
        try:
            if head.method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
            else:
                up_writer.write(head.forward)
                self.bytes_up += len(head.forward)
            heads = head.method != "CONNECT"
            await _splice(reader, writer, up_reader, up_writer, self, heads=heads)
        finally:
            up_writer.close()
            with contextlib.suppress(Exception):
                await up_writer.wait_closed()


async def _refuse(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, status: int, text: str
) -> None:
    writer.write(_answer(status, text))
    await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()
    # Closing with unread input resets the connection and can lose the answer on its way.
    with contextlib.suppress(TimeoutError, OSError, asyncio.LimitOverrunError, ValueError):
        async with asyncio.timeout(LINGER_SECONDS):
            left = LINGER_BYTES
            while left > 0 and (chunk := await reader.read(CHUNK)):
                left -= len(chunk)


async def _splice(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
    proxy: EgressProxy,
    *,
    heads: bool,
) -> None:
    """Copy both ways until both sides have finished; a reset on either ends both.

    `heads`: the upstream answers an HTTP request, whose answer is told to close.
    """

    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter, up: bool) -> None:
        if heads and not up:
            await _pass_heads(source, sink, proxy)
        while chunk := await source.read(CHUNK):
            sink.write(chunk)
            if up:
                proxy.bytes_up += len(chunk)
            else:
                proxy.bytes_down += len(chunk)
            await sink.drain()
        # Pass the half-close on: the other side may still be answering.
        if sink.can_write_eof():
            sink.write_eof()

    tasks = [
        asyncio.create_task(copy(reader, up_writer, up=True)),
        asyncio.create_task(copy(up_reader, writer, up=False)),
    ]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            task.result()  # a reset ends the other direction too
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _pass_heads(
    source: asyncio.StreamReader, sink: asyncio.StreamWriter, proxy: EgressProxy
) -> None:
    """Pass on the upstream's answer heads, the final one saying `Connection: close`.

    The connection leads to this one host:port only; a client told so opens a new one for
    its next request instead of sending it where it cannot go (or racing the upstream's close).
    """
    while True:
        try:
            head = await source.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as error:
            head = error.partial  # the upstream ended mid-head: pass on what it sent
        except asyncio.LimitOverrunError:
            return  # too long to rewrite: the plain copy passes it on as it is
        complete = head.endswith(b"\r\n\r\n") and head.startswith(b"HTTP/1.")
        status = head[9:12] if complete else b""
        # 1xx answers (100 Continue) come before the final one; 101 switches protocols.
        interim = status.startswith(b"1") and status != b"101"
        if status and not interim:
            lines = head[:-4].split(b"\r\n")
            kept = [line for line in lines[1:]
                    if line.partition(b":")[0].strip().lower() not in _DROPPED_ANSWER]  # fmt: skip
            head = b"\r\n".join([lines[0], *kept, b"Connection: close"]) + b"\r\n\r\n"
        sink.write(head)
        proxy.bytes_down += len(head)
        await sink.drain()
        if not interim:
            return
