"""The trajectory file: flushed line by line, readable after a crash, printable for people."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frognano.agent.trajectory import NullTrajectory, TrajectoryWriter, read_events, render


def test_each_event_is_on_disk_before_write_returns(tmp_path: Path) -> None:
    path = tmp_path / "run" / "trajectory.jsonl"
    writer = TrajectoryWriter(path)
    writer.write("run_start", task="fix it", run_id="r1")
    # Read through a separate handle while the writer is still open.
    first = json.loads(path.read_text().splitlines()[0])
    assert first["event"] == "run_start"
    assert first["task"] == "fix it"
    assert isinstance(first["t"], float)
    writer.write("tool", step=1, name="Bash", result="ünïcode ✓", is_error=False, duration=0.1)
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.write("late")


def test_a_partial_last_line_is_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TrajectoryWriter(path) as writer:
        writer.write("run_start", task="x")
        writer.write("assistant", step=1, content="hi", tool_calls=[])
    with path.open("ab") as handle:
        handle.write(b'{"event": "tool", "step": 1, "resu')
    read = read_events(path)
    assert [event["event"] for event in read.events] == ["run_start", "assistant"]
    assert read.damaged_lines == [3]


def test_render_shows_turns_calls_and_results(tmp_path: Path) -> None:
    events = [
        {"event": "run_start", "t": 0.0, "run_id": "r1", "task": "Fix the bug"},
        {
            "event": "assistant",
            "t": 1.0,
            "step": 1,
            "content": "",
            "reasoning": "Look at calc.py first.",
            "tool_calls": [{"id": "c1", "name": "Read", "arguments": '{"file_path":"/w/a.py"}'}],
            "finish_reason": "tool_calls",
            "usage": {"prompt_tokens": 900, "completion_tokens": 20, "cached_tokens": 0},
        },
        {"event": "tool", "t": 1.1, "step": 1, "name": "Read", "result": "x" * 50,
         "is_error": False, "duration": 0.02},
        {"event": "run_end", "t": 2.0, "stop_reason": "completed", "steps": 1, "detail": "done",
         "summary": "Fixed."},
    ]  # fmt: skip
    text = "\n".join(render(events, max_chars=20))
    assert "step 1: assistant (finish=tool_calls, prompt=900, cached=0, completion=20)" in text
    assert "thinking: Look at calc.py firs ... [2 more characters]" in text
    assert '-> Read({"file_path":"/w/a.py"})' in text
    assert "step 1: Read in 0.02s" in text
    assert "x" * 20 + " ... [30 more characters]" in text
    assert "run ended: completed after 1 steps (done)" in text


def test_null_trajectory_records_nothing() -> None:
    NullTrajectory().write("anything", x=1)
