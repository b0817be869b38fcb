"""Live progress of a run on a terminal: stage, step N/max, current tool, tokens, elapsed."""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console
from rich.status import Status
from rich.text import Text

from frognano.agent.loop import Progress
from frognano.terminal import printable


class LiveProgress:
    """A one-line status that `solve` updates; a context manager around the run."""

    def __init__(self, console: Console, max_steps: int) -> None:
        self.console = console
        self.max_steps = max_steps
        self._status = Status("starting", console=console)
        self._started = time.monotonic()

    # Text, never markup, and control characters shown: a tool's name is the model's word.

    def stage(self, name: str) -> None:
        line = Text.assemble((self._elapsed(), "dim"), " ", printable(name))
        self.console.print(line, highlight=False)
        self._status.update(Text(printable(name)))

    def update(self, progress: Progress) -> None:
        doing = "waiting for the model" if progress.phase == "model" else progress.phase
        self._status.update(
            Text(
                printable(
                    f"step {progress.step}/{progress.max_steps} · {doing} · "
                    f"{progress.prompt_tokens:,} tokens in context · {self._elapsed()}"
                )
            )
        )

    def _elapsed(self) -> str:
        seconds = int(time.monotonic() - self._started)
        return f"{seconds // 60}:{seconds % 60:02d}"

    def __enter__(self) -> LiveProgress:
        self._status.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._status.stop()
