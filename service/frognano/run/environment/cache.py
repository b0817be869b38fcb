"""Built environments on this host: one folder per key, built once, shared, evicted LRU."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import re
import shutil
import stat
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from frognano.errors import ConfigError, EnvironmentBuildError
from frognano.log import get_logger

log = get_logger(__name__)

_KEY = re.compile(r"^[0-9a-f]{64}$")
# How often a run waiting for another run's build (or for an eviction) looks again. Waiting is
# on a lock, not on time: this only bounds how soon a released lock is noticed.
_LOCK_POLL_SECONDS = 0.2


@dataclass(frozen=True)
class CachedEnvironment:
    """An environment ready to bind: its folder, and whether this run found it already built."""

    key: str
    path: Path
    hit: bool
    build_seconds: float
    """How long its build took (this run's, or the run that built it)."""
    size_bytes: int


Builder = Callable[[Path], Awaitable[None]]
"""Fills an empty staging folder with the environment (in a sandbox); raises on failure."""


class EnvironmentCache:
    """Environments under `root`, keyed by the digest of everything that decides them.

    Two flock(2) locks per key: `KEY.build`, held exclusively while one process builds, so
    concurrent runs with the same key build once; and `KEY.use`, held shared by every run
    using the environment and taken exclusively (without waiting) only to delete it.
    """

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes

    def _entry(self, key: str) -> Path:
        if not _KEY.match(key):
            raise ValueError(f"not an environment key: {key!r}")
        return self.root / key

    def _ready(self, key: str) -> dict[str, object] | None:
        try:
            meta = json.loads((self.root / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return meta if isinstance(meta, dict) and self._entry(key).is_dir() else None

    @contextlib.asynccontextmanager
    async def use(self, key: str, build: Builder) -> AsyncIterator[CachedEnvironment]:
        """The environment for `key`, built by `build` unless it exists; it cannot be evicted
        until the block ends."""
        entry = self._entry(key)
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o755)
        except OSError as exc:
            raise ConfigError(
                f"cannot create the environment cache {self.root}: {exc.strerror}; "
                "set FROGNANO_ENVIRONMENT_CACHE to a writable folder"
            ) from exc
        with _Lock(self.root / f"{key}.use") as in_use:
            await in_use.acquire(fcntl.LOCK_SH)
            meta = self._ready(key)
            hit = meta is not None
            if meta is None:
                with _Lock(self.root / f"{key}.build") as building:
                    await building.acquire(fcntl.LOCK_EX)
                    meta = self._ready(key)  # another run may have built it meanwhile
                    hit = meta is not None
                    if meta is None:
                        meta = await self._build(key, entry, build)
            os.utime(self.root / f"{key}.json")  # the LRU clock: last use
            found = CachedEnvironment(
                key=key,
                path=entry,
                hit=hit,
                build_seconds=float(str(meta.get("build_seconds", 0.0))),
                size_bytes=int(str(meta.get("size_bytes", 0))),
            )
            if not hit:
                await asyncio.to_thread(self.evict, keep=key)
            yield found

    async def _build(self, key: str, entry: Path, build: Builder) -> dict[str, object]:
        staging = self.root / f"staging-{key}"
        # We hold the build lock: a staging folder left here is a crashed build's.
        await asyncio.to_thread(_remove, staging)
        await asyncio.to_thread(_remove, entry)
        staging.mkdir(mode=0o755)
        started = time.monotonic()
        try:
            await build(staging)
        except BaseException:
            await asyncio.to_thread(_remove, staging)
            raise
        if os.geteuid() == 0:
            # A root-launched build ran as a throwaway uid; the result belongs to FrogNano.
            await asyncio.to_thread(_chown_tree, staging)
        size = await asyncio.to_thread(_size, staging)
        if size > self.max_bytes:
            await asyncio.to_thread(_remove, staging)
            raise EnvironmentBuildError(
                f"the environment came to {size / 2**20:.0f} MiB, more than the whole cache may "
                f"hold ({self.max_bytes / 2**20:.0f} MiB, FROGNANO_ENVIRONMENT_CACHE_MAX_BYTES); "
                "it was deleted"
            )
        meta: dict[str, object] = {
            "key": key,
            "built_at": time.time(),
            "build_seconds": round(time.monotonic() - started, 3),
            "size_bytes": size,
        }
        staging.rename(entry)
        partial = self.root / f"{key}.json.partial"
        partial.write_text(json.dumps(meta), encoding="utf-8")
        partial.rename(self.root / f"{key}.json")  # atomic: readers see all of it or none
        log.info("environment.built", key=key, seconds=meta["build_seconds"], bytes=size)
        return meta

    def entries(self) -> list[tuple[str, float, int]]:
        """(key, last use, size) of every ready environment, least recently used first."""
        found: list[tuple[str, float, int]] = []
        for meta_file in self.root.glob("*.json"):
            key = meta_file.stem
            meta = self._ready(key) if _KEY.match(key) else None
            if meta is not None:
                with contextlib.suppress(OSError):
                    used = meta_file.stat().st_mtime
                    found.append((key, used, int(str(meta.get("size_bytes", 0)))))
        return sorted(found, key=lambda item: item[1])

    def evict(self, keep: str | None = None) -> list[str]:
        """Delete least recently used environments until the cache fits `max_bytes`; one in
        use (or `keep`) is never deleted. Returns the deleted keys."""
        entries = self.entries()
        total = sum(size for _, _, size in entries)
        deleted: list[str] = []
        for key, _, size in entries:
            if total <= self.max_bytes:
                break
            if key == keep:
                continue
            with _Lock(self.root / f"{key}.use") as lock:
                if not lock.try_acquire(fcntl.LOCK_EX):
                    continue  # a run is using it
                (self.root / f"{key}.json").unlink(missing_ok=True)
                _remove(self.root / key)
            total -= size
            deleted.append(key)
            log.info("environment.evicted", key=key, bytes=size)
        return deleted


class _Lock:
    """One flock(2) lock file, released (with its descriptor) when the block ends."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def __enter__(self) -> _Lock:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # closing the descriptor releases the lock

    def try_acquire(self, mode: int) -> bool:
        try:
            fcntl.flock(self.fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    async def acquire(self, mode: int) -> None:
        # Polled rather than blocking in a thread, so that a cancelled run leaves no thread
        # behind that later takes the lock for nobody. (The holder may be another process,
        # so no in-process event can announce the release.)
        while not self.try_acquire(mode):  # noqa: ASYNC110
            await asyncio.sleep(_LOCK_POLL_SECONDS)


def _remove(path: Path) -> None:
    """Delete an entry even where its build left folders unreadable or unwritable (0o000)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
        return
    if not path.exists():
        return
    root = os.path.abspath(path)

    def retry(func: Callable[..., object], failed: str, exc: BaseException) -> None:
        if isinstance(exc, FileNotFoundError):
            return
        # Only folders of this entry are made accessible again (never through a link).
        for target in (os.path.dirname(failed), failed):
            if target.startswith(root) and not os.path.islink(target):
                with contextlib.suppress(OSError):
                    os.chmod(target, stat.S_IRWXU)
        if func is os.open or func is os.scandir:  # a folder that could not be listed
            _rmtree(failed, retry)
        else:
            with contextlib.suppress(FileNotFoundError):
                func(failed)

    _rmtree(root, retry)


def _rmtree(root: str, retry: Callable[[Callable[..., object], str, BaseException], None]) -> None:
    if sys.version_info >= (3, 12):
        shutil.rmtree(root, onexc=retry)
    else:
        shutil.rmtree(root, onerror=lambda func, failed, info: retry(func, failed, info[1]))


def _chown_tree(root: Path) -> None:
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.lchown(os.path.join(folder, name), 0, 0)
    os.lchown(root, 0, 0)


def _size(root: Path) -> int:
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
    return total
