"""Best-of-N: an issue's attempts (policy `agent.attempts`), within budget, and the strongest."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from frognano.agent.loop import Progress
from frognano.agent.story import Story
from frognano.app.attempt import Attempt, story_in
from frognano.app.budget import JobBudget
from frognano.app.cancelling import cancellable
from frognano.app.markdown import md, shorten
from frognano.app.status import Working
from frognano.errors import SandboxBusy
from frognano.log import get_logger
from frognano.run.job import SolveJob
from frognano.run.pipeline import SolveOutcome, solve
from frognano.run.ranking import Strength, best, strength_of

__all__ = ["BestOf", "Candidate", "best_of", "choose"]

log = get_logger(__name__)

_REASON_CHARS = 300
"""How much of a run's reason one attempt's line shows (the full report is on the worker)."""


@dataclass(frozen=True)
class Candidate:
    """One attempt of a best-of-N run: its report (None when it ended without one) and
    where its trajectory is."""

    number: int
    """Which attempt, from 1 (SolveJob.candidate)."""
    folder: str
    """Its folder under FROGNANO_TRAJECTORY_DIR."""
    outcome: SolveOutcome | None
    failure: str | None = None
    """FrogNano's words for why it has no report (never the exception's text)."""
    story: Story | None = None
    raised: Exception | None = None
    """What it raised, re-raised when no attempt has a report."""

    @property
    def strength(self) -> Strength | None:
        """Its evidence, from its own report.json (never the sandbox's words)."""
        return strength_of(self.outcome.report) if self.outcome is not None else None

    @property
    def trajectory_location(self) -> str:
        return f"{self.folder}/trajectory.jsonl"


@dataclass(frozen=True)
class BestOf:
    """The attempts, in order, and which of them is chosen (the strongest with a report)."""

    candidates: tuple[Candidate, ...]
    chosen: int
    """An index into `candidates`."""

    @property
    def choice(self) -> Candidate:
        return self.candidates[self.chosen]

    @property
    def outcome(self) -> SolveOutcome:
        """The chosen attempt's outcome: what is published when it is ready."""
        outcome = self.choice.outcome
        if outcome is None:  # `choose` never picks one without a report
            raise ValueError("the chosen attempt has no report")
        return outcome

    def verdict(self, candidate: Candidate) -> str:
        """Markdown: what became of `candidate` and why it was or was not published."""
        outcome, chosen = candidate.outcome, self.choice
        if outcome is None:
            return f"failed: {candidate.failure or 'no report'}"
        reason = md(shorten(outcome.report["outcome"]["reason"] or "unknown", _REASON_CHARS))
        if candidate is chosen:
            return "published" if outcome.patch_ready else f"the strongest, not ready: {reason}"
        if not outcome.patch_ready:
            return f"not ready: {reason}"
        return f"weaker evidence than attempt {chosen.number}"


def choose(candidates: tuple[Candidate, ...]) -> BestOf:
    """The strongest attempt by ranking.best over those with a report (the earliest wins a
    tie); raises what the first attempt raised when none has one."""
    reported = [c for c in candidates if c.strength is not None]
    if not reported:
        raised = next((c.raised for c in candidates if c.raised is not None), None)
        raise raised or ValueError("no attempt to choose from")
    strongest = reported[best([c.strength for c in reported if c.strength is not None])]
    return BestOf(candidates, candidates.index(strongest))


async def best_of(attempt: Attempt, job: SolveJob, count: int, *, can_cancel: bool) -> BestOf:
    """`count` full runs of `job`, each with its own folder, sandboxes and trajectory, at once
    as far as the worker's budget allows (app/budget.py); one that fails does not stop the
    others. Cancelled with the issue's run when `can_cancel`."""
    deps, status = attempt.deps, attempt.status
    max_steps = job.policy.agent.max_steps
    await status.say(Working(step=0, max_steps=max_steps, run_id=attempt.run_id))
    slots = deps.budget.job(job.repo)

    async def every(progress: Callable[[Progress], None]) -> tuple[Candidate, ...]:
        runs = (_one(attempt, job, number, slots, progress) for number in range(1, count + 1))
        return tuple(await asyncio.gather(*runs))

    progress = _furthest(status.progress(max_steps))
    if can_cancel:
        candidates = await cancellable(deps.queue, attempt.run_id, every, progress)
    else:
        candidates = await every(progress)
    chosen = choose(candidates)
    log.info(
        "bestof.chosen",
        candidate=chosen.choice.number,
        ready=chosen.outcome.patch_ready,
        attempts=[c.strength.key() if c.strength else None for c in candidates],
    )
    return chosen


async def _one(
    attempt: Attempt,
    job: SolveJob,
    number: int,
    slots: JobBudget,
    progress: Callable[[Progress], None],
) -> Candidate:
    folder = f"{attempt.trajectory_folder}/candidate-{number}"
    out_dir = attempt.deps.settings.trajectory_dir / folder
    mine = dataclasses.replace(job, out_dir=out_dir, candidate=number)
    try:
        async with slots.slot():
            outcome = await solve(
                attempt.deps.ports(), mine, on_progress=progress, on_stage=attempt.status.stage
            )
    except Exception as exc:  # one attempt's failure must not sink the others
        log.warning("bestof.attempt_failed", candidate=number, error=str(exc))
        failure = (
            "no sandbox was free"
            if isinstance(exc, SandboxBusy)
            else "it failed with an internal error (the worker's log has it)"
        )
        return Candidate(number, folder, None, failure, story_in(out_dir), exc)
    return Candidate(number, folder, outcome, story=story_in(out_dir))


def _furthest(update: Callable[[Progress], None]) -> Callable[[Progress], None]:
    """The status comment's progress: the step of the attempt that is furthest on."""
    furthest = 0

    def forward(progress: Progress) -> None:
        nonlocal furthest
        if progress.step >= furthest:
            furthest = progress.step
            update(progress)

    return forward
