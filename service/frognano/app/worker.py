"""The arq worker: one job per run (authorise, fetch, pipeline, publish), the review gate, and
forgetting tokens."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from arq.connections import RedisSettings
from arq.constants import in_progress_key_prefix, retry_key_prefix
from arq.worker import Function, Retry, Worker, func
from prometheus_client import REGISTRY, CollectorRegistry, Counter

from frognano.agent.loop import Progress
from frognano.app.intake import (
    DEFAULT_KEY_PREFIX,
    DROP_TOKENS_JOB,
    REVIEW_JOB,
    RUN_JOB,
    IntakeQueue,
    Waiting,
    deserialize,
    serialize,
)
from frognano.app.jobs import DropTokensJobData, RunJobData, from_job
from frognano.app.publish import publish
from frognano.app.review import review_gate
from frognano.app.status import (
    Cancelled,
    Error,
    NoPullRequest,
    Published,
    Queued,
    Testing,
    Working,
    status_comment,
    status_marker,
)
from frognano.app.triggers import DropTokens, RunRequest
from frognano.errors import FrogNanoError, SandboxBusy
from frognano.github.auth import ACKNOWLEDGE, FETCH, PUBLISH, GitHubApp
from frognano.github.client import RepoClient
from frognano.github.models import FileChange
from frognano.log import bound_contextvars, get_logger
from frognano.policy.store import PolicyStore
from frognano.run.baselines import RedisCache
from frognano.run.job import SolveJob
from frognano.run.pipeline import SolveOutcome, solve
from frognano.sandbox.kubernetes.pod import ATTEMPT
from frognano.sandbox.reaper import delete_attempt_pods, reap_namespace
from frognano.settings import Settings

log = get_logger(__name__)

PERMISSION_RANK = {"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}
CANCEL_POLL_SECONDS = 2.0
PROGRESS_EVERY_SECONDS = 30.0
"""The status comment shows the step count at most this often (GitHub counts each edit)."""
JOB_TIMEOUT_SECONDS = 6 * 3600
RUN_MAX_TRIES = 3


@dataclass
class WorkerDeps:
    """What every job needs, built once when the worker starts."""

    settings: Settings
    app: GitHubApp
    policies: PolicyStore
    queue: IntakeQueue
    heartbeat_seconds: float = 20.0
    """How often a running job says it is alive."""
    heartbeat_ttl: float = 90.0
    """A run job with no heartbeat for this long belonged to a worker that died."""
    registry: CollectorRegistry | None = None
    """Where the worker's metrics go; None: prometheus-client's global registry."""
    busy_retry_seconds: float = 120.0
    """How long a run that found the sandbox quota full waits, times its attempt number,
    before it tries again (at most RUN_MAX_TRIES attempts in all)."""

    def __post_init__(self) -> None:
        if not 0 < self.heartbeat_seconds * 3 <= self.heartbeat_ttl:
            raise ValueError("heartbeat_ttl must be at least three heartbeat intervals")
        registry = self.registry if self.registry is not None else REGISTRY
        self.runs = Counter(
            "frognano_worker_runs",
            "Run jobs by how they ended (published, no_pull_request, unauthorised, cancelled, "
            "disabled, waiting for a sandbox, error).",
            ["result"],
            registry=registry,
        )
        self.orphans = Counter(
            "frognano_worker_orphans_released",
            "Run jobs of dead workers released to run again.",
            registry=registry,
        )


class RunCancelled(Exception):
    """The issue's run was cancelled (label removed, issue closed)."""


async def run_issue(ctx: dict[str, Any], *, run_id: str, request: RunJobData) -> str:
    """One run for one issue; every stage is idempotent so arq's re-runs neither duplicate
    nor lose work. Returns what happened."""
    deps: WorkerDeps = ctx["deps"]
    return await _run_issue(deps, ctx, run_id, from_job(RunRequest, request))


async def _run_issue(
    deps: WorkerDeps, ctx: dict[str, Any], run_id: str, request: RunRequest
) -> str:
    issue = request.issue
    repo, number, repo_id = issue.repo, issue.number, issue.repo_id
    alive = _alive_key(deps.queue, str(ctx.get("job_id", run_id)))
    beating = asyncio.create_task(_heartbeat(deps, alive))
    with bound_contextvars(run_id=run_id, repo=repo, issue=number):
        result = "error"
        try:
            result = await _run(deps, ctx, run_id, request)
        except asyncio.CancelledError:
            result = "cancelled"
            raise
        except Retry:
            result = "waiting"  # the same run, deferred: it keeps the issue's single flight
            raise
        else:
            return result
        finally:
            deps.runs.labels(result=result).inc()
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating
            await deps.queue.redis.delete(alive)
            if result != "waiting":
                waiting = await deps.queue.finish_run(repo_id, number, run_id)
                if result == "unauthorised":
                    await _requeue_others(deps.queue, waiting, request.labeller)
                elif waiting:
                    log.info("run.waiting_triggers_dropped", count=len(waiting))


