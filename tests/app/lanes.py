"""A scripted model for concurrent attempts: each conversation claims a lane, then follows it."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Sequence
from typing import Any

from tests.fakes.model_server import Turn

_LANE = re.compile(r"LANE-(\d+)-MARK")


class Lanes:
    """The scripted model server's `default=`: the attempts of a best-of-N run send alike
    first requests, so the first turn of each conversation is a Bash `echo LANE-k-MARK` that
    claims the next free lane; later requests carry that call in their history and get the
    lane's script, one turn per step. With `hold_until`, each claim waits until that many
    claims wait together, or until `hold_seconds` pass once (then nothing waits again): the
    most claims seen waiting together (`peak`) is how many attempts ran at once."""

    def __init__(
        self,
        scripts: Sequence[Sequence[Turn]],
        *,
        hold_until: int | None = None,
        hold_seconds: float = 8.0,
    ) -> None:
        self.scripts = [list(script) for script in scripts]
        self.claimed = 0
        self.peak = 0
        self._waiting = 0
        self._released = hold_until is None
        self._hold_until = hold_until or 0
        self._hold_seconds = hold_seconds
        self._changed = threading.Condition()

    def __call__(self, request: dict[str, Any]) -> Turn:
        messages = request.get("messages") or []
        found = _LANE.search(json.dumps(messages))
        if found is None:
            return self._claim()
        lane = int(found.group(1))
        step = sum(1 for m in messages if m.get("role") == "assistant")
        script = self.scripts[lane]
        return script[min(step - 1, len(script) - 1)]

    def _claim(self) -> Turn:
        with self._changed:
            lane = self.claimed
            self.claimed += 1
            self._waiting += 1
            self.peak = max(self.peak, self._waiting)
            self._changed.notify_all()
            deadline = time.monotonic() + self._hold_seconds
            while not self._released and self._waiting < self._hold_until:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._released = True
                    break
                self._changed.wait(left)
            self._released = True
            self._changed.notify_all()
            self._waiting -= 1
        if lane >= len(self.scripts):
            raise AssertionError(f"more attempts than lanes ({len(self.scripts)})")
        return Turn(calls=[("Bash", {"command": f"echo LANE-{lane}-MARK"})])
