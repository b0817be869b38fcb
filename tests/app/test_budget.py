"""The worker's attempt budget: all attempts at once, one repository's, and a job's first."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from frognano.app.budget import AttemptBudget, JobBudget


async def _started(task_count: int, budget: AttemptBudget, want: int) -> None:
    for _ in range(1000):
        if budget.running == want:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{budget.running} of {task_count} running, expected {want}")


async def test_a_jobs_first_attempt_never_waits_for_the_repository_cap() -> None:
    budget = AttemptBudget(worker=3, per_repo=1)
    first, second = budget.job("acme/calc"), budget.job("acme/calc")
    async with first.slot(), second.slot():
        # Two single-attempt runs of one repository: both run, as before best-of-N.
        assert budget.by_repo["acme/calc"] == 2
        extra = asyncio.ensure_future(_hold(first))
        await asyncio.sleep(0.01)
        assert not extra.done()
        assert budget.running == 2
    await extra
    assert budget.running == 0
    assert not budget.by_repo


async def _hold(job: JobBudget) -> None:
    async with job.slot():
        await asyncio.sleep(0)


async def test_the_worker_bound_holds_for_every_attempt() -> None:
    budget = AttemptBudget(worker=2, per_repo=5)
    gate = asyncio.Event()
    peak = 0

    async def attempt(job_repo: str) -> None:
        nonlocal peak
        async with budget.job(job_repo).slot():
            peak = max(peak, budget.running)
            await gate.wait()

    tasks = [asyncio.ensure_future(attempt(repo)) for repo in ("a/x", "b/y", "c/z")]
    await _started(3, budget, 2)
    gate.set()
    await asyncio.gather(*tasks)
    assert peak == 2
    assert budget.running == 0


async def test_a_cancelled_attempt_gives_its_slot_back() -> None:
    budget = AttemptBudget(worker=1, per_repo=1)
    job = budget.job("acme/calc")
    held = asyncio.Event()

    async def stuck() -> None:
        async with job.slot():
            held.set()
            await asyncio.Event().wait()

    task = asyncio.ensure_future(stuck())
    await held.wait()
    waiting = asyncio.ensure_future(_hold(budget.job("b/y")))
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await waiting
    assert budget.running == 0


def test_a_budget_needs_a_slot() -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        AttemptBudget(worker=0, per_repo=1)