async def _requeue_others(queue: IntakeQueue, waiting: list[Waiting], labeller: str) -> None:
    """After an unauthorised labeller's run, the label events that waited for it are not
    dropped: each other labeller's is queued (the first as a run, the rest waiting for it),
    so an outsider's label cannot block a writer's. Their permission is checked in turn."""
    seen: set[str] = set()
    for entry in waiting:
        if entry.labeller == labeller or entry.labeller in seen or entry.request is None:
            continue
        seen.add(entry.labeller)
        submission = await queue.requeue(entry)
        log.info(
            "run.waiting_trigger_queued",
            labeller=entry.labeller,
            delivery=entry.delivery_id,
            status=submission.status,
            job_id=submission.job_id,
        )


def _alive_key(queue: IntakeQueue, job_id: str) -> str:
    return f"{queue.key_prefix}alive:{job_id}"


async def _heartbeat(deps: WorkerDeps, key: str) -> None:
    while True:
        await deps.queue.redis.set(key, b"1", px=int(deps.heartbeat_ttl * 1000))
        await asyncio.sleep(deps.heartbeat_seconds)


async def recover_orphans(deps: WorkerDeps, *, queue_name: str, in_progress_ms: int) -> list[str]:
    """Release run jobs whose worker died (killed, evicted, redeployed) so another worker
    runs them again now, not when arq's in-progress lock expires hours later.

    A job counts as orphaned when it is marked in progress, has had no heartbeat for
    `heartbeat_ttl`, and started longer ago than that (so one that just started is safe).
    Every stage of a run is idempotent, so the re-run finishes the work without duplicates.
    """
    redis = deps.queue.redis
    released: list[str] = []
    grace_ms = int(deps.heartbeat_ttl * 1000)
    async for raw in redis.scan_iter(match=f"{in_progress_key_prefix}run:*"):
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        job_id = key.removeprefix(in_progress_key_prefix)
        if await redis.zscore(queue_name, job_id) is None:
            continue  # another queue's job, or finished
        if await redis.exists(_alive_key(deps.queue, job_id)):
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


async def _delete_orphan_pods(deps: WorkerDeps, job_id: str) -> None:
    settings = deps.settings
    if settings.sandbox != "kubernetes":
        return  # a local sandbox died with its worker's process
    attempt = await deps.queue.redis.get(retry_key_prefix + job_id)
    if attempt is None:
        return
    run_id = job_id.rsplit(":", 1)[-1]  # run:{repo_id}:{number}:{run_id}
    try:
        await delete_attempt_pods(
            settings.k8s_namespace, settings.k8s_kubeconfig, run_id, int(attempt)
        )
    except (FrogNanoError, ValueError) as exc:
        # The reaper deletes them at their expiry; the run itself must not wait for that.
        log.warning("worker.orphan_pods_left", job_id=job_id, error=str(exc))


