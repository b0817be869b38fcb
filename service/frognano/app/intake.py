"""The Redis side of intake: delivery dedupe, one run per issue at a time, arq jobs."""

# Every decision is one Lua script, so the checks and the writes are atomic: two deliveries
# racing for one issue cannot both start a run, and a delivery id is never marked as seen
# without its job being written too (a failed call leaves nothing, so GitHub's redelivery
# works).
#
# Redis keys (`P` is `key_prefix`, default `frognano:`):
#
#     P delivery:{guid}                  "queued:{job_id}" | "already_running:{job_id}" |
#                                        "cancelled:{job_id}" | "nothing_to_cancel" |
#                                        "duplicate_job:{job_id}"; EX 3 days (GitHub's
#                                        redelivery window). Only deliveries that were acted
#                                        on are recorded; ignored ones write nothing.
#     P run:{repo_id}:{number}           hash {run_id, job_id, delivery_id, labeller, queued_at,
#                                        cancelled?}: the issue's run while it is queued or
#                                        running; deleted by `finish_run`. EX `run_ttl`.
#     P run:{repo_id}:{number}:waiting   list of JSON {delivery_id, labeller, label, at,
#                                        request}: label events that arrived while the run was
#                                        on; the worker acknowledges them (`take_waiting`,
#                                        `finish_run`), or queues one when the run it waited
#                                        for had an unauthorised labeller (`requeue`).
#     P cancel:{run_id}                  the cancel reason; the worker polls `cancel_reason`.
#     P body:{sha256}                    the delivery id that first brought this signed body;
#                                        the same body under another id is a replay, answered
#                                        "duplicate" (previous `replay_of:{id}`). EX as delivery.
#     P requeue:{delivery_id}            a waiting label event the worker queued as a run of its
#                                        own after the run it waited for was unauthorised.
#     P alive:{job_id}                   a running job's heartbeat (app/worker.py), PX the
#                                        heartbeat's ttl; a run job in progress without one
#                                        belonged to a worker that died.
#     P command:{delivery_id}            what the worker did for a command comment (`stop`,
#                                        `retry`) once it had checked the commenter, as a
#                                        delivery key: a re-run of the command job is a duplicate.
#     P followup:{repo_id}:{pull}        the job id of the follow-up running on a pull request
#                                        (intake_scripts.PullLock); others wait for it (Retry).
#
# FrogNano's own records (`P labelled:`, `P pushed:`) are ledger.py's. arq's own keys are
# written exactly as `ArqRedis.enqueue_job` writes them: `arq:job:{id}` (PSETEX, 1 day) and the
# queue's sorted set (`arq:queue` by default); a cancel adds the run's job id to `arq:abort`,
# which is what `Job.abort()` does for a job that is not deferred (the worker needs
# `allow_abort_jobs=True`). tests/app/web/test_intake.py runs a real arq Worker on its keys.
#
# A run key whose arq job no longer exists (neither `arq:job:` nor `arq:in-progress:`) is
# stale: a worker died without `finish_run`, or the job was aborted before it started, or it
# expired unstarted. The next label event then starts a new run instead of being refused
# forever.
#
# Job arguments are JSON (`serialize` / `deserialize` below, not arq's default pickle: whoever
# can write to Redis could otherwise run code in the worker). The worker must pass
# `job_serializer=serialize, job_deserializer=deserialize` to arq. Each job gets keyword
# arguments only; `request` is the trigger dataclass as `jobs.to_job` writes it, a JSON object
# of its fields in their order (app/jobschema.py; the worker reads it back with `jobs.from_job`):
#
#     run_issue(ctx, *, run_id: str, request: RunRequest)
#     command(ctx, *, request: CommandRequest)
#     follow_up(ctx, *, request: FollowUpRequest)
#     review_gate(ctx, *, request: ReviewGateCheck)
#     drop_tokens(ctx, *, request: DropTokens)
#
# Job ids: `run:{repo_id}:{number}:{run_id}`, `command:{repo_id}:{number}:{delivery_id}`,
# `followup:{repo_id}:{pull_number}:{delivery_id}`, `review:{repo_id}:{pull_number}:{delivery_id}`,
# `drop-tokens:{installation_id}:{delivery_id}`. The keys span hash slots: this needs a single
# Redis (or a primary with replicas), not Redis Cluster.

