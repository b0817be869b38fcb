"""Throughput and latency of the webhook receiver, next to a bare FastAPI endpoint.

Starts the receiver in a separate process (uvicorn, one process, configured exactly as
`frognano serve` runs it: `frognano.cli.serve.run_server`), on loopback, with the real Redis,
and drives it from this process with signed `issues.labeled` deliveries, each with its own
delivery id and issue (so each one is verified, parsed, routed and queued as a run), at a
fixed concurrency over keep-alive connections (httpx.AsyncClient). Then does the same against
an endpoint that only returns 202, served the same way, as the baseline. Prints requests/s and
p50/p99 latency of each and, last, one JSON line with the figures. Redis keys are written under
a unique prefix and queue and removed at the end.

    python benchmarks/webhook_load.py [--requests 5000] [--concurrency 16] [--redis-url URL]

On a machine with two cores or more the server is pinned to one core and this driver to
another (`--no-pin` turns that off), so the server gets one core, as one worker process would.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
SECRET_ENV = "FNBENCH_WEBHOOK_SECRET"  # noqa: S105 - a variable name; not FROGNANO_*
P99_TARGET_MS = 150.0
RPS_TARGET = 500.0


# The server side (run as a child process) -----------------------------------------------------


def serve(kind: str, port: int, redis_url: str, prefix: str, log_file: str) -> None:
    from fastapi import FastAPI  # noqa: PLC0415
    from fastapi.responses import Response  # noqa: PLC0415
    from pydantic import SecretStr  # noqa: PLC0415

    from frognano.app.intake import IntakeQueue  # noqa: PLC0415
    from frognano.app.web.receiver import WEBHOOK_PATH, create_app  # noqa: PLC0415
    from frognano.cli.serve import run_server  # noqa: PLC0415
    from frognano.log import configure_logging  # noqa: PLC0415
    from frognano.settings import Settings  # noqa: PLC0415

    # As in production: one JSON log line per delivery (to a file here, not a pipe).
    configure_logging("json", "INFO", stream=open(log_file, "a", encoding="utf-8"))  # noqa: SIM115
    if kind == "bare":
        app = FastAPI()

        @app.post(WEBHOOK_PATH)
        async def bare() -> Response:
            return Response(b'{"status":"queued"}', status_code=202)

    else:
        settings = Settings(
            webhook_secret=SecretStr(os.environ[SECRET_ENV]),
            redis_url=redis_url,
            policy_dir=REPO_ROOT / "policies",
        )
        queue_for = partial(IntakeQueue, key_prefix=prefix, queue_name=f"{prefix}queue")
        app = create_app(settings, queue_for=queue_for)
    run_server(app, "127.0.0.1", port)


# The driver -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def payload(repo_id: int, number: int) -> dict[str, Any]:
    """An `issues.labeled` delivery about the size of GitHub's (a few kB of URLs and ids)."""
    repo_urls = {
        f"{name}_url": f"https://api.github.com/repos/acme/calculator/{name}{{/id}}"
        for name in (
            "archive assignees blobs branches collaborators comments commits compare contents "
            "contributors deployments downloads events forks git_commits git_refs git_tags "
            "hooks issue_comment issue_events issues keys labels languages merges milestones "
            "notifications pulls releases stargazers statuses subscribers subscription tags "
            "teams trees"
        ).split()
    }
    user = {
        "login": "alice",
        "id": 1001,
        "node_id": "MDQ6VXNlcjEwMDE=",
        "type": "User",
        "site_admin": False,
        "html_url": "https://github.com/alice",
        "url": "https://api.github.com/users/alice",
    }
    return {
        "action": "labeled",
        "issue": {
            "url": f"https://api.github.com/repos/acme/calculator/issues/{number}",
            "id": 5_000_000 + number,
            "node_id": "I_kwDOAbCdEf",
            "number": number,
            "title": "Division by zero crashes the calculator",
            "user": user,
            "labels": [{"id": 1, "name": "frognano", "color": "0e8a16", "default": False}],
            "state": "open",
            "locked": False,
            "comments": 0,
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "author_association": "MEMBER",
            "body": "Steps to reproduce:\n\n1. open the calculator\n2. divide by zero\n" * 8,
        },
        "label": {"id": 1, "name": "frognano", "color": "0e8a16", "default": False},
        "repository": {
            "id": repo_id,
            "node_id": "R_kgDOAbCdEf",
            "name": "calculator",
            "full_name": "acme/calculator",
            "private": True,
            "owner": {**user, "login": "acme", "type": "Organization"},
            "default_branch": "main",
            **repo_urls,
        },
        "organization": {"login": "acme", "id": 2002},
        "sender": user,
        "installation": {"id": 42, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI="},
    }


def deliveries(secret: bytes, count: int, repo_id: int) -> list[tuple[bytes, dict[str, str]]]:
    made = []
    for number in range(1, count + 1):
        body = json.dumps(payload(repo_id, number)).encode()
        made.append(
            (
                body,
                {
                    "Content-Type": "application/json",
                    "User-Agent": "GitHub-Hookshot/bench",
                    "X-GitHub-Event": "issues",
                    "X-GitHub-Delivery": f"bench-{repo_id}-{number}",
                    "X-Hub-Signature-256": "sha256="
                    + hmac.new(secret, body, hashlib.sha256).hexdigest(),
                },
            )
        )
    return made


def _figures(
    latencies: list[float], wall: float, codes: dict[int, int], statuses: dict[str, int]
) -> dict[str, Any]:
    latencies.sort()
    return {
        "requests": len(latencies),
        "rps": round(len(latencies) / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
        "max_ms": round(latencies[-1] * 1000, 2),
        "codes": {str(k): v for k, v in sorted(codes.items())},
        "statuses": statuses,
    }


def _count(table: dict[Any, int], key: Any) -> None:
    table[key] = table.get(key, 0) + 1


async def drive_httpx(
    url: str, work: list[tuple[bytes, dict[str, str]]], concurrency: int
) -> dict[str, Any]:
    """httpx.AsyncClient over `concurrency` keep-alive connections."""
    latencies: list[float] = []
    codes: dict[int, int] = {}
    statuses: dict[str, int] = {}
    pending = list(reversed(work))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:

        async def one_client() -> None:
            while pending:
                body, headers = pending.pop()
                started = time.perf_counter()
                reply = await client.post("/webhooks/github", content=body, headers=headers)
                latencies.append(time.perf_counter() - started)
                _count(codes, reply.status_code)
                _count(statuses, reply.json().get("status", "?"))

        started = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    return _figures(latencies, wall, codes, statuses)


async def drive_raw(
    url: str, work: list[tuple[bytes, dict[str, str]]], concurrency: int
) -> dict[str, Any]:
    """The same requests, pre-encoded, on `concurrency` keep-alive connections of plain
    asyncio streams: a client that costs tens of microseconds per request, so that the
    server, not the driver, is what is measured."""
    host, port = url.removeprefix("http://").split(":")
    encoded = []
    for body, headers in work:
        head = f"POST /webhooks/github HTTP/1.1\r\nHost: {host}:{port}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        head += f"Content-Length: {len(body)}\r\n\r\n"
        encoded.append(head.encode() + body)
    pending = list(reversed(encoded))
    latencies: list[float] = []
    codes: dict[int, int] = {}
    statuses: dict[str, int] = {}

    async def one_connection() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            while pending:
                request = pending.pop()
                started = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = await reader.readexactly(length)
                latencies.append(time.perf_counter() - started)
                _count(codes, int(head[9:12]))
                _count(statuses, json.loads(body).get("status", "?"))
        finally:
            writer.close()
            await writer.wait_closed()

    started = time.perf_counter()
    await asyncio.gather(*(one_connection() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    return _figures(latencies, wall, codes, statuses)


DRIVERS = {"raw": drive_raw, "httpx": drive_httpx}


def start(kind: str, args: argparse.Namespace, prefix: str, log_file: str) -> tuple[Any, str]:
    port = free_port()
    command = [
        sys.executable,
        __file__,
        "--serve",
        kind,
        "--port",
        str(port),
        "--redis-url",
        args.redis_url,
        "--prefix",
        prefix,
        "--log-file",
        log_file,
    ]
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if args.pin and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(proc.pid, {0})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the {kind} server exited: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        try:
            httpx.get(f"{url}/healthz", timeout=1)
        except httpx.TransportError:
            time.sleep(0.05)
        else:
            return proc, url
    proc.kill()
    raise SystemExit(f"the {kind} server did not start")


def stop(proc: Any) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def cleanup(redis_url: str, prefix: str, repo_id: int) -> int:
    from redis.asyncio import Redis  # noqa: PLC0415

    redis = Redis.from_url(redis_url)
    removed = 0
    try:
        for pattern in (f"{prefix}*", f"arq:*:run:{repo_id}:*"):
            batch: list[bytes] = []
            async for key in redis.scan_iter(pattern, count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    removed += await redis.unlink(*batch)
                    batch = []
            if batch:
                removed += await redis.unlink(*batch)
    finally:
        await redis.aclose()
    return removed


async def queue_length(redis_url: str, prefix: str) -> int:
    from redis.asyncio import Redis  # noqa: PLC0415

    redis = Redis.from_url(redis_url)
    try:
        return int(await redis.zcard(f"{prefix}queue"))
    finally:
        await redis.aclose()


def measure(kind: str, args: argparse.Namespace, prefix: str, log_file: str) -> dict[str, Any]:
    secret = os.environ[SECRET_ENV].encode()
    repo_id = 10**9 + secrets.randbelow(10**9)
    proc, url = start(kind, args, prefix, log_file)
    try:
        drive = DRIVERS[args.client]
        warm = deliveries(secret, args.warmup, repo_id + 1)
        asyncio.run(drive(url, warm, args.concurrency))
        work = deliveries(secret, args.requests, repo_id)
        result = asyncio.run(drive(url, work, args.concurrency))
    finally:
        stop(proc)
    if kind == "app":
        result["jobs_queued"] = asyncio.run(queue_length(args.redis_url, prefix))
        result["keys_removed"] = asyncio.run(cleanup(args.redis_url, prefix, repo_id))
        asyncio.run(cleanup(args.redis_url, prefix, repo_id + 1))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--client",
        choices=tuple(DRIVERS),
        default="raw",
        help="raw: pre-encoded HTTP/1.1 on asyncio streams (default); httpx: httpx.AsyncClient, "
        "which needs about a core for 400 requests/s and so measures itself on a small machine",
    )
    parser.add_argument("--no-pin", dest="pin", action="store_false")
    parser.add_argument("--serve", choices=("app", "bare"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--prefix", help=argparse.SUPPRESS)
    parser.add_argument("--log-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, args.redis_url, args.prefix, args.log_file)
        return

    os.environ.setdefault(SECRET_ENV, secrets.token_hex(16))
    if args.pin and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {1})
    prefix = f"fnbench:{secrets.token_hex(6)}:"
    with tempfile.TemporaryDirectory() as scratch:
        log_file = str(Path(scratch) / "server.log")
        bare = measure("bare", args, prefix, log_file)
        app = measure("app", args, prefix, log_file)
        log_lines = sum(1 for _ in open(log_file, encoding="utf-8"))  # noqa: SIM115
    for name, figures in (("bare 202 endpoint", bare), ("webhook receiver", app)):
        print(
            f"{name:18} {figures['rps']:8.1f} req/s   p50 {figures['p50_ms']:7.2f} ms   "
            f"p99 {figures['p99_ms']:7.2f} ms   codes {figures['codes']}"
        )
    print(
        f"receiver/bare throughput {app['rps'] / bare['rps']:.2f}; jobs queued "
        f"{app['jobs_queued']} of {args.requests} + {args.warmup} warm-up deliveries; "
        f"{app['keys_removed']} Redis keys removed; "
        f"{log_lines} server log lines"
    )
    met = app["rps"] >= RPS_TARGET and app["p99_ms"] < P99_TARGET_MS
    print(
        json.dumps(
            {
                "benchmark": "webhook_load",
                "requests": args.requests,
                "concurrency": args.concurrency,
                "client": args.client,
                "pinned": args.pin and (os.cpu_count() or 1) >= 2,
                "cpus": os.cpu_count(),
                "app": app,
                "bare": bare,
                "throughput_ratio": round(app["rps"] / bare["rps"], 3),
                "target": {"rps": RPS_TARGET, "p99_ms": P99_TARGET_MS, "met": met},
            }
        )
    )


if __name__ == "__main__":
    main()
