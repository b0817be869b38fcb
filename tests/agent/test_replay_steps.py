"""The step audit of a replay: what it compares, what it normalises, where it stops."""

from __future__ import annotations

from typing import Any

import pytest

from frognano.agent.replay_steps import NORMALISATIONS, ReplayDiverged, StepAudit
from frognano.sandbox.hostpaths import HostPaths


def tool(step: int, result: str, **fields: Any) -> dict[str, Any]:
    event = {"step": step, "call_id": f"c{step}", "name": "Bash", "result": result,
             "arguments": '{"command": "pytest -q"}', "is_error": False, "executed": True,
             "duration": 0.5}  # fmt: skip
    return {**event, **fields}


END = {"stop_reason": "completed", "detail": "the agent finished"}


def test_identical_steps_reproduce_and_timings_are_not_compared() -> None:
    audit = StepAudit([tool(1, "ok")], END)
    audit.observe("tool", tool(1, "ok", duration=9.0))
    audit.observe("run_end", END)
    assert audit.reproduced
    assert audit.applied == set()


@pytest.mark.parametrize(
    ("recorded", "replayed", "name"),
    [
        ("4 passed in 0.01s", "4 passed in 12.34s", "test-durations"),
        ("1 failed in 61.20s (0:01:01)", "1 failed in 0.50s", "test-durations"),
        ("Ran 3 tests in 0.002s\n\nOK", "Ran 3 tests in 0.010s\n\nOK", "test-durations"),
        ("[FrogNano: about 9 minutes left.]", "[FrogNano: about 3 minutes left.]", "time-left"),
        ("/tmp/pytest-of-ann/pytest-4/x", "/tmp/pytest-of-bob/pytest-17/x", "pytest-temp-dirs"),
    ],
)
def test_what_varies_by_nature_is_normalised_and_named(
    recorded: str, replayed: str, name: str
) -> None:
    audit = StepAudit([tool(1, recorded)], END)
    audit.observe("tool", tool(1, replayed))
    audit.observe("run_end", END)
    assert audit.reproduced
    assert audit.applied == {name}


def test_host_folders_are_compared_by_their_placeholders() -> None:
    audit = StepAudit(
        [tool(1, "/old/venv/lib/site.py:3: warning")],
        END,
        recorded_hosts=HostPaths.of([("/old/venv", "<python>")]),
        replayed_hosts=HostPaths.of([("/new/env", "<python>")]),
    )
    audit.observe("tool", tool(1, "/new/env/lib/site.py:3: warning"))
    audit.observe("run_end", END)
    assert audit.reproduced
    assert audit.applied == {"host-paths"}


def test_a_forged_count_is_not_a_timing() -> None:
    audit = StepAudit([tool(1, "FORGED: 400 passed, coverage 100%")], END)
    with pytest.raises(ReplayDiverged, match=r"diverged at step 1 \(Bash call c1\): the tool"):
        audit.observe("tool", tool(1, "2 passed in 0.01s"))
    difference = audit.difference
    assert difference is not None
    assert difference.field == "result"
    assert "-FORGED: 400 passed, coverage 100%" in difference.diff()
    assert "+2 passed in <seconds>s" in difference.diff()
    audit.observe("run_end", {"stop_reason": "model_error"})  # after the stop: no new verdict
    assert not audit.reproduced
    assert audit.difference is difference


def test_the_arguments_and_the_error_flag_are_compared_exactly() -> None:
    audit = StepAudit([tool(1, "ok")], END)
    with pytest.raises(ReplayDiverged, match="the call's arguments differ"):
        audit.observe("tool", tool(1, "ok", arguments='{"command": "pytest -q -x"}'))
    flagged = StepAudit([tool(1, "ok")], END)
    with pytest.raises(ReplayDiverged, match="whether the call failed differs"):
        flagged.observe("tool", tool(1, "ok", is_error=True))


def test_a_replay_that_ends_early_or_otherwise_diverges() -> None:
    short = StepAudit([tool(1, "ok"), tool(2, "ok")], END)
    short.observe("tool", tool(1, "ok"))
    short.observe("run_end", {"stop_reason": "model_error", "detail": "no more turns"})
    assert short.difference is not None
    assert short.difference.field == "steps"
    assert not short.reproduced
    other_end = StepAudit([tool(1, "ok")], END)
    other_end.observe("tool", tool(1, "ok"))
    other_end.observe("run_end", {"stop_reason": "step_limit", "detail": "limit"})
    assert other_end.difference is not None
    assert other_end.difference.field == "stop_reason"
    longer = StepAudit([tool(1, "ok")], END)
    longer.observe("tool", tool(1, "ok"))
    with pytest.raises(ReplayDiverged, match="the number of tool calls differs"):
        longer.observe("tool", tool(2, "ok"))


def test_the_normalisations_have_distinct_names_and_reasons() -> None:
    names = [normalisation.name for normalisation in NORMALISATIONS]
    assert len(set(names)) == len(names)
    assert all(normalisation.why for normalisation in NORMALISATIONS)


def test_the_first_message_is_compared_but_for_its_random_marker() -> None:
    def start(marker: str, body: str) -> dict[str, Any]:
        task = f"Fix it.\n<<<ISSUE {marker}>>>\n{body}\n<<<END ISSUE {marker}>>>\n"
        return {"task": task, "system_prompt_sha256": "abc"}

    same = StepAudit([], END, start("1a5263fa9b53", "mean() crashes"))
    same.observe("run_start", start("0f0f0f0f0f0f", "mean() crashes"))
    same.observe("run_end", END)
    assert same.reproduced
    assert same.applied == {"task-marker"}
    other = StepAudit([], END, start("1a5263fa9b53", "mean() crashes"))
    with pytest.raises(ReplayDiverged, match="at the start of the run: the first message"):
        other.observe("run_start", start("0f0f0f0f0f0f", "add() is slow"))
    prompt = StepAudit([], END, start("1a5263fa9b53", "x"))
    with pytest.raises(ReplayDiverged, match="the system prompt differs"):
        prompt.observe("run_start", {**start("0f0f0f0f0f0f", "x"), "system_prompt_sha256": "d"})
