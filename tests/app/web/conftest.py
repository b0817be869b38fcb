"""Fixtures for the webhook receiver: a private corner of the real Redis, signed deliveries,
and the app served by a real uvicorn on a free loopback port."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import socket
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from redis.asyncio import Redis
from redis.exceptions import RedisError

from frognano.app.intake import IntakeQueue
from frognano.app.web.receiver import create_app
from frognano.policy.store import PolicyStore
from frognano.settings import Settings

# The machine's Redis (.ci/run starts one when none answers). Not FROGNANO_*: reserved.
REDIS_URL = os.environ.get("FNTEST_REDIS_URL", "redis://127.0.0.1:6379/0")
SECRET = "It's a Secret to Everybody"
REPO_ROOT = Path(__file__).resolve().parents[3]
POLICIES = REPO_ROOT / "policies"


@dataclass
class Space:
    """Keys of one test: everything under `prefix`, and arq keys whose job ids contain
    `ident` (used as the repository id and the installation id of every delivery)."""

    redis: Redis
    prefix: str
    queue_name: str
    ident: int
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    async def queued(self) -> list[str]:
        return [m.decode() for m in await self.redis.zrange(self.queue_name, 0, -1)]

    async def own_keys(self) -> list[str]:
        return sorted([k.decode() async for k in self.redis.scan_iter(f"{self.prefix}*")])

    async def job(self, job_id: str) -> dict[str, Any]:
        raw = await self.redis.get(f"arq:job:{job_id}")
        assert raw is not None, f"no job {job_id}"
        data: dict[str, Any] = json.loads(raw)
        return data

    async def cleanup(self) -> None:
        keys = [k async for k in self.redis.scan_iter(f"{self.prefix}*")]
        keys += [k async for k in self.redis.scan_iter(f"arq:*:{self.ident}:*")]
        if keys:
            await self.redis.delete(*keys)
        aborts = [m async for m, _ in self.redis.zscan_iter("arq:abort", f"*:{self.ident}:*")]
        if aborts:
            await self.redis.zrem("arq:abort", *aborts)


@pytest.fixture
async def space() -> AsyncIterator[Space]:
    redis = Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        await redis.ping()
    except (RedisError, OSError) as exc:
        await redis.aclose()
        pytest.skip(f"no Redis at {REDIS_URL}: {exc}")
    prefix = f"fntest:{uuid.uuid4().hex}:"
    found = Space(redis, prefix, f"{prefix}queue", 10**9 + secrets.randbelow(10**9))
    try:
        yield found
    finally:
        await found.cleanup()
        await redis.aclose()


def free_port() -> int:
    """A loopback port where nothing listens (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def make_app(
    space: Space,
    *,
    policy_dir: Path = POLICIES,
    policies: PolicyStore | None = None,
    redis_url: str = REDIS_URL,
    max_body_bytes: int = 64 * 1024,
    secret: str = SECRET,
) -> FastAPI:
    """The receiver as `frognano serve` builds it, with the test's Redis keys and metrics.
    `policies`: a store the test reloads itself, instead of the one read from `policy_dir`."""
    settings = Settings(
        webhook_secret=SecretStr(secret),
        webhook_max_body_bytes=max_body_bytes,
        redis_url=redis_url,
        policy_dir=policy_dir,
    )
    return create_app(
        settings,
        policies=policies,
        registry=space.registry,
        queue_for=partial(IntakeQueue, key_prefix=space.prefix, queue_name=space.queue_name),
    )


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """Serve `app` with uvicorn in a thread; yields its base URL."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started or not thread.is_alive():
                break
            threading.Event().wait(0.01)
        assert server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not stop"


# Deliveries ----------------------------------------------------------------------------------


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def delivery_headers(
    body: bytes, event: str, delivery: str | None = None, *, signature: str | None = "sign"
) -> dict[str, str]:
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/test",
    }
    if signature == "sign":
        headers["X-Hub-Signature-256"] = sign(body)
    elif signature is not None:
        headers["X-Hub-Signature-256"] = signature
    return headers


def issue_event(
    space: Space,
    action: str = "labeled",
    *,
    number: int = 7,
    label: str = "frognano",
    sender: str = "alice",
    body: str = "The calculator divides by zero.",
) -> dict[str, Any]:
    return {
        "action": action,
        "issue": {
            "number": number,
            "title": "Division by zero",
            "body": body,
            "state": "open",
            "user": {"login": "carol", "type": "User"},
        },
        "label": {"name": label},
        "repository": {"id": space.ident, "full_name": "acme/calculator"},
        "sender": {"login": sender, "type": "User"},
        "installation": {"id": space.ident},
    }


def review_event(space: Space, *, number: int = 12) -> dict[str, Any]:
    repo = {"id": space.ident, "full_name": "acme/calculator"}
    return {
        "action": "submitted",
        "review": {"id": 1, "state": "approved", "commit_id": "a" * 40, "user": {"login": "bob"}},
        "pull_request": {
            "number": number,
            "head": {"ref": "frognano/issue-7", "sha": "a" * 40, "repo": repo},
            "user": {"login": "frognano[bot]", "type": "Bot"},
        },
        "repository": repo,
        "sender": {"login": "bob", "type": "User"},
        "installation": {"id": space.ident},
    }


def installation_event(space: Space) -> dict[str, Any]:
    return {
        "action": "new_permissions_accepted",
        "installation": {"id": space.ident},
        "sender": {"login": "admin", "type": "User"},
    }
