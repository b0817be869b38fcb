"""The arq worker: its jobs, its settings, orphaned runs, and `build_worker`, which wires it."""

# `build_worker` is the one place the worker's clients are made (the GitHub App, the policy
# store, the Redis client of the intake queue, the metrics), once per process; every job finds
# them in `ctx["deps"]`. The jobs here are what arq calls: each reads its `request` argument
# with jobs.from_job and hands the typed value on (run_issue.run_issue, command_job.run_command,
# followup_job.run_follow_up, review_gate.review_gate).
#
# Run and follow-up jobs write a heartbeat (`IntakeQueue.alive_key`, every
# `heartbeat_seconds`, expiring after `heartbeat_ttl`) while they run (app/orphans.py). A
# worker that is killed stops beating; the next worker to start, and every worker each
# `heartbeat_ttl`, releases such a job's arq in-progress lock (`recover_orphans`), so it runs
# again now instead of when the lock expires hours later.

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arq.connections import RedisSettings
from arq.constants import default_queue_name
from arq.typing import StartupShutdown
from arq.worker import Function, Worker, func
from prometheus_client import REGISTRY, CollectorRegistry, Counter
from redis.asyncio import Redis

from frognano.app.attempt import RunDeps
from frognano.app.budget import AttemptBudget
from frognano.app.command_job import run_command
from frognano.app.events.decisions import CommandRequest, DropTokens, ReviewGateCheck, RunRequest
from frognano.app.events.followups import FollowUpRequest
from frognano.app.followup_job import FOLLOWUP_MAX_TRIES, run_follow_up
from frognano.app.intake import (
    COMMAND_JOB,
    DEFAULT_KEY_PREFIX,
    DROP_TOKENS_JOB,
    FOLLOWUP_JOB,
    REVIEW_JOB,
    RUN_JOB,
    IntakeQueue,
)
from frognano.app.jobs import JobData, deserialize, from_job, serialize
from frognano.app.ledger import Ledger
from frognano.app.orphans import heartbeat, recover_orphans
from frognano.app.review_gate import review_gate
from frognano.app.run_issue import RUN_MAX_TRIES, run_issue
from frognano.errors import FrogNanoError
from frognano.github.auth import GitHubApp
from frognano.github.retry import Transport
from frognano.log import get_logger
from frognano.policy.store import PolicyStore
from frognano.run.ports import RunPorts
from frognano.sandbox.options import SandboxOptions
from frognano.sandbox.registry import reap_sandboxes
from frognano.settings import Settings

__all__ = [
    "FrogNanoWorker",
    "WorkerDeps",
    "arq_worker",
    "build_worker",
    "command_job",
    "drop_tokens_job",
    "follow_up_job",
    "functions",
    "review_gate_job",
    "run_issue_job",
]

log = get_logger(__name__)

JOB_TIMEOUT_SECONDS = 6 * 3600
HEARTBEAT_SECONDS = 20.0
HEARTBEAT_TTL_SECONDS = 90.0
BUSY_RETRY_SECONDS = 120.0


@dataclass(kw_only=True)
class WorkerDeps(RunDeps):
    """What every job needs, made once by `build_worker`."""

    heartbeat_seconds: float
    """How often a running job says it is alive."""
    heartbeat_ttl: float
    """A run job with no heartbeat for this long belonged to a worker that died."""
    orphans: Counter
    """Run jobs of dead workers released to run again."""


# -- the jobs, as arq calls them ----------------------------------------------------------------


async def run_issue_job(ctx: dict[str, Any], *, run_id: str, request: JobData) -> str:
    """arq job RUN_JOB: one run for one issue, beating while it runs. Returns how it ended."""
    deps: WorkerDeps = ctx["deps"]
    run = from_job(RunRequest, request)
    async with heartbeat(deps, str(ctx.get("job_id", run_id))):
        return await run_issue(deps, run, run_id=run_id, attempt=int(ctx.get("job_try", 1)))


async def command_job(ctx: dict[str, Any], *, request: JobData) -> str:
    """arq job COMMAND_JOB: a `/frognano` comment, once its author's permission is checked."""
    deps: WorkerDeps = ctx["deps"]
    return await run_command(deps, from_job(CommandRequest, request))


