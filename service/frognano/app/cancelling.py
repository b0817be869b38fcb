"""A run's pipeline, stopped when the issue's run is cancelled in Redis (label, close, stop)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from frognano.agent.loop import Progress
from frognano.app.intake import IntakeQueue

__all__ = ["CANCEL_POLL_SECONDS", "RunCancelled", "cancellable"]

CANCEL_POLL_SECONDS = 2.0

T = TypeVar("T")


class RunCancelled(Exception):
    """The issue's run was cancelled (label removed, issue closed)."""


async def cancellable(
    queue: IntakeQueue,
    run_id: str,
    start: Callable[[Callable[[Progress], None]], Awaitable[T]],
    progress: Callable[[Progress], None],
) -> T:
    """Run the pipeline (or a best-of-N run's attempts), cancelling it (sandboxes closed,
    reports written) when the issue's run is cancelled in Redis."""
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
