"""Real servers and clients for the egress tests: an HTTP site, raw sockets, urllib."""

from __future__ import annotations

import http.client
import socket
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Site:
    """A real HTTP server on 127.0.0.1 that answers `NAME PATH` and records what it was sent."""

    def __init__(self, name: str, *, keep_alive: bool = False) -> None:
        seen: list[tuple[str, dict[str, str]]] = []

        class Handler(BaseHTTPRequestHandler):
            # keep_alive: an HTTP/1.1 server that keeps connections open whatever it is asked
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def do_GET(self) -> None:
                seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                body = f"{name} {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                if keep_alive:
                    self.send_header("Connection", "keep-alive")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.seen = seen
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port: int = self.server.server_address[1]
        # a short poll keeps shutdown() from waiting half a second per test
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,))
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def exchange(port: int, data: bytes) -> bytes:
    """Send `data` to the relay, half-close, and read the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(data)
        client.shutdown(socket.SHUT_WR)
        return read_all(client)


def read_all(client: socket.socket) -> bytes:
    chunks = []
    while chunk := client.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def tunnel(port: int, authority: str, inner: bytes) -> tuple[bytes, bytes]:
    """CONNECT through the relay, then speak `inner` in the tunnel; the answer head and rest."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n".encode())
        answer = b""
        while b"\r\n\r\n" not in answer and (chunk := client.recv(65536)):
            answer += chunk
        head, _, rest = answer.partition(b"\r\n\r\n")
        client.sendall(inner)  # after a refusal the proxy reads on and drops it
        client.shutdown(socket.SHUT_WR)
        return head, rest + read_all(client)


def fetch(relay: int, url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    proxies = {"http": f"http://127.0.0.1:{relay}"}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxies))
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 - test URLs
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read()


def fetch_reusing(relay: int, urls: list[str]) -> list[tuple[str | None, bytes]]:
    """GET each URL through one HTTPConnection to the relay, as a pooling client does."""
    connection = http.client.HTTPConnection("127.0.0.1", relay, timeout=10)
    answers = []
    try:
        for url in urls:
            connection.request("GET", url)
            with connection.getresponse() as response:
                answers.append((response.getheader("Connection"), response.read()))
    finally:
        connection.close()
    return answers
