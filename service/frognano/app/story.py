"""The run's story as the verification check shows it: a line per tool call, then the ending."""

from __future__ import annotations

from frognano.agent.story import Story, StoryLine
from frognano.app.markdown import Part, fence, fixed, md, quote

HEADING = "### What the agent did"


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def _row(line: StoryLine, width: int) -> str:
    flag = "!" if line.is_error else " "
    arguments = f"{line.arguments}  " if line.arguments else ""
    return f"{line.step:>4} {flag} {line.tool:<{width}} {arguments}-> {line.outcome}"


def story_parts(story: Story | None) -> list[Part]:
    """The story for a check run's text; the step table and the summary are cut in the
    middle when the text must shrink, so the first and the last steps both stay."""
    if story is None:
        return [fixed(f"\n{HEADING}\n\nNo trajectory was recorded for this run.")]
    ending = f"Stopped: {md(story.stop_reason)}"
    if story.detail:
        ending += f" ({md(story.detail)})"
    facts = (
        f"{story.steps} steps. {ending}. "
        f"Tokens: {story.prompt_tokens:,} prompt ({story.cached_tokens:,} cached), "
        f"{story.completion_tokens:,} completion. Time: {_duration(story.elapsed_seconds)}."
    )
    if story.compactions:
        facts += f" The history was compacted {story.compactions} time(s)."
    if any(line.is_error for line in story.lines):
        facts += " `!` marks a tool call that failed."
    parts = [fixed(f"\n{HEADING}\n\n{facts}\n")]
    if story.lines:
        width = max(len(line.tool) for line in story.lines)
        # Tool arguments and results are the agent's and the repository's text: inside a
        # fence (which drops their control characters) GitHub renders nothing of them.
        table = "\n".join(_row(line, width) for line in story.lines)
        parts.append(Part(table, render=fence, keep="ends"))
    if story.summary.strip():
        parts.append(fixed("\nThe agent's own summary (model text, not checked by FrogNano):\n"))
        parts.append(Part(story.summary.strip(), render=quote, keep="ends"))
    return parts