async def _run(deps: WorkerDeps, ctx: dict[str, Any], run_id: str, request: RunRequest) -> str:
    issue = request.issue
    repo, number = issue.repo, issue.number
    installation, repo_id = issue.installation_id, issue.repo_id
    labeller = request.labeller
    policy = deps.policies.current.for_repo(repo)
    if not policy.enabled:
        log.info("run.disabled")
        return "disabled"
    ack = await deps.app.repo_client(installation, repo, repo_id, ACKNOWLEDGE)
    role = await ack.permission(labeller)
    if PERMISSION_RANK.get(role, 0) < PERMISSION_RANK[policy.trigger.min_permission]:
        # No comment: an outsider must not be able to make the bot talk.
        log.warning("run.unauthorised", labeller=labeller, role=role)
        return "unauthorised"
    marker = status_marker(number)
    status = _Status(ack, number, marker, queue=deps.queue, repo_id=repo_id, run_id=run_id)
    await ack.react(number, "eyes")
    await status.set(status_comment(Queued(run_id=run_id), marker=marker))
    try:
        fetch = await deps.app.repo_client(installation, repo, repo_id, FETCH)
        base_branch, base_sha = await fetch.default_branch()
        out_dir = deps.settings.trajectory_dir / run_id / f"attempt-{ctx.get('job_try', 1)}"
        with tempfile.TemporaryDirectory(prefix="frognano-base-") as scratch:
            tree = await fetch.download_tree(base_sha, Path(scratch) / "tree")
            job = SolveJob(
                repo_dir=tree,
                exclude=(),
                title=request.title,
                body=request.body,
                out_dir=out_dir,
                repo=repo,
                policy=policy,
                policy_source=f"{deps.settings.policy_dir}",
                backend=deps.settings.sandbox,
                run_id=run_id,
                sandbox_labels={ATTEMPT: str(ctx.get("job_try", 1))},
                baseline_cache=RedisCache(deps.queue.redis),
                wait_for_model=True,
            )
            max_steps = policy.agent.max_steps
            await status.set(
                status_comment(Working(step=0, max_steps=max_steps, run_id=run_id), marker=marker)
            )
            outcome = await _cancellable(
                deps.queue,
                run_id,
                lambda progress: solve(
                    deps.settings, job, on_progress=progress, on_stage=status.stage
                ),
                status.progress(marker, run_id, max_steps),
            )
        if not outcome.patch_ready:
            await status.set(
                status_comment(NoPullRequest(why=outcome.report, run_id=run_id), marker=marker)
            )
            return "no_pull_request"
        publisher = await deps.app.repo_client(installation, repo, repo_id, PUBLISH)
        published = await publish(
            publisher,
            report=outcome.report,
            changes=[FileChange(c.path, c.mode or "100644", c.content) for c in outcome.changes],
            base_sha=base_sha,
            base_branch=base_branch,
            issue_number=number,
            issue_title=request.title,
            labeller=labeller,
            labeller_id=request.labeller_id,
            run_id=run_id,
            policy=policy.publish,
            trajectory_location=str(out_dir / "trajectory.jsonl"),
            app_login=await deps.app.app_login(),
        )
        pull = published.pull
        await status.set(
            status_comment(
                Published(url=pull.html_url, draft=pull.draft, run_id=run_id), marker=marker
            )
        )
    except RunCancelled as exc:
        await status.set(status_comment(Cancelled(reason=str(exc), run_id=run_id), marker=marker))
        return "cancelled"
    except SandboxBusy as exc:
        await _wait_for_sandbox(deps, int(ctx.get("job_try", 1)), status, run_id, exc)
    except asyncio.CancelledError:
        # arq aborted the job (a cancel that arrived while it was queued or running).
        with contextlib.suppress(Exception):
            await asyncio.shield(_say_cancelled(deps.queue, status, marker, run_id))
        raise
    except Exception:
        log.exception("run.failed")
        with contextlib.suppress(Exception):
            await status.set(status_comment(Error(run_id=run_id), marker=marker))
        raise
    return "published"


async def _wait_for_sandbox(
    deps: WorkerDeps, attempt: int, status: _Status, run_id: str, busy: SandboxBusy
) -> NoReturn:
    """Defer the run while the sandbox quota is full, saying so on the issue; give up with
    the usual error comment after the last attempt."""
    if attempt >= RUN_MAX_TRIES:
        log.exception("run.no_sandbox", attempts=attempt)
        with contextlib.suppress(Exception):
            await status.set(status_comment(Error(run_id=run_id), marker=status.marker))
        raise busy
    delay = deps.busy_retry_seconds * attempt
    log.warning("run.sandbox_busy", error=str(busy), retry_in=delay, attempt=attempt)
    await status.set(status_comment(Queued(run_id=run_id, retry_in=delay), marker=status.marker))
    raise Retry(defer=delay) from busy


async def _say_cancelled(queue: IntakeQueue, status: _Status, marker: str, run_id: str) -> None:
    reason = await queue.cancel_reason(run_id) or "the run was cancelled"
    await status.set(status_comment(Cancelled(reason=reason, run_id=run_id), marker=marker))