from __future__ import annotations

import json
import time

from arq.constants import (
    abort_jobs_ss,
    default_queue_name,
    expires_extra_ms,
    in_progress_key_prefix,
    job_key_prefix,
    result_key_prefix,
)
from arq.jobs import serialize_job
from redis.asyncio import Redis

from frognano.app.events.decisions import (
    CancelRequest,
    CommandRequest,
    DropTokens,
    ReviewGateCheck,
    RunRequest,
)
from frognano.app.events.followups import FollowUpRequest
from frognano.app.intake_scripts import (
    CANCEL_SCRIPT,
    FINISH_SCRIPT,
    JOB_SCRIPT,
    RUN_SCRIPT,
    TAKE_WAITING_SCRIPT,
    PullLock,
)
from frognano.app.jobs import (
    JobData,
    Submission,
    Submittable,
    Waiting,
    deserialize,
    serialize,
    text,
    to_job,
    waiting_events,
)
from frognano.run.runid import new_run_id

__all__ = [
    "COMMAND_JOB",
    "DEFAULT_KEY_PREFIX",
    "DELIVERY_TTL_SECONDS",
    "DROP_TOKENS_JOB",
    "FOLLOWUP_JOB",
    "REVIEW_JOB",
    "RUN_JOB",
    "RUN_TTL_SECONDS",
    "IntakeQueue",
    "Submission",
    "Waiting",
    "deserialize",
    "serialize",
]

RUN_JOB = "run_issue"
COMMAND_JOB = "command"
FOLLOWUP_JOB = "follow_up"
REVIEW_JOB = "review_gate"
DROP_TOKENS_JOB = "drop_tokens"

DEFAULT_KEY_PREFIX = "frognano:"
DELIVERY_TTL_SECONDS = 3 * 24 * 3600
"""GitHub.com keeps deliveries redeliverable for 3 days (GHES: 7; raise it there)."""
RUN_TTL_SECONDS = 8 * 24 * 3600
"""Backstop only: a run key normally goes at `finish_run`, or as stale when its job is gone."""


