"""One attempt at a run, first or follow-up: its folder, job, status comment, solve and story."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import Counter

from frognano.agent.loop import Progress
from frognano.agent.story import Story, story_of
from frognano.agent.trajectory import read_events
from frognano.app.budget import AttemptBudget
from frognano.app.cancelling import cancellable
from frognano.app.intake import IntakeQueue
from frognano.app.ledger import Ledger
from frognano.app.status import Working, status_marker
from frognano.app.status_comment import StatusComment, reply
from frognano.github.auth import GitHubApp
from frognano.github.client import RepoClient
from frognano.log import get_logger
from frognano.policy.models import EffectivePolicy
from frognano.policy.store import PolicyStore
from frognano.run.baselines import RedisCache
from frognano.run.followup import FollowUp
from frognano.run.job import SolveJob
from frognano.run.leftout import LeftOutLink
from frognano.run.pipeline import SolveOutcome, solve
from frognano.run.ports import RunPorts
from frognano.settings import Settings

__all__ = ["BRANCH_MOVED", "Attempt", "RunDeps", "say_branch_moved", "story_in"]

log = get_logger(__name__)

BRANCH_MOVED = "The branch moved while FrogNano worked on your request: nothing was committed."
"""The reply when a person pushed to FrogNano's branch while a follow-up worked."""


@dataclass(kw_only=True)
class RunDeps:
    """What a run needs; the worker's WorkerDeps, made once by `build_worker`, is one."""

    settings: Settings
    app: GitHubApp
    policies: PolicyStore
    queue: IntakeQueue
    ledger: Ledger
    """FrogNano's own records (the issue as labelled, who pushed to its pull requests)."""
    runs: Counter
    """Run jobs by how they ended, label `result`."""
    budget: AttemptBudget
    """The worker's slots for attempts (best-of-N runs several per job)."""
    busy_retry_seconds: float
    """How long a run that found the sandbox quota full waits, times its attempt number,
    before it tries again (at most RUN_MAX_TRIES attempts in all)."""
    make_ports: Callable[[Settings], RunPorts] = RunPorts.from_settings
    """How a run reaches the model and makes sandboxes, from the settings as they are when
    the run starts (the composition root's choice)."""

    def ports(self) -> RunPorts:
        return self.make_ports(self.settings)


@dataclass(frozen=True)
class Attempt:
    """One try (arq's `number`, from 1) of the run `run_id`: what an issue's run and a
    follow-up on its pull request do alike. They differ only in their input (a follow-up
    adds the head and the review) and in what they publish (a pull request, or one commit
    on it)."""

    deps: RunDeps
    run_id: str
    number: int
    status: StatusComment

    @classmethod
    def on_issue(
        cls,
        deps: RunDeps,
        client: RepoClient,
        *,
        issue: int,
        repo_id: int,
        run_id: str,
        number: int,
        note: str | None = None,
    ) -> Attempt:
        """The attempt, with the issue's status comment (found again by its marker) kept
        current through `client`; `note` (Markdown, e.g. `policy_note`'s) under every text
        it shows."""
        status = StatusComment(
            client, issue, status_marker(issue), queue=deps.queue, repo_id=repo_id, run_id=run_id
        )
        if note is not None:
            status.notes.append(note)
        return cls(deps, run_id, number, status)

    @property
    def out_dir(self) -> Path:
        """Where this attempt's reports and trajectory go."""
        return self.deps.settings.trajectory_dir / self.trajectory_folder

    @property
    def trajectory_folder(self) -> str:
        """`RUN_ID/attempt-N`, under FROGNANO_TRAJECTORY_DIR: how texts on GitHub name it
        (never by its host path)."""
        return f"{self.run_id}/attempt-{self.number}"

    def job(
        self,
        *,
        repo_dir: Path,
        title: str,
        body: str,
        repo: str,
        policy: EffectivePolicy,
        left_out: tuple[LeftOutLink, ...],
        follow_up: FollowUp | None = None,
    ) -> SolveJob:
        """The pipeline's job for a tree the worker downloaded (GitHub's tarball: nothing
        to leave out), with the worker's settings."""
        settings = self.deps.settings
        return SolveJob(
            repo_dir=repo_dir,
            exclude=(),
            title=title,
            body=body,
            out_dir=self.out_dir,
            repo=repo,
            policy=policy,
            policy_source=f"{settings.policy_dir}",
            backend=settings.sandbox,
            run_id=self.run_id,
            attempt=self.number,
            baseline_cache=RedisCache(self.deps.queue.redis),
            wait_for_model=True,
            follow_up=follow_up,
            left_out_links=left_out,
        )

    async def solve(self, job: SolveJob, *, can_cancel: bool) -> SolveOutcome:
        """The pipeline on `job`, its progress on the status comment; `can_cancel`: stopped
        when the run is cancelled in Redis (an issue's run, which a label removal ends). It
        holds one of the worker's attempt slots while it runs (app/budget.py)."""
        deps, status = self.deps, self.status
        max_steps = job.policy.agent.max_steps
        await status.say(Working(step=0, max_steps=max_steps, run_id=self.run_id))
        slots = deps.budget.job(job.repo)

        async def run(progress: Callable[[Progress], None]) -> SolveOutcome:
            async with slots.slot():
                return await solve(deps.ports(), job, on_progress=progress, on_stage=status.stage)

        if not can_cancel:
            return await run(status.progress(max_steps))
        return await cancellable(deps.queue, self.run_id, run, status.progress(max_steps))

    def story(self) -> Story | None:
        """The run's story from the trajectory this attempt wrote (None when none was kept)."""
        return story_in(self.out_dir)


def story_in(out_dir: Path) -> Story | None:
    """The story of the trajectory a run wrote to `out_dir` (None when none was kept)."""
    path = out_dir / "trajectory.jsonl"
    if not path.is_file():
        return None
    return story_of(read_events(path).events)


async def say_branch_moved(
    client: RepoClient, pull_number: int, reply_key: str, commenter: str
) -> str:
    """Tell the person who asked that the branch moved under the follow-up; "moved"."""
    await reply(client, pull_number, reply_key, commenter, BRANCH_MOVED)
    log.warning("followup.branch_moved")
    return "moved"