async def follow_up_job(ctx: dict[str, Any], *, request: JobData) -> str:
    """arq job FOLLOWUP_JOB: a command on one of the App's pull requests: one more commit."""
    deps: WorkerDeps = ctx["deps"]
    follow = from_job(FollowUpRequest, request)
    job_id, attempt = str(ctx.get("job_id", "")), int(ctx.get("job_try", 1))
    async with heartbeat(deps, job_id):
        return await run_follow_up(deps, follow, job_id=job_id, attempt=attempt)


async def review_gate_job(ctx: dict[str, Any], *, request: JobData) -> str:
    """arq job REVIEW_JOB: decide the human-review check. Returns its conclusion."""
    deps: WorkerDeps = ctx["deps"]
    return await review_gate(deps.app, from_job(ReviewGateCheck, request), deps.ledger)


async def drop_tokens_job(ctx: dict[str, Any], *, request: JobData) -> int:
    """arq job DROP_TOKENS_JOB: forget cached tokens of an installation (its permissions or
    repositories changed). Returns how many were dropped."""
    deps: WorkerDeps = ctx["deps"]
    return deps.app.drop(from_job(DropTokens, request).installation_id)


def functions() -> list[Function]:
    return [
        func(run_issue_job, name=RUN_JOB, timeout=JOB_TIMEOUT_SECONDS, max_tries=RUN_MAX_TRIES),
        func(command_job, name=COMMAND_JOB, timeout=300, max_tries=5),
        func(
            follow_up_job,
            name=FOLLOWUP_JOB,
            timeout=JOB_TIMEOUT_SECONDS,
            max_tries=FOLLOWUP_MAX_TRIES,
        ),
        func(review_gate_job, name=REVIEW_JOB, timeout=300, max_tries=5),
        func(drop_tokens_job, name=DROP_TOKENS_JOB, timeout=60, max_tries=3),
    ]


async def _reap_forever(settings: Settings) -> None:
    options = SandboxOptions.from_settings(settings)
    while True:
        try:
            await reap_sandboxes(settings.sandbox, options)
        except FrogNanoError as exc:
            log.warning("worker.reap_failed", error=str(exc))
        await asyncio.sleep(settings.k8s_reap_interval_seconds)


# -- the worker ---------------------------------------------------------------------------------


def arq_worker(
    jobs: Sequence[Function],
    *,
    redis_settings: RedisSettings,
    queue_name: str,
    ctx: dict[str, Any] | None = None,
    burst: bool = False,
    max_jobs: int = 2,
    poll_delay: float = 0.5,
    on_startup: StartupShutdown | None = None,
    on_shutdown: StartupShutdown | None = None,
) -> Worker:
    """An arq Worker set up as FrogNano's must be: JSON job arguments (never arq's default
    pickle: whoever can write to Redis could run code here) and aborts allowed (a cancel
    aborts the run's job). It handles SIGTERM and SIGINT unless `burst`."""
    return Worker(
        list(jobs),
        redis_settings=redis_settings,
        queue_name=queue_name,
        job_serializer=serialize,
        job_deserializer=deserialize,
        allow_abort_jobs=True,
        ctx=ctx,
        burst=burst,
        max_jobs=max_jobs,
        poll_delay=poll_delay,
        handle_signals=not burst,
        on_startup=on_startup,
        on_shutdown=on_shutdown,
    )


