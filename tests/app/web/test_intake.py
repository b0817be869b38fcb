"""The Redis side: dedupe, single-flight per issue, cancel, and what a real arq worker makes
of the jobs this module writes."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from arq import Worker
from arq.connections import RedisSettings
from arq.worker import func
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from frognano.app.events.decisions import (
    CancelRequest,
    CommandRequest,
    DropTokens,
    IssueRef,
    ReviewGateCheck,
    RunRequest,
)
from frognano.app.intake import (
    DROP_TOKENS_JOB,
    REVIEW_JOB,
    RUN_JOB,
    IntakeQueue,
    deserialize,
    serialize,
)
from frognano.app.jobs import from_job, to_job
from frognano.app.worker import arq_worker
from tests.app.web.conftest import REDIS_URL, Space, free_port


def make_queue(space: Space) -> IntakeQueue:
    return IntakeQueue(space.redis, key_prefix=space.prefix, queue_name=space.queue_name)


def issue(space: Space, number: int = 7) -> IssueRef:
    return IssueRef(space.ident, "acme/calculator", space.ident, number)


def run_request(
    space: Space, delivery: str, number: int = 7, labeller: str = "alice"
) -> RunRequest:
    return RunRequest(issue(space, number), delivery, labeller, "frognano", "Title", "Body")


def cancel_request(space: Space, delivery: str, number: int = 7) -> CancelRequest:
    return CancelRequest(issue(space, number), delivery, "the label frognano was removed by @bob")


Job = Callable[..., Awaitable[Any]]


@asynccontextmanager
async def worker(space: Space, **functions: Job) -> AsyncIterator[Worker]:
    """FrogNano's arq worker on the test's queue, running these job functions until the
    queue is empty."""
    jobs = [
        func(job, name=name, keep_result=5, max_tries=1)  # type: ignore[arg-type]
        for name, job in functions.items()
    ]
    running = arq_worker(
        jobs,
        redis_settings=RedisSettings.from_dsn(REDIS_URL),
        queue_name=space.queue_name,
        burst=True,
        poll_delay=0.05,
    )
    task = asyncio.create_task(running.async_run())
    try:
        yield running
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        with warnings.catch_warnings():
            # arq 0.28 closes its pool with redis-py's deprecated close().
            warnings.filterwarnings("ignore", "Call to deprecated close", DeprecationWarning)
            await running.close()


async def until(predicate: Callable[[], Awaitable[bool]], within: float = 10) -> None:
    for _ in range(int(within / 0.02)):
        if await predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met in time")


async def test_a_worker_runs_the_job_with_plain_json_arguments(space: Space) -> None:
    queue = make_queue(space)
    seen: list[dict[str, Any]] = []

    async def run_issue(ctx: dict[str, Any], *, run_id: str, request: dict[str, Any]) -> str:
        seen.append({"run_id": run_id, "request": request, "try": ctx["job_try"]})
        await queue.finish_run(request["issue"]["repo_id"], request["issue"]["number"], run_id)
        return "done"

    submitted = await queue.submit(run_request(space, "d-1"))
    assert submitted.status == "queued"
    async with worker(space, **{RUN_JOB: run_issue}):
        await until(lambda: asyncio.sleep(0, bool(seen)))
    assert seen == [
        {
            "run_id": submitted.run_id,
            "request": {
                "issue": {
                    "installation_id": space.ident,
                    "repo": "acme/calculator",
                    "repo_id": space.ident,
                    "number": 7,
                },
                "delivery_id": "d-1",
                "labeller": "alice",
                "label": "frognano",
                "title": "Title",
                "body": "Body",
                "labeller_id": None,
                "retry": False,
                "base": None,
            },
            "try": 1,
        }
    ]
    # The job carries exactly the trigger's fields (nothing added or lost on the way).
    assert seen[0]["request"] == dataclasses.asdict(run_request(space, "d-1"))
    assert from_job(RunRequest, seen[0]["request"]) == run_request(space, "d-1")
    # The run ended: the next label event starts a new run.
    assert await queue.current_run(space.ident, 7) is None
    again = await queue.submit(run_request(space, "d-2"))
    assert again.status == "queued"
    assert again.run_id != submitted.run_id


async def test_label_events_during_a_run_wait_for_acknowledgement(space: Space) -> None:
    queue = make_queue(space)
    first = await queue.submit(run_request(space, "d-1"))
    second = await queue.submit(run_request(space, "d-2", labeller="bob"))
    third = await queue.submit(run_request(space, "d-3", labeller="carol"))
    assert [second.status, third.status] == ["already_running", "already_running"]
    assert second.job_id == third.job_id == first.job_id
    assert first.run_id is not None
    record = await queue.current_run(space.ident, 7)
    assert record is not None
    assert record["run_id"] == first.run_id
    assert record["labeller"] == "alice"
    taken = await queue.take_waiting(space.ident, 7, first.run_id)
    assert [(w.delivery_id, w.labeller) for w in taken] == [("d-2", "bob"), ("d-3", "carol")]
    assert await queue.take_waiting(space.ident, 7, first.run_id) == []
    fourth = await queue.submit(run_request(space, "d-4", labeller="dave"))
    assert fourth.status == "already_running"
    # Another run's id frees nothing and takes nothing.
    assert await queue.finish_run(space.ident, 7, "someone-else") == []
    assert await queue.take_waiting(space.ident, 7, "someone-else") == []
    assert (await queue.submit(run_request(space, "d-5"))).status == "already_running"
    left = await queue.finish_run(space.ident, 7, first.run_id)
    assert [w.delivery_id for w in left] == ["d-4", "d-5"]
    assert (await queue.submit(run_request(space, "d-6"))).status == "queued"


async def test_a_hundred_racing_label_events_start_one_run(space: Space) -> None:
    queue = make_queue(space)
    results = await asyncio.gather(
        *(queue.submit(run_request(space, f"d-{i}")) for i in range(100))
    )
    assert sorted(r.status for r in results).count("queued") == 1
    assert len(await space.queued()) == 1
    waiting: int = await space.redis.llen(  # type: ignore[misc]
        f"{space.prefix}run:{space.ident}:7:waiting"
    )
    assert waiting == 99


async def test_a_run_whose_job_vanished_is_stale(space: Space) -> None:
    """A worker killed for good (or a job that expired unstarted) never calls finish_run;
    the issue must not stay blocked."""
    queue = make_queue(space)
    first = await queue.submit(run_request(space, "d-1"))
    assert first.job_id is not None
    await space.redis.delete(f"arq:job:{first.job_id}")
    await space.redis.zrem(space.queue_name, first.job_id)
    again = await queue.submit(run_request(space, "d-2"))
    assert again.status == "queued"
    assert again.run_id != first.run_id
    assert (await queue.submit(cancel_request(space, "c-0"))).status == "cancelled"


async def test_a_running_job_is_kept_while_arq_has_it_in_progress(space: Space) -> None:
    queue = make_queue(space)
    first = await queue.submit(run_request(space, "d-1"))
    assert first.job_id is not None
    # A job in progress whose job key expired (a run longer than a day) is still alive.
    await space.redis.delete(f"arq:job:{first.job_id}")
    await space.redis.set(f"arq:in-progress:{first.job_id}", b"1", ex=60)
    assert (await queue.submit(run_request(space, "d-2"))).status == "already_running"


async def test_cancelling_a_running_job_cancels_it_in_the_worker(space: Space) -> None:
    queue = make_queue(space)
    events: list[str] = []
    started = asyncio.Event()

    async def run_issue(ctx: dict[str, Any], *, run_id: str, request: dict[str, Any]) -> None:
        events.append("started")
        started.set()
        try:
            await until(lambda: _flagged(queue, run_id))
            events.append(f"saw flag: {await queue.cancel_reason(run_id)}")
            await asyncio.sleep(30)  # a stage that does not poll: arq's abort must end it
            events.append("not cancelled")
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        finally:
            await queue.finish_run(space.ident, 7, run_id)

    run = await queue.submit(run_request(space, "d-1"))
    async with worker(space, **{RUN_JOB: run_issue}):
        await asyncio.wait_for(started.wait(), 10)
        cancelled = await queue.submit(cancel_request(space, "c-1"))
        assert (cancelled.status, cancelled.job_id, cancelled.run_id) == (
            "cancelled",
            run.job_id,
            run.run_id,
        )
        await until(lambda: asyncio.sleep(0, "cancelled" in events))
        await until(lambda: _freed(queue, space))
    assert events == [
        "started",
        "saw flag: the label frognano was removed by @bob",
        "cancelled",
    ]
    assert run.run_id is not None
    assert await queue.cancel_reason(run.run_id) is None  # finish_run cleared it
    assert (await queue.submit(run_request(space, "d-2"))).status == "queued"


async def _flagged(queue: IntakeQueue, run_id: str) -> bool:
    return await queue.cancel_reason(run_id) is not None


async def _freed(queue: IntakeQueue, space: Space) -> bool:
    return await queue.current_run(space.ident, 7) is None


async def test_cancelling_a_queued_job_aborts_it_before_it_starts(space: Space) -> None:
    queue = make_queue(space)
    ran: list[str] = []

    async def run_issue(ctx: dict[str, Any], **kwargs: Any) -> None:
        ran.append("ran")

    run = await queue.submit(run_request(space, "d-1"))
    assert (await queue.submit(cancel_request(space, "c-1"))).status == "cancelled"
    assert run.job_id is not None
    async with worker(space, **{RUN_JOB: run_issue}):
        await until(lambda: _job_gone(space, run.job_id or ""))
    assert ran == []
    # Its function never ran, so nothing called finish_run: the record is stale, not a block.
    assert (await queue.submit(run_request(space, "d-2"))).status == "queued"


async def _job_gone(space: Space, job_id: str) -> bool:
    return not await space.redis.exists(f"arq:job:{job_id}")


async def test_cancel_without_a_run_and_duplicate_cancels(space: Space) -> None:
    queue = make_queue(space)
    assert (await queue.submit(cancel_request(space, "c-1"))).status == "nothing_to_cancel"
    duplicate = await queue.submit(cancel_request(space, "c-1"))
    assert (duplicate.status, duplicate.previous) == ("duplicate", "nothing_to_cancel")
    await queue.submit(run_request(space, "d-1"))
    assert (await queue.submit(cancel_request(space, "c-1"))).status == "duplicate"
    assert await space.redis.zscore("arq:abort", "nope") is None


async def test_a_delivery_id_is_acted_on_once_whatever_it_carries(space: Space) -> None:
    queue = make_queue(space)
    assert (await queue.submit(run_request(space, "same"))).status == "queued"
    # A forged second use of the id (another issue) is still a duplicate.
    other = await queue.submit(run_request(space, "same", number=8))
    assert other.status == "duplicate"
    assert len(await space.queued()) == 1
    ttl = await space.redis.ttl(f"{space.prefix}delivery:same")
    assert 3 * 24 * 3600 - 60 < ttl <= 3 * 24 * 3600


async def test_review_and_drop_tokens_jobs_run_in_a_worker(space: Space) -> None:
    queue = make_queue(space)
    got: list[tuple[str, dict[str, Any]]] = []

    async def review_gate(ctx: dict[str, Any], *, request: dict[str, Any]) -> None:
        got.append((REVIEW_JOB, request))

    async def drop_tokens(ctx: dict[str, Any], *, request: dict[str, Any]) -> None:
        got.append((DROP_TOKENS_JOB, request))

    review = ReviewGateCheck(space.ident, "acme/calculator", space.ident, 12, "b" * 40, "r-1")
    drop = DropTokens(space.ident, "i-1")
    assert (await queue.submit(review)).job_id == f"review:{space.ident}:12:r-1"
    assert (await queue.submit(drop)).job_id == f"drop-tokens:{space.ident}:i-1"
    assert (await queue.submit(review)).status == "duplicate"
    async with worker(space, **{REVIEW_JOB: review_gate, DROP_TOKENS_JOB: drop_tokens}):
        await until(lambda: asyncio.sleep(0, len(got) == 2))
    assert dict(got) == {
        REVIEW_JOB: dataclasses.asdict(review),
        DROP_TOKENS_JOB: dataclasses.asdict(drop),
    }
    assert from_job(ReviewGateCheck, dict(got)[REVIEW_JOB]) == review
    assert from_job(DropTokens, dict(got)[DROP_TOKENS_JOB]) == drop
    assert sorted(got, key=lambda g: g[0]) == [
        (DROP_TOKENS_JOB, {"installation_id": space.ident, "delivery_id": "i-1"}),
        (
            REVIEW_JOB,
            {
                "installation_id": space.ident,
                "repo": "acme/calculator",
                "repo_id": space.ident,
                "pull_number": 12,
                "head_sha": "b" * 40,
                "delivery_id": "r-1",
                "pusher": None,
            },
        ),
    ]


async def test_an_unreachable_redis_raises_and_records_nothing(space: Space) -> None:
    dead = Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=1)
    try:
        queue = IntakeQueue(dead, key_prefix=space.prefix, queue_name=space.queue_name)
        with pytest.raises(RedisConnectionError):
            await queue.submit(run_request(space, "d-1"))
    finally:
        await dead.aclose()
    assert await space.own_keys() == []


def test_the_serializer_is_json() -> None:
    data: dict[str, object] = {
        "t": None,
        "f": RUN_JOB,
        "a": [],
        "k": {"request": {"n": 1}},
        "et": 1,
    }
    assert deserialize(serialize(data)) == data
    assert json.loads(serialize({"r": ValueError("boom")})) == {"r": "ValueError('boom')"}


async def test_submit_refuses_what_is_not_for_the_queue(space: Space) -> None:
    from frognano.app.events.decisions import Ignored

    with pytest.raises(TypeError):
        await make_queue(space).submit(Ignored("x"))  # type: ignore[arg-type]


async def test_a_signed_body_replayed_under_a_new_delivery_id_is_a_duplicate(
    space: Space,
) -> None:
    queue = make_queue(space)
    digest = "ab" * 32
    first = await queue.submit(run_request(space, "d-1"), body_digest=digest)
    assert first.status == "queued"
    # GitHub's own redelivery: same id, same body: the delivery key answers.
    again = await queue.submit(run_request(space, "d-1"), body_digest=digest)
    assert (again.status, again.previous) == ("duplicate", f"queued:{first.job_id}")
    # A replay: the same body under a fresh id, for every kind of decision.
    for decision in (
        run_request(space, "d-2", number=8),
        cancel_request(space, "d-3"),
        ReviewGateCheck(space.ident, "acme/calculator", space.ident, 3, "f" * 40, "d-4"),
        DropTokens(space.ident, "d-5"),
    ):
        replay = await queue.submit(decision, body_digest=digest)
        assert (replay.status, replay.previous) == ("duplicate", "replay_of:d-1")
    assert len(await space.queued()) == 1
    assert await space.redis.get(f"{space.prefix}delivery:d-2") is None  # nothing recorded
    ttl = await space.redis.ttl(f"{space.prefix}body:{digest}")
    assert 3 * 24 * 3600 - 60 < ttl <= 3 * 24 * 3600
    # Another body is another delivery.
    fresh = await queue.submit(run_request(space, "d-6", number=9), body_digest="cd" * 32)
    assert fresh.status == "queued"


async def test_a_waiting_event_is_requeued_once_as_its_own_run(space: Space) -> None:
    queue = make_queue(space)
    first = await queue.submit(run_request(space, "d-1", labeller="eve"))
    await queue.submit(run_request(space, "d-2", labeller="alice"))
    await queue.submit(run_request(space, "d-3", labeller="bob"))
    assert first.run_id is not None
    waiting = await queue.finish_run(space.ident, 7, first.run_id)
    assert [w.labeller for w in waiting] == ["alice", "bob"]
    assert waiting[0].request == run_request(space, "d-2", labeller="alice")
    alice = await queue.requeue(waiting[0])
    assert alice.status == "queued"
    assert (await queue.requeue(waiting[0])).status == "duplicate"  # a retried worker
    bob = await queue.requeue(waiting[1])
    assert (bob.status, bob.job_id) == ("already_running", alice.job_id)
    record = await queue.current_run(space.ident, 7)
    assert record is not None
    assert (record["labeller"], record["delivery_id"]) == ("alice", "d-2")
    job = await space.redis.get(f"arq:job:{alice.job_id}")
    assert job is not None
    assert deserialize(job)["k"]["request"] == to_job(waiting[0].request)


async def test_a_command_is_one_job_and_its_retry_or_stop_is_acted_on_once(space: Space) -> None:
    queue = make_queue(space)
    command = CommandRequest(issue(space), "c-1", "alice", 5, 77, ("retry",), "frognano", "T", "B")
    queued = await queue.submit(command)
    assert (queued.status, queued.job_id) == ("queued", f"command:{space.ident}:7:c-1")
    assert (await queue.submit(command)).status == "duplicate"
    job = await space.redis.get(f"arq:job:{queued.job_id}")
    assert job is not None
    assert deserialize(job)["k"] == {"request": to_job(command)}
    # The worker's retry: a run, once per command, never waiting behind another run.
    retry = dataclasses.replace(run_request(space, "c-1"), retry=True)
    started = await queue.retry_run(retry)
    assert started.status == "queued"
    assert (await queue.retry_run(retry)).status == "duplicate"
    busy = await queue.retry_run(dataclasses.replace(retry, delivery_id="c-2"))
    assert (busy.status, busy.job_id) == ("already_running", started.job_id)
    assert started.run_id is not None
    assert await queue.take_waiting(space.ident, 7, started.run_id) == []
    # The worker's stop: under the command's own key, not the delivery's (the job has that).
    stop = cancel_request(space, "c-3")
    assert (await queue.cancel(stop, command=True)).status == "cancelled"
    assert (await queue.cancel(stop, command=True)).status == "duplicate"
    assert await queue.cancel_reason(started.run_id) == stop.reason
    assert (await queue.cancel(stop)).status == "cancelled"  # the delivery key was not taken
