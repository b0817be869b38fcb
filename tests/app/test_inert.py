"""Attacks on everything FrogNano renders for GitHub, judged by GitHub's own renderer."""

from __future__ import annotations

import copy
import html
import re

import pytest

from frognano.agent.story import Story, StoryLine
from frognano.app import status
from frognano.app.commit import commit_message
from frognano.app.markdown import (
    Part,
    code,
    fence,
    fit,
    md,
    mention,
    neutralise,
    own_link,
    quote,
    single_line,
)
from frognano.app.review import Excluded, evaluate
from frognano.app.texts import pull_request_body, pull_request_title, verification_check
from frognano.github.models import Review
from frognano.run.report import RunReport
from frognano.run.standbehind import HunkStatus
from tests.app.test_publish import (
    MARKER,
    comparison_of,
    finding,
    gate_of,
    make_report,
    suite_of,
    verification_of,
)
from tests.gfm import ATTACKS, live, render

NAMES = list(ATTACKS)
FLOOD = "\n".join(ATTACKS.values())
"""Every attack at once, one a line, as a summary or an issue body would carry them."""
INLINE = " ".join(ATTACKS.values())
"""Every attack at once on one line."""
PR_URL = "https://github.com/octo/hello/pull/12"
CO_AUTHOR = "mailto:4242+alice@users.noreply.github.com"


@pytest.mark.parametrize("name", NAMES)
def test_md_renders_nothing_live(name: str) -> None:
    assert live(md(ATTACKS[name])) == []
    assert live(f"- {md(ATTACKS[name])}") == []  # as a list item's text


@pytest.mark.parametrize("name", NAMES)
def test_quote_renders_nothing_live(name: str) -> None:
    assert live(quote(md(ATTACKS[name]))) == []
    assert live(quote(ATTACKS[name])) == []


@pytest.mark.parametrize("name", NAMES)
def test_code_renders_nothing_live(name: str) -> None:
    assert live(f"the path {code(ATTACKS[name])} is bad") == []


@pytest.mark.parametrize("name", NAMES)
def test_fence_renders_nothing_live(name: str) -> None:
    assert live(f"{fence(ATTACKS[name])}\n\nafter") == []


@pytest.mark.parametrize("name", NAMES)
def test_plain_text_renders_nothing_live(name: str) -> None:
    # Commit messages and titles are plain text, but GitHub still links mentions, references
    # and URLs in them; read as Markdown too, they must not render live either.
    assert live(neutralise(ATTACKS[name])) == []
    assert live(single_line(ATTACKS[name])) == []


@pytest.mark.parametrize("name", NAMES)
def test_a_code_span_next_to_untrusted_prose_stays_closed(name: str) -> None:
    # An unmatched backtick in the prose must not pair with a code span's delimiter and turn
    # the code's URL into live prose (or the prose into code and back).
    url = "https://evil.example/inside?d=1"
    text = f"{md(ATTACKS[name])} then {code(url)} then {md(ATTACKS[name])} {code('x`y')}"
    assert live(text) == []


def test_the_floods_render_nothing_live() -> None:
    for text in (FLOOD, INLINE):
        assert live(md(text)) == []
        assert live(quote(md(text))) == []
        assert live(neutralise(text)) == []
        assert live(single_line(text)) == []
        assert live(code(text)) == []


@pytest.mark.parametrize("name", NAMES)
def test_neutralising_is_idempotent(name: str) -> None:
    for inert in (md, neutralise, single_line):
        once = inert(ATTACKS[name])
        assert inert(once) == once, inert.__name__


def test_cutting_to_fit_never_makes_text_live() -> None:
    # fit cuts rendered parts: wherever the cut falls (inside a code span, between a
    # backslash and what it escapes, inside an entity), what is left must stay inert.
    text = md(INLINE)
    for keep in ("head", "tail", "ends"):
        for limit in range(0, len(text), 7):
            part = Part(text, keep=keep, limit=limit)
            assert live(f"{part.shown()} {code('https://evil.example/after')}") == [], (
                keep,
                limit,
            )


STATUSES: list[HunkStatus] = ["needed", "needed_by_agent_tests_only", "not_needed", "unknown"]