class IntakeQueue:
    """Submits trigger decisions to Redis; the web app and the worker both use it.

    `redis` is any `redis.asyncio.Redis` (the worker's `ctx["redis"]`, an ArqRedis, works
    too); bytes or decoded responses both do. `queue_name` is the arq queue the worker reads.
    """

    def __init__(
        self,
        redis: Redis,
        *,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        queue_name: str = default_queue_name,
        delivery_ttl: int = DELIVERY_TTL_SECONDS,
        run_ttl: int = RUN_TTL_SECONDS,
    ) -> None:
        self.redis = redis
        self.key_prefix = key_prefix
        self.queue_name = queue_name
        self.delivery_ttl = delivery_ttl
        self.run_ttl = run_ttl
        self._run = redis.register_script(RUN_SCRIPT)
        self._cancel = redis.register_script(CANCEL_SCRIPT)
        self._job = redis.register_script(JOB_SCRIPT)
        self._finish = redis.register_script(FINISH_SCRIPT)
        self._take = redis.register_script(TAKE_WAITING_SCRIPT)
        self.pull_lock = PullLock(redis, key_prefix, run_ttl)

    # Key names -------------------------------------------------------------------------------

    def delivery_key(self, delivery_id: str) -> str:
        return f"{self.key_prefix}delivery:{delivery_id}"

    def run_key(self, repo_id: int, number: int) -> str:
        return f"{self.key_prefix}run:{repo_id}:{number}"

    def waiting_key(self, repo_id: int, number: int) -> str:
        return f"{self.run_key(repo_id, number)}:waiting"

    def cancel_key(self, run_id: str) -> str:
        return f"{self.key_prefix}cancel:{run_id}"

    def body_key(self, digest: str | None) -> str:
        """'' (no check) without a digest."""
        return "" if digest is None else f"{self.key_prefix}body:{digest}"

    def alive_key(self, job_id: str) -> str:
        return f"{self.key_prefix}alive:{job_id}"

    def command_key(self, delivery_id: str) -> str:
        return f"{self.key_prefix}command:{delivery_id}"

    # Web side --------------------------------------------------------------------------------

    async def submit(self, decision: Submittable, *, body_digest: str | None = None) -> Submission:
        """Act on one decision; raises redis's errors (RedisError, OSError) when Redis fails,
        in which case nothing was recorded. `body_digest` (SHA-256 of the signed body) makes
        a replay of the same body under a new delivery id a duplicate."""
        if isinstance(decision, RunRequest):
            return await self.start_run(decision, body_digest=body_digest)
        if isinstance(decision, CancelRequest):
            return await self.cancel(decision, body_digest=body_digest)
        job = _job_of(decision)
        return await self._enqueue(decision.delivery_id, body_digest, *job, to_job(decision))

    async def start_run(self, request: RunRequest, *, body_digest: str | None = None) -> Submission:
        """Queue a run unless the delivery was seen or the issue has a run queued or on."""
        return await self._start(request, self.delivery_key(request.delivery_id), body_digest)

    async def retry_run(self, request: RunRequest, *, wait: bool = False) -> Submission:
        """The worker's `retry` command: queue a run unless the issue has one queued or on
        (`already_running`; with `wait` it waits like a label event, else nothing waits), once
        per command (again: `duplicate`)."""
        return await self._start(request, self.command_key(request.delivery_id), None, wait=wait)

    async def requeue(self, waiting: Waiting) -> Submission:
        """Queue a waiting label event as a run of its own (once per event: a second call is a
        duplicate), or as waiting again if another run holds the issue by now."""
        if waiting.request is None:
            raise ValueError(f"the waiting event {waiting.delivery_id} has no request to queue")
        key = f"{self.key_prefix}requeue:{waiting.delivery_id}"
        return await self._start(waiting.request, key, None)

    async def _start(
        self, request: RunRequest, delivery_key: str, body_digest: str | None, *, wait: bool = True
    ) -> Submission:
        repo_id, number = request.issue.repo_id, request.issue.number
        run_id = new_run_id()
        job_id = f"run:{repo_id}:{number}:{run_id}"
        now_ms = int(time.time() * 1000)
        data = to_job(request)
        job = serialize_job(
            RUN_JOB, (), {"run_id": run_id, "request": data}, None, now_ms, serializer=serialize
        )
        delivery_id = request.delivery_id
        waiting = json.dumps(
            {
                "delivery_id": delivery_id,
                "labeller": request.labeller,
                "label": request.label,
                "at": time.time(),
                "request": data,
            }
        )
        result = await self._run(
            keys=[
                delivery_key,
                self.run_key(repo_id, number),
                self.waiting_key(repo_id, number),
                job_key_prefix + job_id,
                self.queue_name,
                self.body_key(body_digest),
            ],
            args=[
                job_key_prefix,
                in_progress_key_prefix,
                self.delivery_ttl,
                self.run_ttl,
                run_id,
                job_id,
                job,
                now_ms,
                expires_extra_ms,
                waiting if wait else "",
                delivery_id,
                request.labeller,
                delivery_id,
            ],
        )
        return self._submission(result)

    async def cancel(
        self, request: CancelRequest, *, body_digest: str | None = None, command: bool = False
    ) -> Submission:
        """Flag the issue's run as cancelled and ask arq to abort its job. `command`: the
        worker's `stop` command, recorded under its own key (the delivery's is the job's)."""
        issue = request.issue
        delivery_id = request.delivery_id
        result = await self._cancel(
            keys=[
                self.command_key(delivery_id) if command else self.delivery_key(delivery_id),
                self.run_key(issue.repo_id, issue.number),
                abort_jobs_ss,
                self.body_key(body_digest),
            ],
            args=[
                job_key_prefix,
                in_progress_key_prefix,
                self.delivery_ttl,
                self.cancel_key(""),
                request.reason,
                self.run_ttl,
                int(time.time() * 1000),
                request.delivery_id,
            ],
        )
        return self._submission(result)

    async def _enqueue(
        self,
        delivery_id: str,
        body_digest: str | None,
        function: str,
        job_id: str,
        request: JobData,
    ) -> Submission:
        now_ms = int(time.time() * 1000)
        job = serialize_job(function, (), {"request": request}, None, now_ms, serializer=serialize)
        result = await self._job(
            keys=[
                self.delivery_key(delivery_id),
                job_key_prefix + job_id,
                self.queue_name,
                self.body_key(body_digest),
            ],
            args=[
                self.delivery_ttl,
                job_id,
                job,
                now_ms,
                expires_extra_ms,
                result_key_prefix + job_id,
                delivery_id,
            ],
        )
        return self._submission(result)

    @staticmethod
    def _submission(result: list[bytes | str]) -> Submission:
        status = text(result[0])
        if status == "duplicate":
            return Submission("duplicate", previous=text(result[1]))
        job_id = text(result[1]) or None if len(result) > 1 else None
        run_id = text(result[2]) or None if len(result) > 2 else None
        return Submission(status, job_id=job_id, run_id=run_id)  # type: ignore[arg-type]

    async def ping(self) -> None:
        await self.redis.ping()

    # Worker side -----------------------------------------------------------------------------

    async def cancel_reason(self, run_id: str) -> str | None:
        """Why the run was cancelled (the worker polls this between stages), or None."""
        value = await self.redis.get(self.cancel_key(run_id))
        return None if value is None else text(value)

    async def take_waiting(self, repo_id: int, number: int, run_id: str) -> list[Waiting]:
        """The label events refused as `already_running` since the last call, so the worker
        can acknowledge them on the status comment; each is returned once."""
        entries = await self._take(
            keys=[self.run_key(repo_id, number), self.waiting_key(repo_id, number)],
            args=[run_id],
        )
        return waiting_events(entries)

    async def finish_run(self, repo_id: int, number: int, run_id: str) -> list[Waiting]:
        """Call when a run ends, however it ends (in a `finally`): frees the issue for the next
        label event, clears the cancel flag, and returns the waiting events not yet taken.
        Does nothing to the issue if another run holds it now."""
        entries = await self._finish(
            keys=[
                self.run_key(repo_id, number),
                self.waiting_key(repo_id, number),
                self.cancel_key(run_id),
            ],
            args=[run_id],
        )
        return waiting_events(entries)

    async def current_run(self, repo_id: int, number: int) -> dict[str, str] | None:
        """The issue's run record (run_id, job_id, delivery_id, labeller, queued_at and, once
        cancelled, cancelled), or None."""
        raw = await self.redis.hgetall(self.run_key(repo_id, number))  # type: ignore[misc]
        if not raw:
            return None
        return {text(key): text(value) for key, value in raw.items()}


def _job_of(
    decision: CommandRequest | FollowUpRequest | ReviewGateCheck | DropTokens,
) -> tuple[str, str]:
    """The arq function and job id of a decision queued as one job of its own."""
    if isinstance(decision, CommandRequest):
        issue = decision.issue
        return COMMAND_JOB, f"command:{issue.repo_id}:{issue.number}:{decision.delivery_id}"
    if isinstance(decision, FollowUpRequest):
        where = f"{decision.repo_id}:{decision.pull_number}:{decision.delivery_id}"
        return FOLLOWUP_JOB, f"followup:{where}"
    if isinstance(decision, ReviewGateCheck):
        where = f"{decision.repo_id}:{decision.pull_number}:{decision.delivery_id}"
        return REVIEW_JOB, f"review:{where}"
    if isinstance(decision, DropTokens):
        return DROP_TOKENS_JOB, f"drop-tokens:{decision.installation_id}:{decision.delivery_id}"
    raise TypeError(f"nothing to submit for {type(decision).__name__}")
