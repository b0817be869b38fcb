"""The App's comments on an issue: the status comment while a run is on, and short replies."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from frognano.agent.loop import Progress
from frognano.app.intake import IntakeQueue
from frognano.app.markdown import code, mention
from frognano.app.status import Stage, Testing, Working, status_comment
from frognano.github.client import RepoClient
from frognano.log import get_logger

__all__ = ["PROGRESS_EVERY_SECONDS", "StatusComment", "reply", "reply_marker"]

log = get_logger(__name__)

PROGRESS_EVERY_SECONDS = 30.0
"""The status comment shows the step count at most this often (GitHub counts each edit)."""


class StatusComment:
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

    async def say(self, stage: Stage) -> None:
        """Show what `stage` says."""
        await self.set(status_comment(stage, marker=self.marker))

    async def set(self, body: str) -> None:
        pending = self._pending
        if pending is not None and pending is not asyncio.current_task() and not pending.done():
            # A throttled progress edit still in flight must not land after this one.
            with contextlib.suppress(Exception):
                await pending
        for waiting in await self.queue.take_waiting(self.repo_id, self.number, self.run_id):
            self.notes.append(
                f"_{code(waiting.labeller)} added the {code(waiting.label)} label again while "
                "this run was in progress; that did not start a second run. Add it again once "
                "this run has ended to start over._"
            )
        text = body + "".join(f"\n\n{note}" for note in self.notes)
        await self.client.upsert_status_comment(self.number, self.marker, text)
        self._last = time.monotonic()

    def _later(self, body: str) -> None:
        if self._pending is None or self._pending.done():
            self._pending = asyncio.ensure_future(self.set(body))

    def stage(self, name: str) -> None:
        """The pipeline's `on_stage`: verification shows as testing, without waiting."""
        log.info("run.stage", stage=name)
        if name.startswith("verifying"):
            self._later(status_comment(Testing(run_id=self.run_id), marker=self.marker))

    def progress(self, max_steps: int) -> Callable[[Progress], None]:
        """The pipeline's `on_progress`: the agent's step, every PROGRESS_EVERY_SECONDS."""

        def update(progress: Progress) -> None:
            if time.monotonic() - self._last < PROGRESS_EVERY_SECONDS:
                return
            self._last = time.monotonic()
            working = Working(
                step=progress.step, max_steps=max_steps, tool=progress.phase, run_id=self.run_id
            )
            self._later(status_comment(working, marker=self.marker))

        return update


# -- the App's short replies on an issue: one comment per request, found again by its marker --


def reply_marker(key: str) -> str:
    """The hidden marker of the App's reply to the request `key` (a comment or delivery id)."""
    safe = "".join(c for c in key if c.isalnum() or c in "-_.")
    return f"<!-- frognano:reply:{safe} -->"


async def reply(client: RepoClient, issue_number: int, key: str, login: str, text: str) -> None:
    """Tell `login` why their request was not served, once: a re-run edits the same comment.
    `text` is FrogNano's words, untrusted parts already made inert (markdown.py)."""
    body = f"{mention(login)} {text}"
    await client.upsert_status_comment(issue_number, reply_marker(key), body)
    log.info("reply.posted", issue=issue_number, key=key)