def hostile_report() -> RunReport:
    """A report whose every untrusted field carries the attacks."""
    report = make_report(summary=FLOOD, stop_reason="completed", stop_detail=INLINE)
    verification = verification_of(report)
    verification["reason"] = INLINE
    verification["limits"] = [FLOOD]
    verification["restored"] = [INLINE]
    comparison = comparison_of(report)
    comparison["fixed"] = list(ATTACKS.values())
    comparison["still_failing"] = [INLINE]
    for key in ("baseline", "verification"):
        run = suite_of(report, key)
        run["summary"] = INLINE
        run["problems"] = [INLINE]
        run["output"] = FLOOD
    gate_of(report)["findings"] = [
        finding("warn", INLINE, INLINE, INLINE),
        finding("warn", "large_file", FLOOD, "docs/@root.md"),
    ]
    gate_of(report)["findings"][0]["line"] = INLINE
    report["left_out_links"] = [{"path": INLINE, "target": FLOOD}]
    report["error"] = FLOOD
    # The hunks' places, first lines and test ids are the patch's and the agent's text.
    verification["hunks"] = {
        "tests": [INLINE],
        "agent_tests": [INLINE],
        "hunks": [
            {
                "where": [f"{value}:3" for value in ATTACKS.values()],
                "preview": [value],
                "grouped": "",
                "status": status,
                "needed_by": [INLINE, value],
                "problem": value,
            }
            for value, status in zip(
                ATTACKS.values(),
                STATUSES * len(ATTACKS),
                strict=False,
            )
        ],
        "note": "",
    }
    verification["changed_lines"] = {
        "total": 3,
        "executed": 1,
        "share": 1 / 3,
        "not_executed": {value: "2-3" for value in ATTACKS.values()},
        "unparsed": [INLINE],
        "error": "",
    }
    return report


def hostile_unmeasured_report() -> RunReport:
    """The measurement's error is the sandbox's text too: the collector's record carries it."""
    report = hostile_report()
    changed = verification_of(report)["changed_lines"]
    assert changed is not None
    changed["error"] = FLOOD
    changed["share"] = None
    return report


def test_the_pull_request_renders_nothing_live() -> None:
    report = hostile_report()
    assert live(pull_request_title(7, INLINE), own=["#7"]) == []
    assert live(pull_request_title(7, FLOOD), own=["#7"]) == []
    for link in ("refs", "fixes"):
        body = pull_request_body(
            report, issue_number=7, link=link, run_id="r1", trajectory_location="r1/t.jsonl"
        )
        own = "Fixes #7" if link == "fixes" else "Refs #7"
        assert live(body, own=[own]) == []


def test_the_commit_message_renders_nothing_live() -> None:
    message = commit_message(7, INLINE, FLOOD, co_author_login="alice", co_author_id=4242)
    assert live(message, own=["#7"], hrefs=[CO_AUTHOR]) == []


def hostile_story() -> Story:
    lines = [
        StoryLine(step, ATTACKS[name][:40], ATTACKS[name], ATTACKS[name], is_error=step % 2 == 0)
        for step, name in enumerate(NAMES, 1)
    ]
    return Story(lines, stop_reason=INLINE, detail=INLINE, summary=FLOOD, steps=len(lines))


def test_an_unmeasured_changed_lines_error_renders_nothing_live() -> None:
    report = hostile_unmeasured_report()
    body = pull_request_body(
        report, issue_number=7, link="refs", run_id="r1", trajectory_location="r1/t.jsonl"
    )
    assert "could not be measured" in body
    assert live(body, own=["Refs #7"]) == []
    _conclusion, _title, summary, text = verification_check(report, story=None)
    assert live(summary) == []
    assert live(text) == []


def test_the_verification_check_renders_nothing_live() -> None:
    report = hostile_report()
    for held in (True, False):
        verification_of(report)["held"] = held
        _conclusion, title, summary, text = verification_check(report, story=hostile_story())
        assert live(title) == []
        assert live(summary) == []
        assert live(text) == []


