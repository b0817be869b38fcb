"""The orphan sweep on real Redis: run and follow-up jobs of a dead worker are released."""

from __future__ import annotations

from arq.constants import in_progress_key_prefix

from frognano.app.orphans import heartbeat, recover_orphans
from tests.app.test_worker import World, fake, world

__all__ = ["fake", "world"]

LOCK_MS = 600_000


async def _in_progress(world: World, job_id: str, *, started_ms_ago: int) -> str:
    """arq's marks of a job in progress, as a worker that started it that long ago left them."""
    redis = world.deps.queue.redis
    await redis.zadd(world.queue_name, {job_id: 1})
    key = in_progress_key_prefix + job_id
    await redis.set(key, b"1", px=LOCK_MS - started_ms_ago)
    return key


async def test_dead_workers_runs_and_follow_ups_are_released_live_and_new_ones_kept(
    world: World,
) -> None:
    deps, redis = world.deps, world.deps.queue.redis
    deps.heartbeat_ttl = 1.0
    dead_run = await _in_progress(world, "run:1:7:r-dead", started_ms_ago=5_000)
    dead_follow = await _in_progress(world, "followup:1:12:d-dead", started_ms_ago=5_000)
    live = await _in_progress(world, "followup:1:13:d-live", started_ms_ago=5_000)
    fresh = await _in_progress(world, "followup:1:14:d-new", started_ms_ago=100)
    other = await _in_progress(world, "review:1:12:d-review", started_ms_ago=5_000)
    async with heartbeat(deps, "followup:1:13:d-live"):
        released = await recover_orphans(deps, queue_name=world.queue_name, in_progress_ms=LOCK_MS)
        assert sorted(released) == ["followup:1:12:d-dead", "run:1:7:r-dead"]
        assert not await redis.exists(dead_run)
        assert not await redis.exists(dead_follow)
        assert await redis.exists(live)  # it beats
    assert await redis.exists(fresh)  # started moments ago: its first beat may be on its way
    assert await redis.exists(other)  # short jobs do not beat and are not swept
    assert deps.orphans._value.get() == 2
