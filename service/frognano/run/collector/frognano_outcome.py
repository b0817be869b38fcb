"""How pytest's reports of one test become its outcome and the line that says why it failed."""

# Runs inside the sandbox, loaded by frognano_collector from its own folder (by path, so no
# module of the repository can stand in for it), in whatever Python the repository uses
# (3.7+): the standard library and pytest only.

from __future__ import annotations

import pytest

PHASES = ("setup", "call", "teardown")
MAX_TEXT = 500


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:MAX_TEXT]
    return ""


def last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()[:MAX_TEXT]
    return ""


def longrepr_text(longrepr: object) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])  # a skip's (path, line, reason)
    try:
        return str(longrepr)
    except Exception:  # a broken repr from test code must not break the collector
        return ""


def crash(report: pytest.TestReport) -> str:
    """The line that says why `report` failed."""
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    message = getattr(getattr(longrepr, "reprcrash", None), "message", None)
    if isinstance(message, str) and message.strip():
        return first_line(message)
    return last_line(longrepr_text(longrepr))


def collect_message(report: pytest.CollectReport) -> str:
    """The first line of a collection error, plus pytest's `E` line naming the exception: an
    import error's first line alone only says which module could not be imported."""
    text = longrepr_text(report.longrepr)
    first = first_line(text)
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    if errors and errors[-1] and errors[-1] not in first:
        first = first + " " + errors[-1]
    return first[:MAX_TEXT]


class Phase:
    def __init__(self) -> None:
        self.outcome = ""
        self.crash = ""
        self.wasxfail = False
        self.duration = 0.0


def outcome_of(phases: dict[str, Phase]) -> tuple[str, str]:
    """An item's outcome and the crash line of the phase that decided it."""
    setup, call, teardown = (phases.get(name) for name in PHASES)
    if setup is not None and setup.outcome == "failed":
        outcome, crash = "error", setup.crash
    elif setup is not None and setup.outcome == "skipped":
        outcome, crash = ("xfailed" if setup.wasxfail else "skipped"), ""
    elif call is None:
        outcome, crash = "error", "the test did not finish: no call phase was reported"
    elif call.outcome == "failed":
        outcome, crash = "failed", call.crash  # a strict XPASS arrives here as failed
    elif call.outcome == "skipped":
        outcome, crash = ("xfailed" if call.wasxfail else "skipped"), ""
    elif call.outcome == "passed":
        outcome, crash = ("xpassed" if call.wasxfail else "passed"), ""
    else:
        outcome, crash = "error", "unknown call outcome " + repr(call.outcome)[:100]
    if outcome not in ("failed", "error"):
        if teardown is None:
            outcome, crash = "error", "the test did not finish: no teardown was reported"
        elif teardown.outcome == "failed":
            outcome, crash = "error", teardown.crash
    return outcome, crash