def stages(report: RunReport) -> list[status.Stage]:
    failing = copy.deepcopy(report)
    failing["error"] = None
    verification_of(failing)["held"] = False
    blocked = copy.deepcopy(failing)
    gate_of(blocked)["passed"] = False
    for each in gate_of(blocked)["findings"]:
        each["severity"] = "block"
    return [
        status.Working(step=3, max_steps=150, tool=INLINE, run_id="r1"),
        status.Published(url=PR_URL, left_out=report["left_out_links"]),
        status.NoPullRequest(why=FLOOD),
        status.NoPullRequest(why=report),
        status.NoPullRequest(why=failing),
        status.NoPullRequest(why=blocked),
        status.FollowUpNoCommit(url=PR_URL, why=failing),
        status.Cancelled(reason=FLOOD),
        status.TreeRefused(why="is a hard link", member=INLINE),
    ]


def test_the_status_comment_renders_nothing_live() -> None:
    for stage in stages(hostile_report()):
        body = status.status_comment(stage, marker=MARKER)
        hrefs = [PR_URL] if isinstance(stage, status.Published | status.FollowUpNoCommit) else []
        own = ["#12"] if isinstance(stage, status.Published) else []
        raw = 1 + (2 if "<sub>" in body else 0)  # the marker, and `<sub>` around the run id
        assert live(body, own=own, hrefs=hrefs, html=raw) == [], type(stage).__name__
        if hrefs:  # FrogNano's own link to its pull request still works
            assert f'<a href="{PR_URL}">' in render(body)


def test_frognanos_own_links_and_mentions_stay_live_and_nothing_else_does() -> None:
    story = f"{PR_URL}/checks?check_run_id=5"
    text = status.FollowUpCommitted(url=PR_URL, sha="a" * 40, round=2, story_url=story).text()
    assert f'<a href="{story}">the verification check</a>' in render(text)
    assert own_link(PR_URL) == PR_URL
    # Only GitHub's own answers are passed (html_url); anything but a plain URL shows.
    for hostile in (*ATTACKS.values(), "https://x.example/a)[b](https://evil.example"):
        if own_link(hostile) != hostile:
            assert live(f"see {own_link(hostile)} and {own_link(hostile, 'it')}.") == [], hostile
    assert mention("alice") == "@alice"
    assert mention("frognano[bot]") == "@frognano[bot]"
    for hostile in ATTACKS.values():  # what is not a login is not named as one
        if mention(hostile) != f"@{hostile}":
            assert live(mention(hostile)) == [], hostile


def test_the_review_gate_names_people_inertly() -> None:
    hostile = ["@admin", "x](https://evil.example)", "a`b", "fixes #1", "ok-login"]
    reviews = [Review(user, "APPROVED", "a" * 40, "User") for user in hostile]
    excluded = [Excluded(user, "labelled the issue") for user in hostile]
    for permissions in ({}, dict.fromkeys(hostile, "write")):
        verdict = evaluate(
            reviews, head_sha="a" * 40, excluded=excluded[:2], app_login="frognano[bot]",
            permissions=permissions,
        )  # fmt: skip
        for text in (verdict.title, verdict.summary):
            assert live(text, logins=["ok-login"]) == [], text


def test_fitting_hostile_parts_keeps_them_inert() -> None:
    parts = [Part(md(FLOOD)), Part(md(INLINE), keep="tail"), Part(md(FLOOD), keep="ends")]
    for budget in (500, 2_000, 9_000):
        assert live(fit(copy.deepcopy(parts), budget)) == []


SHOWN_AS_WRITTEN = [
    "image", "link", "link, javascript", "autolink", "bare url", "www", "email", "img tag",
    "comment", "entity mention", "entity named", "fullwidth mention", "closes",
    "fixes cross-repo", "resolved url", "ref", "repo ref", "backslash url",
    "nested image link", "url then tag",
]  # fmt: skip


@pytest.mark.parametrize("name", SHOWN_AS_WRITTEN)
def test_what_was_written_is_still_shown(name: str) -> None:
    # Inert, not removed: a reviewer reads the attack as it was written.
    written = ATTACKS[name].replace("\\@", "@").replace("\\`", "`")
    page = render(f"{md(ATTACKS[name])}\n\n{code(ATTACKS[name])}")
    shown = html.unescape(re.sub(r"<[^>]+>", "", page)).replace("\u200d", "").split("\n")
    assert [line.strip() for line in shown if line.strip()] == [written, written]


def test_math_and_tables_are_escaped() -> None:
    assert md("$x$ and $`y`$ | z") == "\\$x\\$ and \\$`y`\\$ \\| z"
