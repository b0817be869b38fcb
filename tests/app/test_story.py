"""The run's story on the verification check: what it shows, and that it fits GitHub's limits."""

from __future__ import annotations

from frognano.agent.story import Story, StoryLine
from frognano.app.markdown import CHECK_BUDGET, Part, fit, size
from frognano.app.story import HEADING, story_parts

GITHUB_OUTPUT_LIMIT = 65_535  # check run output.text, in characters


def _long_run(steps: int = 150) -> Story:
    lines = [
        StoryLine(
            step=n,
            tool="Bash",
            arguments=f"step {n}: " + "python -m pytest -q tests/" + "y" * 120,
            outcome=f"result {n}: " + "z" * 140,
            is_error=n % 7 == 0,
        )
        for n in range(1, steps + 1)
    ]
    return Story(
        lines=lines,
        stop_reason="step_limit",
        detail="the step limit (150) was reached",
        summary="I ran out of steps. " + "w" * 30_000 + " THE END",
        steps=steps,
        prompt_tokens=1_234_567,
        completion_tokens=8_910,
        cached_tokens=1_000_000,
        elapsed_seconds=3725.0,
        compactions=2,
    )


def test_a_150_step_run_fits_the_check_and_keeps_its_first_and_last_steps() -> None:
    # Beside it, a long test log competes for the same budget, as in the real check text.
    log = Part("log line\n" * 20_000, keep="tail")
    text = fit([*story_parts(_long_run()), log], CHECK_BUDGET)
    assert size(text) <= CHECK_BUDGET < GITHUB_OUTPUT_LIMIT
    assert HEADING in text
    assert "150 steps. Stopped: step_limit (the step limit (150) was reached)." in text
    assert "Tokens: 1,234,567 prompt (1,000,000 cached), 8,910 completion." in text
    assert "Time: 62 min 5 s. The history was compacted 2 time(s)." in text
    assert "step 1: python" in text
    assert "step 150: python" in text
    assert "result 150: " in text
    assert "characters cut to fit GitHub's size limit" in text
    assert "> I ran out of steps." in text
    assert "THE END" in text


def test_a_short_run_is_shown_whole_with_failures_marked() -> None:
    story = Story(
        lines=[
            StoryLine(1, "Read", "/workspace/a.py", "3 lines"),
            StoryLine(2, "Edit", "/workspace/a.py", "String to replace not found", True),
            StoryLine(3, "answer", "", "Done"),
        ],
        stop_reason="completed",
        summary="Done",
        steps=3,
    )
    text = fit(story_parts(story), CHECK_BUDGET)
    assert "cut to fit" not in text
    assert "`!` marks a tool call that failed." in text
    rows = text.split("```text\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert rows == [
        "   1   Read   /workspace/a.py  -> 3 lines",
        "   2 ! Edit   /workspace/a.py  -> String to replace not found",
        "   3   answer -> Done",
    ]


def test_model_and_repository_text_cannot_escape_the_block_or_ping_anyone() -> None:
    story = Story(
        lines=[StoryLine(1, "Bash", "echo ````` @octocat fixes #1", "\x1b[31m@admin\x1b[0m ```")],
        stop_reason="completed",
        summary="Closes #12, cc @maintainers <img src=x onerror=alert(1)>",
        steps=1,
    )
    text = fit(story_parts(story), CHECK_BUDGET)
    opening = text.split("\n")[text.split("\n").index("`" * 6 + "text")]
    assert opening == "``````text"  # longer than any backtick run inside
    assert "\x1b" not in text
    assert "@octocat" not in text
    assert "@admin" not in text
    assert "@maintainers" not in text
    assert "<img" not in text
    assert "Closes #12" not in text


def test_no_trajectory_is_said_plainly() -> None:
    assert "No trajectory was recorded" in fit(story_parts(None), CHECK_BUDGET)