class FrogNanoWorker:
    """The worker's clients, made once by `build_worker`, and the arq Worker that runs the
    jobs with them. `async with` it to close the clients at the end."""

    def __init__(
        self, deps: WorkerDeps, *, max_jobs: int, poll_delay: float, watch_policies: bool
    ) -> None:
        self.deps = deps
        self.max_jobs, self.poll_delay, self.watch_policies = max_jobs, poll_delay, watch_policies

    async def run(self, *, burst: bool = False) -> None:
        """Run jobs until SIGTERM (running jobs finish, or another worker retries them), or
        with `burst` until the queue is empty. It looks for orphaned runs of dead workers
        when it starts and then every `heartbeat_ttl`; with the Kubernetes sandbox it deletes
        expired and failed sandbox pods too."""
        policies = self.deps.policies
        watcher = asyncio.create_task(policies.watch()) if self.watch_policies else None
        worker = self._arq_worker(burst)
        try:
            await worker.async_run()
        finally:
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
            await worker.close()

    def _arq_worker(self, burst: bool) -> Worker:
        deps = self.deps
        background: list[asyncio.Task[None]] = []

        async def sweep_once() -> None:
            await recover_orphans(
                deps,
                queue_name=worker.queue_name,
                in_progress_ms=int(worker.in_progress_timeout_s * 1000),
            )

        async def sweep_forever() -> None:
            while True:
                await asyncio.sleep(deps.heartbeat_ttl)
                await sweep_once()

        async def startup(ctx: dict[Any, Any]) -> None:
            # Before the first poll, so a restarted worker picks its own orphans up at once.
            await sweep_once()
            background.append(asyncio.create_task(sweep_forever()))
            if deps.settings.sandbox == "kubernetes":
                # Pods of runs whose worker died, or that the kubelet stopped, are deleted here.
                background.append(asyncio.create_task(_reap_forever(deps.settings)))

        async def shutdown(ctx: dict[Any, Any]) -> None:
            for task in background:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

        worker = arq_worker(
            functions(),
            redis_settings=RedisSettings.from_dsn(deps.settings.redis_url),
            queue_name=deps.queue.queue_name,
            ctx={"deps": deps},
            burst=burst,
            max_jobs=self.max_jobs,
            poll_delay=self.poll_delay,
            on_startup=startup,
            on_shutdown=shutdown,
        )
        return worker

    async def aclose(self) -> None:
        """Close the clients: the intake queue's Redis connections and the App's."""
        await self.deps.queue.redis.aclose()
        self.deps.app.close()

    async def __aenter__(self) -> FrogNanoWorker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def build_worker(
    settings: Settings,
    *,
    transport: Transport | None = None,
    registry: CollectorRegistry | None = None,
    key_prefix: str = DEFAULT_KEY_PREFIX,
    queue_name: str = default_queue_name,
    max_jobs: int = 2,
    poll_delay: float = 0.5,
    heartbeat_seconds: float = HEARTBEAT_SECONDS,
    heartbeat_ttl: float = HEARTBEAT_TTL_SECONDS,
    busy_retry_seconds: float = BUSY_RETRY_SECONDS,
    watch_policies: bool = True,
) -> FrogNanoWorker:
    """The worker configured by `settings`, its clients made here once. `transport` is the
    GitHub API's (default: `settings.github_api_url`'s); `registry` takes the policy
    store's and the worker's metrics (default: prometheus-client's global one); the queue
    is arq's default; `watch_policies` hot-reloads the policy while it runs. Raises
    ConfigError when the GitHub App or the policy is not configured."""
    if not 0 < heartbeat_seconds * 3 <= heartbeat_ttl:
        raise ValueError("heartbeat_ttl must be at least three heartbeat intervals")
    app = GitHubApp.from_settings(settings, transport=transport)
    try:
        policies = PolicyStore(settings.policy_dir, registry=registry)
    except Exception:
        app.close()
        raise
    where = registry if registry is not None else REGISTRY
    queue = IntakeQueue(
        Redis.from_url(settings.redis_url), key_prefix=key_prefix, queue_name=queue_name
    )
    deps = WorkerDeps(
        settings=settings,
        make_ports=RunPorts.from_settings,
        app=app,
        policies=policies,
        queue=queue,
        ledger=Ledger(queue.redis, key_prefix=key_prefix),
        runs=Counter(
            "frognano_worker_runs",
            "Run jobs by how they ended (published, no_pull_request, unauthorised, refused "
            "(the base branch), cancelled, disabled, waiting for a sandbox, error).",
            ["result"],
            registry=where,
        ),
        # Every attempt (best-of-N runs several per job) counts against the jobs arq runs at once.
        budget=AttemptBudget(worker=max_jobs, per_repo=settings.max_attempts_per_repo),
        busy_retry_seconds=busy_retry_seconds,
        heartbeat_seconds=heartbeat_seconds,
        heartbeat_ttl=heartbeat_ttl,
        orphans=Counter(
            "frognano_worker_orphans_released",
            "Run jobs of dead workers released to run again.",
            registry=where,
        ),
    )
    return FrogNanoWorker(
        deps, max_jobs=max_jobs, poll_delay=poll_delay, watch_policies=watch_policies
    )
