"""What a best-of-N run shows on GitHub: a line per attempt, a check run per unpublished one."""

from __future__ import annotations

from collections.abc import Mapping

from frognano.app.bestof import BestOf, Candidate
from frognano.app.markdown import CHECK_BUDGET, code, fit, fixed, own_link
from frognano.app.story import story_parts
from frognano.app.texts import verification_check
from frognano.github.client import RepoClient

__all__ = ["ATTEMPT_CHECK", "attempt_check_name", "attempt_lines", "write_attempt_checks"]

ATTEMPT_CHECK = "FrogNano / attempt"
"""The check runs that tell the story of the attempts not published: `FrogNano / attempt N`.
They are `neutral`: the commit they sit on is the chosen attempt's, not theirs."""


def attempt_check_name(number: int) -> str:
    return f"{ATTEMPT_CHECK} {int(number)}"


def attempt_lines(best: BestOf, links: Mapping[int, str]) -> list[str]:
    """Markdown, one line per attempt: what became of it and why, its evidence
    (`Strength.describe`, FrogNano's own numbers) and its story (`links` by attempt number, a
    check run; else where its trajectory is kept on the worker). The first line says which
    was chosen."""
    total, chosen = len(best.candidates), best.choice
    lines = [
        f"FrogNano made {total} attempts and chose attempt {chosen.number}, the one with the "
        "strongest evidence (its own verification, never the agent's words):"
    ]
    lines += [_line(best, c, total, links.get(c.number)) for c in best.candidates]
    return lines


def _line(best: BestOf, candidate: Candidate, total: int, link: str | None) -> str:
    strength = candidate.strength
    evidence = strength.describe() if strength is not None else "no report"
    story = (
        own_link(link, "its story")
        if link is not None
        else f"its trajectory is {code(candidate.trajectory_location)} on the worker"
    )
    return (
        f"- Attempt {candidate.number} of {total}: {best.verdict(candidate)}. "
        f"Evidence: {evidence}. {story[0].upper()}{story[1:]}."
    )


async def write_attempt_checks(client: RepoClient, sha: str, best: BestOf) -> dict[int, str]:
    """`FrogNano / attempt N` on `sha` for each attempt not chosen: its verdict, its own
    evidence and story, concluded `neutral`. Returns each one's web address by attempt
    number. Idempotent: a re-run edits the same check runs."""
    links: dict[int, str] = {}
    total = len(best.candidates)
    for candidate in best.candidates:
        if candidate is best.choice:
            continue
        title = f"Attempt {candidate.number} of {total}: not published"
        verdict = fixed(f"**Not published: {best.verdict(candidate)}.**\n")
        if candidate.outcome is not None:
            _c, _t, summary, text = verification_check(
                candidate.outcome.report, story=candidate.story
            )
            summary = fit([verdict, fixed(summary)], CHECK_BUDGET)
        else:
            summary = verdict.text
            text = fit(story_parts(candidate.story), CHECK_BUDGET)
        check_id = await client.upsert_check_run(
            sha,
            attempt_check_name(candidate.number),
            status="completed",
            conclusion="neutral",
            title=title,
            summary=summary,
            text=text,
        )
        links[candidate.number] = client.check_run_url(check_id)
    return links
