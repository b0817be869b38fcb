"""How many attempts a worker runs at once: all together, and of one repository."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

__all__ = ["AttemptBudget", "JobBudget"]

# An attempt is one `solve` (its sandboxes, its agent, its verification). arq bounds the
# worker's jobs by `--max-jobs`; best-of-N (policy agent.attempts) makes one job run several
# attempts, so the attempts themselves are counted here against the same number. A job
# whose every attempt has ended may always start one more (unless the worker is full), so a
# single-attempt run never waits for the per-repository cap and a best-of-N run always
# progresses; its extra attempts wait until the repository is under its cap. A waiting
# attempt holds nothing, so no job can hold up another for ever. The counts are this
# process's: each worker process keeps its own budget.


@dataclass
class AttemptBudget:
    """The worker's slots for attempts: at most `worker` at once, and at most `per_repo`
    of one repository beyond each job's first."""

    worker: int
    per_repo: int
    running: int = 0
    by_repo: Counter[str] = field(default_factory=Counter)
    _changed: asyncio.Condition | None = None

    def __post_init__(self) -> None:
        if self.worker < 1 or self.per_repo < 1:
            raise ValueError("an attempt budget needs at least one slot")

    def job(self, repo: str) -> JobBudget:
        """The slots of one job's attempts, on `repo` (`owner/name`)."""
        return JobBudget(self, repo)

    def _condition(self) -> asyncio.Condition:
        # Made on first use, inside the worker's event loop (never at import or build time).
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    def _free(self, job: JobBudget) -> bool:
        if self.running >= self.worker:
            return False
        return job.running == 0 or self.by_repo[job.repo] < self.per_repo


@dataclass
class JobBudget:
    """One job's attempts, counted in its worker's budget."""

    budget: AttemptBudget
    repo: str
    running: int = 0

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Wait for a free slot, hold it for the block, then give it back."""
        budget, changed = self.budget, self.budget._condition()
        async with changed:
            await changed.wait_for(lambda: budget._free(self))
            budget.running += 1
            budget.by_repo[self.repo] += 1
            self.running += 1
        try:
            yield
        finally:
            # Shielded: a cancelled attempt must still give its slot back to the others.
            await asyncio.shield(self._release())

    async def _release(self) -> None:
        budget, changed = self.budget, self.budget._condition()
        async with changed:
            budget.running -= 1
            budget.by_repo[self.repo] -= 1
            if budget.by_repo[self.repo] <= 0:
                del budget.by_repo[self.repo]
            self.running -= 1
            changed.notify_all()
