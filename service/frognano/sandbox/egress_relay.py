"""Inside the sandbox: relays TCP on 127.0.0.1:PORT to the egress proxy's Unix socket."""

# The sandbox's network namespace has only `lo`; FrogNano's proxy listens on a Unix socket
# bound in from the host. pip is told HTTP(S)_PROXY=http://127.0.0.1:PORT and this script
# carries each connection to that socket unchanged: what may go out is decided by the proxy,
# never here. It runs with whatever Python the sandbox has, so it uses the standard library
# only and Python 3.8 syntax. Usage: `python egress_relay.py PORT SOCKET_PATH` (PORT 0 picks
# a free port); it prints `ready PORT` once listening and runs until it is killed.

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import time

CHUNK = 64 * 1024
LINGER_SECONDS = 2.0
USAGE = "usage: egress_relay.py PORT SOCKET_PATH"
# Said to the client when the proxy's socket cannot be reached: pip shows the text.
_BODY = b"the sandbox's egress proxy is not running\n"
UNREACHABLE = (
    b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: " + str(len(_BODY)).encode() + b"\r\nConnection: close\r\n\r\n" + _BODY
)


def _copy(source: socket.socket, sink: socket.socket, done: threading.Semaphore) -> None:
    """Copy until `source` ends, then half-close `sink` so the other way can still finish."""
    try:
        while True:
            chunk = source.recv(CHUNK)
            if not chunk:
                break
            sink.sendall(chunk)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
    done.release()


def _serve(client: socket.socket, socket_path: str) -> None:
    """Carry one accepted connection to the proxy; close both once both ways are done."""
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        with contextlib.suppress(OSError):
            client.sendall(UNREACHABLE)
            client.shutdown(socket.SHUT_WR)
            # Closing with the request unread would reset the connection and lose the answer.
            deadline = time.monotonic() + LINGER_SECONDS
            client.settimeout(LINGER_SECONDS)
            while client.recv(CHUNK) and time.monotonic() < deadline:
                pass
        client.close()
        upstream.close()
        return
    done = threading.Semaphore(0)
    threading.Thread(target=_copy, args=(client, upstream, done), daemon=True).start()
    _copy(upstream, client, done)
    done.acquire()
    done.acquire()
    client.close()
    upstream.close()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[0].isdigit() or int(argv[0]) > 65535:
        sys.stderr.write(USAGE + "\n")
        return 2
    port, socket_path = int(argv[0]), argv[1]
    if len(os.fsencode(socket_path)) > 107:  # sun_path holds 108 bytes with its NUL
        sys.stderr.write(f"egress relay: the socket path is over 107 bytes: {socket_path}\n")
        return 2
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
    except OSError as error:
        reason = error.strerror or error
        sys.stderr.write(f"egress relay: cannot listen on 127.0.0.1:{port}: {reason}\n")
        return 1
    sys.stdout.write(f"ready {listener.getsockname()[1]}\n")
    sys.stdout.flush()
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            # Out of descriptors, or a client gone before accept: the relay must stay up.
            time.sleep(0.05)
            continue
        threading.Thread(target=_serve, args=(client, socket_path), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