async def _cancellable(
    queue: IntakeQueue,
    run_id: str,
    start: Callable[[Callable[[Progress], None]], Awaitable[SolveOutcome]],
    progress: Callable[[Progress], None],
) -> SolveOutcome:
    """Run the pipeline, cancelling it (sandbox closed, reports written) when the issue's
    run is cancelled in Redis."""
    task = asyncio.ensure_future(start(progress))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=CANCEL_POLL_SECONDS)
            if done:
                return task.result()
            reason = await queue.cancel_reason(run_id)
            if reason is not None:
                raise RunCancelled(reason)
    finally:
        # Cancelled here (the reason above, or arq aborting the job): the pipeline must stop
        # too, so its sandbox is closed and its reports written before we go on.
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class _Status:
    """The one status comment of an issue, edited in place; progress edits are throttled.

    Label events that arrived while this run was on (the receiver queued them as "waiting")
    are acknowledged at the end of the comment, so nobody wonders why nothing started.
    """

    def __init__(
        self,
        client: RepoClient,
        number: int,
        marker: str,
        *,
        queue: IntakeQueue,
        repo_id: int,
        run_id: str,
    ) -> None:
        self.client, self.number, self.marker = client, number, marker
        self.queue, self.repo_id, self.run_id = queue, repo_id, run_id
        self.notes: list[str] = []
        self._last = 0.0
        self._pending: asyncio.Task[None] | None = None

    async def set(self, body: str) -> None:
        pending = self._pending
        if pending is not None and pending is not asyncio.current_task() and not pending.done():
            # A throttled progress edit still in flight must not land after this one.
            with contextlib.suppress(Exception):
                await pending
        for waiting in await self.queue.take_waiting(self.repo_id, self.number, self.run_id):
            self.notes.append(
                f"_`{waiting.labeller}` added the `{waiting.label}` label again while this run "
                "was in progress; that did not start a second run. Add it again once this run "
                "has ended to start over._"
            )
        text = body + "".join(f"\n\n{note}" for note in self.notes)
        await self.client.upsert_status_comment(self.number, self.marker, text)
        self._last = time.monotonic()

    def _later(self, body: str) -> None:
        if self._pending is None or self._pending.done():
            self._pending = asyncio.ensure_future(self.set(body))

    def stage(self, name: str) -> None:
        log.info("run.stage", stage=name)
        if name.startswith("verifying"):
            self._later(status_comment(Testing(run_id=self.run_id), marker=self.marker))

    def progress(self, marker: str, run_id: str, max_steps: int) -> Callable[[Progress], None]:
        def update(progress: Progress) -> None:
            if time.monotonic() - self._last < PROGRESS_EVERY_SECONDS:
                return
            self._last = time.monotonic()
            working = Working(
                step=progress.step, max_steps=max_steps, tool=progress.phase, run_id=run_id
            )
            body = status_comment(working, marker=marker)
            self._later(body)

        return update


async def drop_tokens(ctx: dict[str, Any], *, request: DropTokensJobData) -> int:
    """Forget cached tokens of an installation (its permissions or repositories changed)."""
    deps: WorkerDeps = ctx["deps"]
    return deps.app.drop(from_job(DropTokens, request).installation_id)


def functions() -> list[Function]:
    return [
        func(run_issue, name=RUN_JOB, timeout=JOB_TIMEOUT_SECONDS, max_tries=RUN_MAX_TRIES),
        func(review_gate, name=REVIEW_JOB, timeout=300, max_tries=5),
        func(drop_tokens, name=DROP_TOKENS_JOB, timeout=60, max_tries=3),
    ]


def make_worker(
    deps: WorkerDeps,
    *,
    queue_name: str | None = None,
    burst: bool = False,
    max_jobs: int = 2,
    poll_delay: float = 0.5,
) -> Worker:
    """An arq Worker with FrogNano's jobs, JSON job arguments and aborts allowed; it looks
    for orphaned runs of dead workers when it starts and then every `heartbeat_ttl`."""
    options: dict[str, Any] = {}
    if queue_name is not None:
        options["queue_name"] = queue_name
    sweeper: list[asyncio.Task[None]] = []

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

    async def reap_forever() -> None:
        settings = deps.settings
        while True:
            try:
                await reap_namespace(settings.k8s_namespace, settings.k8s_kubeconfig)
            except FrogNanoError as exc:
                log.warning("worker.reap_failed", error=str(exc))
            await asyncio.sleep(settings.k8s_reap_interval_seconds)

    async def startup(ctx: dict[Any, Any]) -> None:
        # Before the first poll, so a restarted worker picks its own orphans up at once.
        await sweep_once()
        sweeper.append(asyncio.create_task(sweep_forever()))
        if deps.settings.sandbox == "kubernetes":
            # Pods of runs whose worker died, or that the kubelet stopped, are deleted here.
            sweeper.append(asyncio.create_task(reap_forever()))

    async def shutdown(ctx: dict[Any, Any]) -> None:
        for task in sweeper:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    worker = Worker(
        functions(),
        redis_settings=RedisSettings.from_dsn(deps.settings.redis_url),
        job_serializer=serialize,
        job_deserializer=deserialize,
        allow_abort_jobs=True,
        ctx={"deps": deps, "github_app": deps.app},
        burst=burst,
        max_jobs=max_jobs,
        poll_delay=poll_delay,
        handle_signals=not burst,
        on_startup=startup,
        on_shutdown=shutdown,
        **options,
    )
    return worker


__all__ = [
    "DEFAULT_KEY_PREFIX",
    "WorkerDeps",
    "drop_tokens",
    "make_worker",
    "recover_orphans",
    "run_issue",
]
