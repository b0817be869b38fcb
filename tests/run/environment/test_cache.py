"""The environment cache: one build per key across processes, reuse, LRU eviction."""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import os
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

import pytest

from frognano.errors import EnvironmentBuildError
from frognano.run.environment.cache import EnvironmentCache


def _key(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def _builder(payload: bytes, calls: list[Path]):  # type: ignore[no-untyped-def]
    async def build(staging: Path) -> None:
        calls.append(staging)
        (staging / "payload").write_bytes(payload)

    return build


async def test_a_second_use_reuses_what_the_first_built(tmp_path: Path) -> None:
    cache = EnvironmentCache(tmp_path / "envs", max_bytes=1 << 30)
    calls: list[Path] = []
    async with cache.use(_key("a"), _builder(b"x", calls)) as first:
        assert not first.hit
        assert (first.path / "payload").read_bytes() == b"x"
    async with cache.use(_key("a"), _builder(b"y", calls)) as second:
        assert second.hit
        assert second.path == first.path
        assert (second.path / "payload").read_bytes() == b"x"
    assert len(calls) == 1


async def test_a_failed_build_leaves_nothing_to_reuse(tmp_path: Path) -> None:
    cache = EnvironmentCache(tmp_path / "envs", max_bytes=1 << 30)

    async def broken(staging: Path) -> None:
        (staging / "half").write_text("partial")
        raise RuntimeError("pip failed")

    with pytest.raises(RuntimeError, match="pip failed"):
        async with cache.use(_key("a"), broken):
            pass
    assert cache.entries() == []
    assert sorted(p.name for p in (tmp_path / "envs").iterdir() if p.is_dir()) == []
    calls: list[Path] = []
    async with cache.use(_key("a"), _builder(b"ok", calls)) as found:
        assert not found.hit
    assert len(calls) == 1


async def test_concurrent_runs_in_one_process_build_once(tmp_path: Path) -> None:
    cache = EnvironmentCache(tmp_path / "envs", max_bytes=1 << 30)
    calls: list[Path] = []
    building, release = asyncio.Event(), asyncio.Event()

    async def slow(staging: Path) -> None:
        calls.append(staging)
        building.set()
        await release.wait()
        (staging / "payload").write_bytes(b"built")

    async def run() -> bool:
        async with cache.use(_key("same"), slow) as found:
            return found.hit

    first = asyncio.create_task(run())
    second = asyncio.create_task(run())
    await building.wait()  # one run is inside its build, holding the build lock
    release.set()
    hits = sorted(await asyncio.gather(first, second))
    assert hits == [False, True]
    assert len(calls) == 1


def _build_in_another_process(
    root: str, key: str, started: EventType, go: EventType, out: str
) -> None:
    cache = EnvironmentCache(Path(root), max_bytes=1 << 30)

    async def build(staging: Path) -> None:
        started.set()
        await asyncio.to_thread(go.wait, 60)  # the parent says when to finish
        (staging / "payload").write_text(str(os.getpid()))

    async def main() -> None:
        async with cache.use(key, build) as found:
            Path(out).write_text("hit" if found.hit else "built")

    asyncio.run(main())


async def test_two_processes_build_once(tmp_path: Path) -> None:
    root = tmp_path / "envs"
    key = _key("shared")
    ctx = multiprocessing.get_context("spawn")
    started, started_again, go = ctx.Event(), ctx.Event(), ctx.Event()
    outs = [tmp_path / "out1", tmp_path / "out2"]
    first = ctx.Process(
        target=_build_in_another_process, args=(str(root), key, started, go, str(outs[0]))
    )
    first.start()
    assert await asyncio.to_thread(started.wait, 60)  # the first holds the build lock now
    second = ctx.Process(
        target=_build_in_another_process, args=(str(root), key, started_again, go, str(outs[1]))
    )
    second.start()
    go.set()
    for process in (first, second):
        await asyncio.to_thread(process.join, 60)
        assert process.exitcode == 0
    assert sorted(out.read_text() for out in outs) == ["built", "hit"]
    assert not started_again.is_set(), "the second process built too"


async def test_eviction_deletes_the_least_recently_used_first_but_never_one_in_use(
    tmp_path: Path,
) -> None:
    cache = EnvironmentCache(tmp_path / "envs", max_bytes=1 << 30)
    calls: list[Path] = []
    for name in ("old", "middle", "new"):
        async with cache.use(_key(name), _builder(b"x" * 40_000, calls)):
            pass
    # The LRU clock is each entry's metadata time; make the order explicit.
    for age, name in enumerate(("new", "middle", "old")):
        stamp = 1_000_000_000 - age * 1000
        os.utime(tmp_path / "envs" / f"{_key(name)}.json", (stamp, stamp))
    size = cache.entries()[0][2]
    cache.max_bytes = size * 2  # room for two
    async with cache.use(_key("old"), _builder(b"", calls)) as in_use:
        assert in_use.hit
        # "old" is now the most recently used, and in use: "middle" goes.
        cache.max_bytes = size  # room for one
        deleted = cache.evict()
    assert deleted == [_key("middle"), _key("new")]
    assert [key for key, _, _ in cache.entries()] == [_key("old")]


async def test_an_entry_in_use_survives_an_eviction_that_wants_its_room(tmp_path: Path) -> None:
    cache = EnvironmentCache(tmp_path / "envs", max_bytes=1 << 30)
    calls: list[Path] = []
    async with cache.use(_key("busy"), _builder(b"x" * 40_000, calls)) as busy:
        cache.max_bytes = 1
        assert cache.evict() == []
        assert (busy.path / "payload").exists()
    assert cache.evict() == [_key("busy")]


def test_keys_are_digests_never_paths(tmp_path: Path) -> None:
    cache = EnvironmentCache(tmp_path / "envs", max_bytes=1 << 30)
    with pytest.raises(ValueError, match="not an environment key"):
        cache._entry("../../etc")


async def test_an_entry_whose_build_left_locked_folders_is_still_evicted(tmp_path: Path) -> None:
    cache = EnvironmentCache(tmp_path / "envs", max_bytes=1 << 30)

    async def hostile(staging: Path) -> None:
        locked = staging / "locked" / "inner"
        locked.mkdir(parents=True)
        (locked / "file").write_text("x")
        locked.chmod(0)
        (staging / "locked").chmod(0o500)

    async with cache.use(_key("locked"), hostile):
        pass
    cache.max_bytes = 0
    assert cache.evict() == [_key("locked")]
    assert not (tmp_path / "envs" / _key("locked")).exists()


async def test_an_environment_larger_than_the_whole_cache_is_refused(tmp_path: Path) -> None:
    cache = EnvironmentCache(tmp_path / "envs", max_bytes=64 * 1024)
    calls: list[Path] = []
    with pytest.raises(EnvironmentBuildError, match="more than the whole cache may hold"):
        async with cache.use(_key("huge"), _builder(os.urandom(256 * 1024), calls)):
            pass
    assert cache.entries() == []
    assert [p.name for p in (tmp_path / "envs").iterdir() if p.is_dir()] == []
