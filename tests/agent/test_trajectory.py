"""The trajectory file: flushed line by line, readable after a crash, printable for people."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from frognano.agent.trajectory import NullTrajectory, TrajectoryWriter, read_events, render
from frognano.agent.trajectory_view import RunFiles, run_files


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


SERVER_RUN = [
    {"event": "run_info", "t": 0.0, "run_id": "r1", "frognano": "0.1.0", "repo": "o/r",
     "base_commit": "29bc897d5c3e775fa46829280e8cbebb32c572e0", "policy": "built-in defaults",
     "model": {"kind": "server", "name": "frognano",
               "served": {"id": "frognano", "max_model_len": 131072},
               "model_info": {"model_path": "/models/Qwen3.5", "weight_version": "default"}},
     "sampling": {"max_tokens": 8192, "temperature": 0.6, "top_p": 0.95, "top_k": 20,
                  "enable_thinking": True},
     "sandbox": {"backend": "local", "mechanism": "unshare", "host_paths": []}},
    {"event": "run_start", "t": 0.0, "task": "Fix the bug",
     "limits": {"max_steps": 150, "time_limit_seconds": 600.0, "context_tokens": 131072}},
    {"event": "assistant", "t": 1.0, "step": 1, "content": "", "reasoning": None,
     "finish_reason": "tool_calls", "model": "frognano",
     "usage": {"prompt_tokens": 900, "completion_tokens": 20, "cached_tokens": None},
     "tool_calls": [{"id": "c1", "name": "Edit", "arguments": json.dumps(
         {"file_path": "/w/calc.py", "old_string": "def f():\n    return 1\n",
          "new_string": "def f():\n    return 2\n"})}]},
    {"event": "assistant", "t": 2.0, "step": 2, "content": "Done.", "finish_reason": "stop",
     "model": "frognano", "usage": None, "tool_calls": []},
    {"event": "run_end", "t": 2.0, "stop_reason": "completed", "steps": 2,
     "stats": {"prompt_tokens": 1900, "completion_tokens": 40, "cached_tokens": 900}},
]  # fmt: skip


def test_render_names_the_model_the_settings_and_the_tokens() -> None:
    text = "\n".join(render(SERVER_RUN))
    assert text.startswith("run r1 with model frognano\n")
    assert "    run: r1 of o/r at 29bc897d5c3e (FrogNano 0.1.0)" in text
    assert "    model: frognano (the name asked for)" in text
    assert "    served: id frognano, max_model_len 131072" in text
    assert "    identity: model_path /models/Qwen3.5, weight_version default" in text
    assert "    replies from: frognano" in text
    assert (
        "    sampling: temperature 0.6, top_p 0.95, top_k 20, max_tokens 8192, thinking on" in text
    )
    assert "    limits: max_steps 150, time_limit_seconds 600.0, context_tokens 131072" in text
    assert "    sandbox: local (unshare)" in text
    assert "    tokens in all: prompt 1900, cached 900, completion 40" in text
    assert "step 1: assistant (finish=tool_calls, prompt=900, cached=not reported, " in text
    assert "step 2: assistant (finish=stop, no token counts reported)" in text
    assert "?" not in text
    assert '"run_id"' not in text  # no raw JSON dump of run_info


def test_an_edit_call_is_shown_as_a_diff() -> None:
    text = "\n".join(render(SERVER_RUN))
    assert (
        "    -> Edit\n"
        "        --- /w/calc.py\n"
        "        +++ /w/calc.py\n"
        "         def f():\n"
        "        -    return 1\n"
        "        +    return 2"
    ) in text


def test_render_shows_the_verdict_and_the_patch_of_the_run_folder(tmp_path: Path) -> None:
    report = {"outcome": {"patch_ready": True, "reason": "the gate passed"},
              "patch": {"files": ["calc.py"], "insertions": 1, "deletions": 1},
              "verification": {"reason": "1 fixed", "verification": {"summary": "2 passed"}},
              "gate": {"passed": True, "findings": []}}  # fmt: skip
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "patch.diff").write_bytes(b"+++ b/calc.py\n-    return 1\n+    return 2\x1b[2J\n")
    files = run_files(tmp_path / "trajectory.jsonl")
    text = "\n".join(render(SERVER_RUN, files=files))
    assert "    verdict: patch ready for review: the gate passed" in text
    assert "    patch: +1 -1 in calc.py" in text
    assert "    verification: 1 fixed; tests: 2 passed" in text
    assert "    gate: passed, 0 finding(s)" in text
    assert text.endswith(
        "patch.diff:\n    +++ b/calc.py\n    -    return 1\n    +    return 2\\x1b[2J"
    )
    # Without the files, or with a report that is not one, nothing is claimed.
    (tmp_path / "report.json").write_text("[1]")
    (tmp_path / "patch.diff").unlink()
    assert run_files(tmp_path / "trajectory.jsonl") == RunFiles()


def test_a_replay_says_what_it_replays_and_an_old_run_says_it_did_not_record() -> None:
    replay = {"event": "run_info", "run_id": "r2", "model": {"kind": "replay", "replay_of": {
        "trajectory": "/runs/r1/trajectory.jsonl", "run_id": "r1",
        "model": {"kind": "server", "name": "frognano"}}}}  # fmt: skip
    text = "\n".join(render([replay, *SERVER_RUN[1:]]))
    assert "    model: none asked: a replay of recorded turns" in text
    assert "    replay of: /runs/r1/trajectory.jsonl (run r1, model frognano)" in text
    old = "\n".join(render([{"event": "run_start", "t": 0.0, "task": "x"}]))
    assert old.startswith("run ? with model not recorded\n")
    assert "model: not recorded" in old
