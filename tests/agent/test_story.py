"""The run's story from trajectory events: one line per tool call, and how the run ended."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from frognano.agent.story import ARGUMENT_CHARS, Story, StoryLine, clipped_line, story_of
from frognano.agent.trajectory import TrajectoryWriter, read_events

RECORDING = Path(__file__).resolve().parents[2] / "examples" / "recordings" / "calculator"


def test_the_recorded_example_reads_as_its_steps() -> None:
    story = story_of(read_events(RECORDING / "trajectory.jsonl").events)
    assert [(line.step, line.tool) for line in story.lines] == [
        (1, "Glob"),
        (2, "Read"),
        (3, "Edit"),
        (4, "Bash"),
        (5, "answer"),
    ]
    assert story.lines[3].arguments == "python -m pytest -q -p no:cacheprovider"
    assert story.lines[3].outcome == "4 passed in 0.01s"  # Bash: the last line, the totals
    assert story.lines[1].outcome == "13 lines"
    assert story.stop_reason == "completed"
    assert story.steps == 5
    assert story.prompt_tokens > story.cached_tokens > 0
    assert story.summary.startswith("mean([]) now raises ValueError")


def _call(**arguments: object) -> str:
    return json.dumps(arguments)


def test_a_written_trajectory_reads_back_as_the_same_story(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.jsonl"
    with TrajectoryWriter(path) as trajectory:
        trajectory.write("run_start", task="t")
        trajectory.write("assistant", step=1, content="", tool_calls=[{"name": "Bash"}] * 2)
        trajectory.write(
            "tool", step=1, name="Bash", arguments=_call(command="ls\n  -la"),
            result="a\nb\n\n", is_error=False,
        )  # fmt: skip
        trajectory.write(
            "tool", step=1, name="Edit", arguments=_call(file_path="/workspace/x.py"),
            result="<tool_use_error>String to replace not found in file.\nmore</tool_use_error>",
            is_error=True,
        )  # fmt: skip
        trajectory.write("assistant", step=2, content="Done.\nAll good.", tool_calls=[])
        trajectory.write(
            "run_end", stop_reason="completed", detail="", summary="Done.", steps=2,
            stats={"prompt_tokens": 100, "completion_tokens": 7, "cached_tokens": 40,
                   "elapsed_seconds": 61.5, "compactions": 1},
        )  # fmt: skip
    assert story_of(read_events(path).events) == Story(
        lines=[
            StoryLine(1, "Bash", "ls -la", "b"),
            StoryLine(1, "Edit", "/workspace/x.py", "String to replace not found in file.", True),
            StoryLine(2, "answer", "", "Done. All good."),
        ],
        stop_reason="completed",
        summary="Done.",
        steps=2,
        prompt_tokens=100,
        completion_tokens=7,
        cached_tokens=40,
        elapsed_seconds=61.5,
        compactions=1,
    )


def test_a_cut_short_or_garbled_trajectory_still_tells_what_it_can() -> None:
    events: list[dict[str, Any]] = [
        {"event": "tool", "step": "x", "name": 5, "arguments": "{not json", "result": None},
        {"event": "tool", "step": 3, "name": "Glob", "arguments": "[1, 2]", "result": ""},
        {"event": "run_end", "stats": "nope", "steps": True},
    ]
    story = story_of(events)
    assert story.lines == [
        StoryLine(0, "5", "{not json", "(no output)"),
        StoryLine(3, "Glob", "[1, 2]", "(no output)"),
    ]
    assert story.stop_reason == "unknown"
    assert (story.steps, story.prompt_tokens, story.elapsed_seconds) == (3, 0, 0.0)
    assert story_of([]) == Story()


def test_long_arguments_are_cut_in_the_middle() -> None:
    command = "python -m pytest " + "x" * 500 + " --the-end"
    line = clipped_line(command, ARGUMENT_CHARS)
    assert len(line) == ARGUMENT_CHARS
    assert line.startswith("python -m pytest xx")
    assert line.endswith("x --the-end")
    assert "..." in line
    assert clipped_line("short", 10) == "short"


def test_the_host_folders_run_info_names_are_shown_by_their_placeholders() -> None:
    venv = "/srv/frognano/.venv"
    long_path = venv + "/lib/python3.11/site-packages/" + "deep/" * 60 + "x.py"
    events: list[dict[str, Any]] = [
        {"event": "run_info", "sandbox": {"backend": "local",
                                          "host_paths": [[venv, "<python>"], "junk"]}},
        {"event": "tool", "step": 1, "name": "Read", "arguments": _call(file_path=long_path),
         "result": "1\n2\n"},
        {"event": "tool", "step": 2, "name": "Bash", "arguments": _call(command="pytest"),
         "result": f'File "{venv}/lib/python3.11/site-packages/_pytest/main.py", line 3\n'
                   f"E   ImportError: {venv}2/x is not {venv}"},
        {"event": "assistant", "step": 3, "content": f"Looked in {venv}/bin.", "tool_calls": []},
        {"event": "run_end", "stop_reason": "completed", "detail": f"ran {venv}/bin/python",
         "summary": f"See {venv}."},
    ]  # fmt: skip
    story = story_of(events)
    # Named before the middle of a long argument is cut, so no half of the folder is left.
    assert story.lines[0].arguments.startswith("<python>/lib/python3.11/site-packages/deep/")
    assert story.lines[1].outcome == f"E ImportError: {venv}2/x is not <python>"
    assert story.lines[2].outcome == "Looked in <python>/bin."
    assert (story.detail, story.summary) == ("ran <python>/bin/python", "See <python>.")
    # Without a run_info naming them, nothing is replaced (a trajectory from before, say).
    assert story_of(events[1:]).summary == f"See {venv}."
