"""The egress proxy and its relay, over real sockets: what gets out, what is refused, and why."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib.util
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from frognano.sandbox import egress
from frognano.sandbox.egress import (
    Attempt,
    BadRequest,
    Destination,
    EgressProxy,
    destinations_for,
    parse_head,
    relay_source,
)
from tests.sandbox.egress_clients import Site, exchange, fetch, fetch_reusing, read_all, tunnel

RELAY = Path(egress.__file__).with_name("egress_relay.py")


@pytest.fixture
def index() -> Iterator[Site]:
    with contextlib.closing(Site("index")) as site:
        yield site


@pytest.fixture
def elsewhere() -> Iterator[Site]:
    with contextlib.closing(Site("elsewhere")) as site:
        yield site


@pytest.fixture
def sock() -> Iterator[Path]:
    # AF_UNIX paths are limited to 108 bytes: pytest's tmp_path can be longer.
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="egress-"))
    yield folder / "proxy.sock"
    shutil.rmtree(folder)


@pytest.fixture
def relay(sock: Path) -> Iterator[int]:
    """The relay as a real process, as the sandbox runs it; yields its port once it is ready."""
    command = [sys.executable, str(RELAY), "0", str(sock)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stderr is not None
    try:
        line = process.stdout.readline()
        assert line.startswith("ready "), process.stderr.read()
        yield int(line.split()[1])
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()


@pytest.fixture(autouse=True)
def _no_proxy_bypass(monkeypatch: pytest.MonkeyPatch) -> None:
    # urllib skips its proxy for hosts in no_proxy, and 127.0.0.1 often is.
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)


def test_destinations_for_parses_admin_urls() -> None:
    assert destinations_for(
        [
            "https://PyPI.Internal/simple/",
            "http://mirror.example:8080/pypi/simple",
            "https://[::1]:8443/simple",
            "https://pypi.internal/other/",  # same host:port: listed once
            "http://10.0.0.5",
        ]
    ) == (
        Destination("pypi.internal", 443),
        Destination("mirror.example", 8080),
        Destination("::1", 8443),
        Destination("10.0.0.5", 80),
    )
    for bad, message in (
        ("ftp://pypi.internal/", "must start with http"),
        ("pypi.internal/simple", "must start with http"),
        ("https:///simple", "has no host"),
        ("https://pypi.internal:99999/", "invalid port"),
        ("https://[::1/simple", "is not a URL"),
        ("https://pypi index/", "invalid host"),
    ):
        with pytest.raises(ValueError, match=message) as caught:
            destinations_for([bad])
        assert repr(bad) in str(caught.value)


def test_parse_head_decides_on_names_as_written() -> None:
    connect = parse_head(b"CONNECT PyPI.Internal:443 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (connect.method, connect.destination) == ("CONNECT", Destination("pypi.internal", 443))
    v6 = parse_head(b"CONNECT [0:0::1]:8443 HTTP/1.1\r\n\r\n")
    assert v6.destination == Destination("::1", 8443)
    get = parse_head(
        b"GET http://Mirror.Example/simple/?q=1 HTTP/1.1\r\nHost: evil\r\n"
        b"Proxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n"
    )
    assert get.destination == Destination("mirror.example", 80)
    assert get.forward == (
        b"GET /simple/?q=1 HTTP/1.1\r\nHost: Mirror.Example\r\nAccept: */*\r\n"
        b"Connection: close\r\n\r\n"
    )
    for bad in (
        b"GARBAGE",
        b"GET /simple/ HTTP/1.1\r\nHost: pypi.internal",  # origin-form: no host
        b"CONNECT pypi.internal HTTP/1.1",  # no port
        b"CONNECT pypi.internal:99999 HTTP/1.1",
        b"CONNECT pypi.internal:443 HTTP/2.0",
        b"CONNECT [::1:443 HTTP/1.1",
        b"GET https://pypi.internal/ HTTP/1.1",
        b"GET http://user@pypi.internal/ HTTP/1.1",
        b"GET http://[::1/ HTTP/1.1",
        b"GET http://a b/ HTTP/1.1",
        b"GET http://pypi.internal/ HTTP/1.1\r\nno colon here",
        b"GET http://pypi.internal/ HTTP/1.1\r\nX: \xff",
        b"GET http://pypi.internal/ HTTP/1.1\r\nX: a\nHost: elsewhere",
        b"GET http://pypi.internal/ HTTP/1.1\r\n Folded: header",
    ):
        with pytest.raises(BadRequest):
            parse_head(bad + b"\r\n\r\n")


async def test_allowed_get_goes_through_relay_and_proxy(
    sock: Path, relay: int, index: Site
) -> None:
    async with EgressProxy(sock, [Destination("127.0.0.1", index.port)]) as proxy:
        assert stat.S_IMODE(sock.stat().st_mode) == 0o666
        url = f"http://127.0.0.1:{index.port}/simple/pkg/"
        headers = {"Proxy-Authorization": "Basic c2VjcmV0"}
        status, body = await asyncio.to_thread(fetch, relay, url, headers)
    assert (status, body) == (200, b"index /simple/pkg/")
    [(path, received)] = index.seen
    assert path == "/simple/pkg/"  # origin-form upstream
    assert "proxy-authorization" not in received
    assert received["host"] == f"127.0.0.1:{index.port}"
    assert proxy.refused == proxy.failed == []
    assert proxy.bytes_up > 0
    assert proxy.bytes_down > len(body)
    assert not sock.exists()


async def test_connect_tunnel_to_allowed_port(sock: Path, relay: int, index: Site) -> None:
    async with EgressProxy(sock, [Destination("127.0.0.1", index.port)]) as proxy:
        inner = b"GET /inside HTTP/1.0\r\nHost: x\r\n\r\n"
        head, rest = await asyncio.to_thread(tunnel, relay, f"127.0.0.1:{index.port}", inner)
    assert head == b"HTTP/1.1 200 Connection established"
    assert rest.endswith(b"\r\n\r\nindex /inside")
    assert proxy.bytes_up == len(inner)
    assert proxy.bytes_down == len(rest)


async def test_other_port_and_unlisted_literal_are_refused(
    sock: Path, relay: int, index: Site, elsewhere: Site
) -> None:
    async with EgressProxy(sock, [Destination("localhost", index.port)]) as proxy:
        head, body = await asyncio.to_thread(tunnel, relay, f"127.0.0.1:{elsewhere.port}", b"")
        url = f"http://127.0.0.1:{elsewhere.port}/x"
        status, text = await asyncio.to_thread(fetch, relay, url)
        # localhost is approved, its address is not: the decision never resolves a name
        literal, _ = await asyncio.to_thread(tunnel, relay, f"127.0.0.1:{index.port}", b"")
        named, _ = await asyncio.to_thread(tunnel, relay, f"LocalHost:{index.port}", b"")
    assert head.startswith(b"HTTP/1.1 403 ")
    assert body == f"127.0.0.1:{elsewhere.port} is not an approved package index host\n".encode()
    assert status == 403
    assert b"is not an approved package index host" in text
    assert literal.startswith(b"HTTP/1.1 403 ")
    assert named == b"HTTP/1.1 200 Connection established"
    assert proxy.refused == [
        Attempt("127.0.0.1", elsewhere.port, "CONNECT"),
        Attempt("127.0.0.1", elsewhere.port, "GET"),
        Attempt("127.0.0.1", index.port, "CONNECT"),
    ]
    assert elsewhere.seen == []
    assert proxy.failed == []


async def test_unreachable_approved_host_is_502(sock: Path, relay: int) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    allowed = [Destination("nonexistent.invalid", 443), Destination("127.0.0.1", closed)]
    async with EgressProxy(sock, allowed, connect_timeout=5) as proxy:
        unresolved, why = await asyncio.to_thread(tunnel, relay, "nonexistent.invalid:443", b"")
        refused, _ = await asyncio.to_thread(tunnel, relay, f"127.0.0.1:{closed}", b"")
        unlisted, _ = await asyncio.to_thread(tunnel, relay, "other.invalid:443", b"")
    assert unresolved.startswith(b"HTTP/1.1 502 ")
    assert why.startswith(b"cannot reach nonexistent.invalid:443: ")
    assert refused.startswith(b"HTTP/1.1 502 ")
    assert unlisted.startswith(b"HTTP/1.1 403 ")
    assert [(a.host, a.port, a.what) for a in proxy.failed] == [
        ("nonexistent.invalid", 443, "CONNECT"),
        ("127.0.0.1", closed, "CONNECT"),
    ]
    assert proxy.failed[0].detail in why.decode()
    assert proxy.failed[1].detail == "connection refused"
    assert proxy.refused == [Attempt("other.invalid", 443, "CONNECT")]


async def test_pipelined_request_for_another_host_stays_on_the_first(
    sock: Path, relay: int, elsewhere: Site
) -> None:
    received: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.append(await reader.read())  # everything, until the client half-closes
        writer.write(b"HTTP/1.0 200 OK\r\n\r\nrecorded")
        writer.close()

    first = await asyncio.start_server(record, "127.0.0.1", 0)
    port = first.sockets[0].getsockname()[1]
    allowed = [Destination("127.0.0.1", port), Destination("127.0.0.1", elsewhere.port)]
    second = f"GET http://127.0.0.1:{elsewhere.port}/stolen HTTP/1.1\r\nHost: x\r\n\r\n"
    requests = f"GET http://127.0.0.1:{port}/one HTTP/1.1\r\nHost: x\r\n\r\n{second}"
    try:
        async with EgressProxy(sock, allowed) as proxy:
            answer = await asyncio.to_thread(exchange, relay, requests.encode())
    finally:
        first.close()
        await first.wait_closed()
    assert answer == b"HTTP/1.0 200 OK\r\nConnection: close\r\n\r\nrecorded"
    [data] = received
    assert data.startswith(b"GET /one HTTP/1.1\r\n")
    assert data.endswith(second.encode())  # the second request reached the first host only
    assert elsewhere.seen == []
    assert proxy.refused == proxy.failed == []


async def test_a_reused_client_connection_reaches_each_host(
    sock: Path, relay: int, elsewhere: Site
) -> None:
    # urllib3 (pip) sends every http:// request through one pooled connection to the proxy.
    with contextlib.closing(Site("index", keep_alive=True)) as index:
        allowed = [Destination("127.0.0.1", index.port), Destination("127.0.0.1", elsewhere.port)]
        async with EgressProxy(sock, allowed):
            urls = [f"http://127.0.0.1:{index.port}/a", f"http://127.0.0.1:{elsewhere.port}/b"]
            answers = await asyncio.to_thread(fetch_reusing, relay, urls)
    # the index says keep-alive; the proxy, which will close, says otherwise
    assert answers == [("close", b"index /a"), ("close", b"elsewhere /b")]
    assert [path for path, _ in index.seen] == ["/a"]
    assert [path for path, _ in elsewhere.seen] == ["/b"]


async def test_malformed_and_oversized_heads_are_answered_and_survived(
    sock: Path, relay: int, index: Site
) -> None:
    async with EgressProxy(sock, [Destination("127.0.0.1", index.port)]) as proxy:
        garbage = await asyncio.to_thread(exchange, relay, b"\x16\x03\x01 hello\r\n\r\n")
        origin = await asyncio.to_thread(exchange, relay, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        big = f"GET http://127.0.0.1:{index.port}/ HTTP/1.1\r\nX: {'a' * 70_000}\r\n\r\n"
        oversized = await asyncio.to_thread(exchange, relay, big.encode())
        endless = await asyncio.to_thread(exchange, relay, b"CONNECT " + b"a" * 200_000)
        status, body = await asyncio.to_thread(fetch, relay, f"http://127.0.0.1:{index.port}/ok")
    assert garbage.startswith(b"HTTP/1.1 400 ")
    assert origin.startswith(b"HTTP/1.1 400 ")
    assert b"http://host/path" in origin
    assert oversized.startswith(b"HTTP/1.1 431 ")
    assert endless.startswith(b"HTTP/1.1 431 ")
    assert (status, body) == (200, b"index /ok")
    assert [path for path, _ in index.seen] == ["/ok"]
    assert proxy.refused == proxy.failed == []


async def test_silent_client_gets_408(sock: Path) -> None:
    async with EgressProxy(sock, [], head_timeout=0.2):
        reader, writer = await asyncio.open_unix_connection(str(sock))
        writer.write(b"CONNECT pypi")
        answer = await reader.read()
        writer.close()
        await writer.wait_closed()
    assert answer.startswith(b"HTTP/1.1 408 ")


async def test_many_concurrent_connections(sock: Path, relay: int, index: Site) -> None:
    async with EgressProxy(sock, [Destination("127.0.0.1", index.port)]):
        urls = [f"http://127.0.0.1:{index.port}/n{n}" for n in range(60)]

        def fetch_all() -> list[tuple[int, bytes]]:
            with ThreadPoolExecutor(max_workers=30) as pool:
                return list(pool.map(lambda url: fetch(relay, url), urls))

        answers = await asyncio.to_thread(fetch_all)
    assert answers == [(200, f"index /n{n}".encode()) for n in range(60)]


async def test_exit_ends_open_tunnels_and_removes_the_socket(
    sock: Path, relay: int, index: Site
) -> None:
    proxy = EgressProxy(sock, [Destination("127.0.0.1", index.port)])
    async with proxy:
        client = await asyncio.to_thread(socket.create_connection, ("127.0.0.1", relay), 10)
        with client:
            client.sendall(f"CONNECT 127.0.0.1:{index.port} HTTP/1.1\r\n\r\n".encode())
            established = await asyncio.to_thread(client.recv, 65536)
            assert established == b"HTTP/1.1 200 Connection established\r\n\r\n"
            await proxy.__aexit__(None, None, None)  # the tunnel is still open
            assert await asyncio.to_thread(read_all, client) == b""
        assert not sock.exists()
    # the context's own exit came second and was harmless
    assert not sock.exists()


def run_relay(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(RELAY), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


def test_relay_reports_a_taken_port_and_bad_usage(sock: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = run_relay(str(port), str(sock))
    assert (run.returncode, run.stdout) == (1, "")
    assert f"egress relay: cannot listen on 127.0.0.1:{port}: " in run.stderr
    usage = run_relay("http")
    assert usage.returncode == 2
    assert "usage: egress_relay.py PORT SOCKET_PATH" in usage.stderr
    long = run_relay("0", "/tmp/" + "s" * 110)
    assert long.returncode == 2
    assert "the socket path is over 107 bytes" in long.stderr


def test_relay_without_a_proxy_answers_502(relay: int) -> None:
    answer = exchange(relay, b"CONNECT pypi.internal:443 HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 502 Bad Gateway\r\n")
    assert answer.endswith(b"\r\n\r\nthe sandbox's egress proxy is not running\n")


def test_relay_source_is_the_script_and_imports_quietly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = relay_source()
    assert source == RELAY.read_bytes()
    ast.parse(source, feature_version=(3, 8))  # whatever Python the sandbox has
    spec = importlib.util.spec_from_file_location("egress_relay_probe", RELAY)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.__doc__
    assert capsys.readouterr() == ("", "")
    assert callable(module.main)
