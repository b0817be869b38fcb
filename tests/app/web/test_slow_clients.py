"""`frognano serve` against slow clients: headers and bodies that trickle in are cut off at
their deadlines, too many connections get 503, and ordinary deliveries keep being answered."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.app.web.conftest import SECRET, delivery_headers, free_port
from tests.app.web.test_serve import environment, wait_for_health
from tests.app.webhooks import payloads

DEADLINE = 1.0  # seconds, for headers and for bodies
TRICKLE_FOR = 30.0  # how long each slow client would go on if nobody cut it off


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int, subprocess.Popen[str]]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "frognano", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env={
            **environment(),
            "FROGNANO_WEBHOOK_SECRET": SECRET,
            "FROGNANO_WEBHOOK_HEADER_TIMEOUT_SECONDS": str(DEADLINE),
            "FROGNANO_WEBHOOK_BODY_TIMEOUT_SECONDS": str(DEADLINE),
            "FROGNANO_WEBHOOK_MAX_CONNECTIONS": "6",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, proc)
        yield url, port, proc
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


class Trickler:
    """A client that sends `head` at once, then one byte of `drip` every 0.2 s, and records
    when the server closed the connection and what it answered."""

    def __init__(self, port: int, head: bytes, drip: bytes) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.settimeout(0.2)
        self.head, self.drip = head, drip
        self.answer = b""
        self.closed_after: float | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Trickler:
        self.thread.start()
        return self

    def _run(self) -> None:
        started = time.monotonic()
        try:
            self.sock.sendall(self.head)
            for byte in self.drip * 1000:
                if time.monotonic() - started > TRICKLE_FOR:
                    return
                try:
                    chunk = self.sock.recv(65536)
                except TimeoutError:
                    chunk = None
                if chunk == b"":
                    self.closed_after = time.monotonic() - started
                    return
                if chunk:
                    self.answer += chunk
                self.sock.sendall(bytes([byte]))
        except OSError:  # reset or broken pipe: the server closed it
            self.closed_after = time.monotonic() - started
        finally:
            self.sock.close()

    def wait(self) -> None:
        self.thread.join(TRICKLE_FOR + 5)


def _ping_delivery(url: str) -> httpx.Response:
    body = json.dumps(payloads.ping()).encode()
    return httpx.post(
        f"{url}/webhooks/github", content=body, headers=delivery_headers(body, "ping"), timeout=5
    )


def test_slow_headers_and_bodies_are_cut_off_while_deliveries_are_answered(
    server: tuple[str, int, subprocess.Popen[str]],
) -> None:
    url, port, _ = server
    headers = Trickler(port, b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\n", b"X-Slow: aaaa\r\n")
    body = Trickler(
        port,
        b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100000\r\n\r\n",
        b'{"zen": "slow"}',
    )
    slow = [headers.start(), body.start()]
    answered = []
    while any(client.thread.is_alive() for client in slow):
        answered.append(_ping_delivery(url).status_code)  # not held up by the slow ones
        time.sleep(0.1)
    for client in slow:
        client.wait()
    assert set(answered) == {200}
    # Both were cut off, long before they would have stopped of their own accord.
    assert headers.closed_after is not None
    assert body.closed_after is not None
    assert max(headers.closed_after, body.closed_after) < TRICKLE_FOR / 2
    assert headers.answer == b""  # a half-sent request gets no answer, just a close
    assert body.answer.startswith(b"HTTP/1.1 408 ")
    assert b"did not arrive within 1 s" in body.answer


def test_too_many_connections_get_503_until_idle_ones_are_cut(
    server: tuple[str, int, subprocess.Popen[str]],
) -> None:
    url, port, _ = server
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(6)]
    try:
        time.sleep(0.2)
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 503
        for sock in idle:  # the header deadline frees them
            sock.settimeout(10)
            assert sock.recv(1) == b""
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
    finally:
        for sock in idle:
            sock.close()
