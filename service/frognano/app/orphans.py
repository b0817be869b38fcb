"""Heartbeats of running jobs, and the release of jobs whose worker died."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from arq.constants import in_progress_key_prefix, retry_key_prefix
from prometheus_client import Counter
from redis.asyncio import Redis

from frognano.app.intake import IntakeQueue
from frognano.errors import FrogNanoError
from frognano.log import get_logger
from frognano.sandbox.options import SandboxOptions
from frognano.sandbox.registry import delete_attempt_sandboxes
from frognano.settings import Settings

__all__ = ["Beating", "heartbeat", "recover_orphans"]

log = get_logger(__name__)


class Beating(Protocol):
    """What heartbeats and the orphan sweep need of the worker's dependencies."""

    settings: Settings
    queue: IntakeQueue
    heartbeat_seconds: float
    heartbeat_ttl: float
    orphans: Counter


async def _in_progress(redis: Redis, kinds: Sequence[str]) -> AsyncIterator[bytes | str]:
    """arq's in-progress keys of the jobs that beat (runs and follow-ups)."""
    for kind in kinds:
        async for raw in redis.scan_iter(match=f"{in_progress_key_prefix}{kind}*"):
            yield raw


@contextlib.asynccontextmanager
async def heartbeat(deps: Beating, job_id: str) -> AsyncIterator[None]:
    key = deps.queue.alive_key(job_id)

    async def beat() -> None:
        while True:
            await deps.queue.redis.set(key, b"1", px=int(deps.heartbeat_ttl * 1000))
            await asyncio.sleep(deps.heartbeat_seconds)

    beating = asyncio.create_task(beat())
    try:
        yield
    finally:
        beating.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beating
        await deps.queue.redis.delete(key)


async def recover_orphans(deps: Beating, *, queue_name: str, in_progress_ms: int) -> list[str]:
    """Release run jobs whose worker died (killed, evicted, redeployed) so another worker
    runs them again now, not when arq's in-progress lock expires hours later.

    A job counts as orphaned when it is marked in progress, has had no heartbeat for
    `heartbeat_ttl`, and started longer ago than that (so one that just started is safe).
    Every stage of a run is idempotent, so the re-run finishes the work without duplicates.
    """
    redis = deps.queue.redis
    released: list[str] = []
    grace_ms = int(deps.heartbeat_ttl * 1000)
    async for raw in _in_progress(redis, ("run:", "followup:")):
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        job_id = key.removeprefix(in_progress_key_prefix)
        if await redis.zscore(queue_name, job_id) is None:
            continue  # another queue's job, or finished
        if await redis.exists(deps.queue.alive_key(job_id)):
            continue
        remaining = await redis.pttl(key)
        if remaining > in_progress_ms - grace_ms:
            continue  # started moments ago; its first heartbeat may not be written yet
        # The dead attempt's sandbox pods go first, while the job is still locked, so the
        # next attempt's pods cannot be caught by mistake.
        await _delete_orphan_pods(deps, job_id)
        if await redis.delete(key):
            log.warning("worker.orphan_released", job_id=job_id)
            deps.orphans.inc()
            released.append(job_id)
    return released


async def _delete_orphan_pods(deps: Beating, job_id: str) -> None:
    settings = deps.settings
    if settings.sandbox != "kubernetes" or not job_id.startswith("run:"):
        # A local sandbox died with its worker's process; a follow-up's job id does not name
        # its run, so its pods are left to the reaper (they carry an expiry).
        return
    attempt = await deps.queue.redis.get(retry_key_prefix + job_id)
    if attempt is None:
        return
    run_id = job_id.rsplit(":", 1)[-1]  # run:{repo_id}:{number}:{run_id}
    try:
        await delete_attempt_sandboxes(
            settings.sandbox, SandboxOptions.from_settings(settings), run_id, int(attempt)
        )
    except (FrogNanoError, ValueError) as exc:
        # The reaper deletes them at their expiry; the run itself must not wait for that.
        log.warning("worker.orphan_pods_left", job_id=job_id, error=str(exc))
