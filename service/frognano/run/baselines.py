"""Baseline runs kept for reuse: one per base tree, setup, test command and environment."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, cast

from redis.asyncio import Redis

from frognano.run.outcomes import Outcome, TestRun
from frognano.sandbox.base import Sandbox

CACHE_VERSION = 2
"""2: a run's output and messages name the sandbox's host folders by placeholders
(testrun.py); a version-1 entry holds them as they were, so it is never reused."""
REDIS_PREFIX = "frognano:baseline:"
REDIS_TTL_SECONDS = 7 * 24 * 3600

# What tests in this sandbox see of Python: the interpreter and every installed distribution.
_ENVIRONMENT = r"""
import importlib.metadata as m, sys
print(sys.version)
print(sys.executable)
for line in sorted(f"{d.metadata['Name']}=={d.version}" for d in m.distributions()):
    print(line)
"""


class BaselineCache(Protocol):
    async def get(self, key: str) -> bytes | None: ...

    async def put(self, key: str, value: bytes) -> None: ...


async def environment_digest(sandbox: Sandbox) -> str:
    """A digest of the Python the tests will use, read in a fresh sandbox before anything
    of the repository is in it (so nothing of the repository's can shape it)."""
    result = await sandbox.exec(
        "python3 -I -c " + _shell_quote(_ENVIRONMENT), cwd="/", timeout=120, split_stderr=True
    )
    seen = (result.stdout or "") if result.ok else f"no python3 ({result.exit_code})"
    return hashlib.sha256(seen.encode()).hexdigest()


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def cache_key(parts: Mapping[str, object]) -> str:
    """The key of a baseline: sha256 of every input that can change its outcome."""
    text = json.dumps({"v": CACHE_VERSION, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def dump_run(run: TestRun) -> bytes:
    return json.dumps(
        {
            "v": CACHE_VERSION,
            "command": run.command,
            "exit_code": run.exit_code,
            "duration": run.duration,
            "output": run.output,
            "outcomes": dict(run.outcomes),
            "crashes": dict(run.crashes),
            "collection_errors": dict(run.collection_errors),
        }
    ).encode()


def load_run(data: bytes) -> TestRun | None:
    """A cached baseline, or None when the entry is unreadable or from another version."""
    try:
        value = json.loads(data)
        if not isinstance(value, dict) or value.get("v") != CACHE_VERSION:
            return None
        return TestRun(
            role="baseline",
            command=str(value["command"]),
            exit_code=None if value["exit_code"] is None else int(value["exit_code"]),
            timed_out=False,
            duration=float(value["duration"]),
            output=str(value["output"]),
            outcomes=cast(dict[str, Outcome], _strings(value["outcomes"])),
            crashes=_strings(value["crashes"]),
            collection_errors=_strings(value["collection_errors"]),
            cached=True,
        )
    except (ValueError, KeyError, TypeError):
        return None


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError("not a mapping")
    return {str(k): str(v) for k, v in value.items()}


class FileCache:
    """Baselines as files under a folder of the user's (`frognano solve`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    async def get(self, key: str) -> bytes | None:
        try:
            return await asyncio.to_thread(self._path(key).read_bytes)
        except OSError:
            return None

    async def put(self, key: str, value: bytes) -> None:
        await asyncio.to_thread(self._write, self._path(key), value)

    @staticmethod
    def _write(path: Path, value: bytes) -> None:
        # A cache that cannot be written is no cache, not a failed run.
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(value)
            os.replace(temporary, path)


class RedisCache:
    """Baselines in Redis, shared by every worker, kept for a week."""

    def __init__(self, redis: Redis, ttl: int = REDIS_TTL_SECONDS) -> None:
        self.redis, self.ttl = redis, ttl

    async def get(self, key: str) -> bytes | None:
        value = await self.redis.get(REDIS_PREFIX + key)
        return value if isinstance(value, bytes) else None

    async def put(self, key: str, value: bytes) -> None:
        await self.redis.set(REDIS_PREFIX + key, value, ex=self.ttl)
