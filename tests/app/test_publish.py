"""Publishing: the pure renderers, and `publish` end to end against the fake GitHub."""

from __future__ import annotations

import copy
import re
from typing import Any, TypedDict, Unpack, get_args

import pytest

from frognano.agent.story import Story, StoryLine
from frognano.app import status
from frognano.app.commit import commit_message
from frognano.app.events.decisions import ReviewGateCheck
from frognano.app.ledger import Ledger, issue_digest
from frognano.app.markdown import BODY_BUDGET, CHECK_BUDGET, neutralise, size
from frognano.app.publish import Published, PublishRequest, publish
from frognano.app.review import (
    HUMAN_REVIEW_CHECK,
    VERIFICATION_CHECK,
    ReviewOrigin,
    parse_review_marker,
)
from frognano.app.review_gate import review_gate
from frognano.app.texts import (
    TITLE_LIMIT,
    WARNING,
    pull_request_body,
    pull_request_title,
    verification_check,
)
from frognano.github.auth import PUBLISH, GitHubApp
from frognano.github.client import RepoClient
from frognano.github.errors import BranchConflict
from frognano.github.models import BODY_LIMIT, CHECK_TEXT_LIMIT, FileChange
from frognano.policy.gate.findings import Severity
from frognano.policy.models import PublishPolicy
from frognano.run.outcomes import Role
from frognano.run.report import (
    ComparisonRecord,
    FindingRecord,
    GateRecord,
    InstructionFileRecord,
    InstructionsRecord,
    OutcomeRecord,
    PatchRecord,
    RunReport,
    SuiteRunKey,
    SuiteRunRecord,
    VerificationRecord,
)
from tests.fakes.app_env import *  # noqa: F403 (the fixtures)
from tests.fakes.app_env import FILES, REPO, MakeClient, Sleeps, make_transport
from tests.fakes.github import FakeGitHub, HTTPError
from tests.fakes.github.model import _Request, _Response

APP = "frognano[bot]"
LABELLER = "alice"
LABELLER_ID = 4242
RUN = "20250101-120000-abc123"
TRAJECTORY = "20250101-120000-abc123/attempt-1/trajectory.jsonl"
BRANCH = "frognano/issue-7"
MARKER = status.status_marker(7)

# A mention outside code: `@` + login start, not preceded by a word character.
MENTION = re.compile(r"(?<![\w])@[A-Za-z0-9]")
CLOSING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b[\s:*_\[(`'\"]*"
    r"(?:#\d|[\w.-]+/[\w.-]+#\d|https?://)",
    re.IGNORECASE,
)


class ReportParts(TypedDict, total=False):
    """The parts of a report the tests below change."""

    outcome: OutcomeRecord
    summary: str
    stop_reason: str | None
    stop_detail: str | None
    patch: PatchRecord | None
    verification: VerificationRecord | None
    gate: GateRecord | None
    instructions: InstructionsRecord | None
    error: str | None


def suite_run(role: Role, summary: str, duration: float, output: str) -> SuiteRunRecord:
    return {
        "role": role,
        "command": "pytest",
        "exit_code": 1,
        "passed": False,
        "complete": True,
        "timed_out": False,
        "cached": False,
        "summary": summary,
        "duration": duration,
        "tests": {},
        "failures": {},
        "collection_errors": {},
        "problems": [],
        "output": output,
    }


def finding(severity: Severity, kind: str, reason: str, path: str | None) -> FindingRecord:
    return {"severity": severity, "kind": kind, "reason": reason, "path": path, "line": None}


ABSENT_AGENTS_MD: InstructionFileRecord = {
    "path": "AGENTS.md", "status": "absent", "bytes": 0, "size": None, "cut": False, "reason": None
}  # fmt: skip


def make_report(**overrides: Unpack[ReportParts]) -> RunReport:
    """A report as `build_report` writes it for a publishable run."""
    report: RunReport = {
        "run_id": RUN,
        "frognano": "0.1.0",
        "started_at": "2025-01-01T12:00:00+00:00",
        "repo": REPO,
        "repo_dir": "/tmp/x",
        "issue_title": "Crash on empty input",
        "outcome": {"patch_ready": True, "reason": "the gate passed and verification held"},
        "stop_reason": "completed",
        "stop_detail": "the agent finished",
        "summary": "Handle empty input in `parse()`.\n\nAdded a guard and a regression test.",
        "steps": 12,
        "max_steps": 150,
        "tokens": {"prompt": 120_000, "completion": 3_000, "cached": 90_000, "last_prompt": 9},
        "tool_calls": 30,
        "tool_errors": 2,
        "tools_used": {"Read": 10, "Edit": 5, "Bash": 15},
        "truncated_turns": 0,
        "format_reminders": 0,
        "compactions": 0,
        "durations": {"total": 300.0, "agent": 250.0, "verify": 40.0, "model": 200.0, "tools": 50},
        "sandbox": {"backend": "local", "mechanism": "bwrap", "host_paths": []},
        "base_commit": "0" * 40,
        "left_out_links": [],
        "hidden_input": [],
        "patch": {
            "files": ["src/app.py", "tests/test_app.py"],
            "insertions": 10,
            "deletions": 2,
            "bytes": 900,
        },
        "verification": {
            "require": "fail_to_pass",
            "held": True,
            "reason": "1 test fixed, none broken",
            "baseline_usable": True,
            "restored": ["tests/test_old.py"],
            "restored_why": {"tests/test_old.py": "a protected test file"},
            "effective_files": ["src/app.py", "tests/test_app.py"],
            "new_test_files": [],
            "comparison": {
                "fixed": ["tests/test_app.py::test_empty"],
                "broken": [],
                "still_failing": ["tests/test_app.py::test_flaky"],
                "fails_differently": [],
                "skipped": ["tests/test_app.py::test_slow"],
                "new_tests": [],
                "new_evidence": [],
                "passing": 41,
            },
            "baseline": suite_run(
                "baseline",
                "40 passed, 2 failed, 1 skipped",
                3.5,
                "collected 43 items\nFAILED test_empty\n",
            ),
            "verification": suite_run(
                "patched",
                "41 passed, 1 failed, 1 skipped",
                3.7,
                "collected 43 items\nFAILED test_flaky\n",
            ),
            "new_on_patched": None,
            "new_on_base": None,
            "notes": [],
            "limits": [],
            "hunks": {
                "tests": ["tests/test_app.py::test_fixed"],
                "agent_tests": [],
                "hunks": [
                    {
                        "where": ["src/app.py:12-14"],
                        "preview": ["    return total + 1"],
                        "grouped": "",
                        "status": "needed",
                        "needed_by": ["tests/test_app.py::test_fixed"],
                        "problem": "",
                    },
                    {
                        "where": ["src/app.py:40"],
                        "preview": ["    if user == 'mallory':"],
                        "grouped": "",
                        "status": "not_needed",
                        "needed_by": [],
                        "problem": "",
                    },
                ],
                "note": "",
            },
            "changed_lines": {
                "total": 10,
                "executed": 8,
                "share": 0.8,
                "not_executed": {"src/app.py": "40-41"},
                "unparsed": [],
                "error": "",
            },
        },
        "gate": {
            "passed": True,
            "findings": [finding("warn", "large_file", "the file is large", "src/data.json")],
        },
        "policy": {"source": "policies/00-default.yaml", "repo": REPO, "effective": {}},
        "instructions": {"policy_text_bytes": 0, "files": [ABSENT_AGENTS_MD]},
        "error": None,
    }
    return {**report, **overrides}


def verification_of(report: RunReport) -> VerificationRecord:
    verification = report["verification"]
    assert verification is not None
    return verification


def comparison_of(report: RunReport) -> ComparisonRecord:
    comparison = verification_of(report)["comparison"]
    assert comparison is not None
    return comparison


def suite_of(report: RunReport, key: SuiteRunKey) -> SuiteRunRecord:
    run = verification_of(report)[key]
    assert run is not None
    return run


def gate_of(report: RunReport) -> GateRecord:
    gate = report["gate"]
    assert gate is not None
    return gate


def body_of(report: RunReport | None = None, **kwargs: Any) -> str:
    options: dict[str, Any] = {
        "issue_number": 7,
        "link": "refs",
        "run_id": RUN,
        "trajectory_location": TRAJECTORY,
    }
    options.update(kwargs)
    return pull_request_body(report or make_report(), **options)


# -- titles and bodies ----------------------------------------------------------------------


def test_title_is_one_short_line() -> None:
    assert (
        pull_request_title(7, "Crash on empty input")
        == "FrogNano draft for #7: Crash on empty input"
    )
    long = pull_request_title(7, "x " * 1000 + "\nsecond line")
    assert len(long) <= TITLE_LIMIT
    assert long.endswith("…")
    assert "\n" not in pull_request_title(7, "one\ntwo\r\nthree")
    assert not MENTION.search(pull_request_title(7, "ping @octocat"))
    assert pull_request_title(7, "   ") == "FrogNano draft for #7: (untitled issue)"


def test_body_sections_in_order() -> None:
    body = body_of()
    assert body.splitlines()[1] == f"> {WARNING}"  # first, under a GitHub alert
    assert (
        body.index(WARNING)
        < body.index("## What the agent says")
        < body.index("## Test evidence")
        < body.index("## Gate warnings")
        < body.index("## Run")
    )
    assert "> Handle empty input in `parse()`." in body  # model output is quoted
    assert "Rule `fail_to_pass` held: 1 test fixed, none broken." in body
    assert "- Before (base): 40 passed, 2 failed, 1 skipped (exit code 1, 3.5 s)" in body
    assert "- After (base + patch): 41 passed, 1 failed, 1 skipped (exit code 1, 3.7 s)" in body
    assert "- Fixed (failing before, passing now) (1): `tests/test_app.py::test_empty`" in body
    assert "- Still failing (1): `tests/test_app.py::test_flaky`" in body
    assert "- Skipped (1): `tests/test_app.py::test_slow`" in body
    assert "Broken" not in body  # empty lists are left out
    assert "put back to the base (1): `tests/test_old.py`" in body
    assert "- **warn** large_file `src/data.json`: the file is large" in body
    assert "- Steps: 12 of 150; tool calls: 30 (2 failed)" in body
    assert "120,000 prompt (90,000 from the prefix cache, 75%), 3,000 generated" in body
    assert "300.0 s in all; model 200.0 s, tools 50.0 s; stages: agent 250.0 s" in body
    assert f"- Run id: `{RUN}`" in body
    assert (
        f"- Trajectory: `{TRAJECTORY}` on the worker, under `FROGNANO_TRAJECTORY_DIR` "
        "(`frognano trajectory show` prints it)"
    ) in body
    assert body.endswith("\nRefs #7")
    assert "Fixes" not in body
    assert "draft pull requests" not in body
    assert size(body) <= BODY_BUDGET


def test_body_says_what_the_tests_stand_behind() -> None:
    body = body_of()
    section = body.split("**What the tests stand behind:**", 1)[1]
    assert "- `src/app.py:12-14`: needed by `tests/test_app.py::test_fixed`" in section
    assert "- `src/app.py:40`: **no test needs this change**: `if user == 'mallory':`" in section
    assert "The tests executed 8 of the 10 added or changed statements (80%)." in section
    assert "- no test executed `src/app.py` lines 40-41" in section
    _conclusion, _title, summary, text = verification_check(make_report(), story=None)
    assert "no test needs this change" in summary + text


def test_fixes_link_and_only_warn_findings() -> None:
    gate: GateRecord = {
        "passed": True,
        "findings": [
            finding("warn", "executable", "now executable", "a"),
            finding("block", "secret", "never shown", "b"),
        ],
    }
    body = body_of(make_report(gate=gate), link="fixes")
    assert body.endswith("\nFixes #7")
    assert "Refs #" not in body
    assert "now executable" in body
    assert "never shown" not in body
    with pytest.raises(ValueError, match="link"):
        body_of(link="closes")


def test_body_without_findings_or_cache_figures() -> None:
    report = make_report(gate={"passed": True, "findings": []})
    report["tokens"]["cached"] = None
    verification_of(report)["restored"] = []
    body = body_of(report)
    assert "None: nothing in the patch conflicts with the policy." in body
    assert "cache hits not reported" in body
    none = "Protected files (tests, harness, agent instructions) changed by the agent: none."
    assert none in body


def test_body_says_in_one_line_which_instructions_were_used() -> None:
    used: InstructionsRecord = {
        "policy_text_bytes": 40,
        "files": [
            {"path": "AGENTS.md", "status": "used", "bytes": 16384, "size": 40000, "cut": True,
             "reason": None},
            {"path": "CLAUDE.md", "status": "absent", "bytes": 0, "size": None, "cut": False,
             "reason": None},
            {"path": "docs/@team.md", "status": "skipped", "bytes": 0, "size": None,
             "cut": False, "reason": "it is a symbolic link, and FrogNano follows none"},
        ],
    }  # fmt: skip
    body = body_of(make_report(instructions=used))
    (line,) = [line for line in body.splitlines() if "Instructions" in line]
    assert line == (
        "- Instructions for the agent: the policy's text (40 bytes); `AGENTS.md` (16,384 bytes, "
        "cut); `docs/@\u200dteam.md` skipped: it is a symbolic link, and FrogNano follows none"
    )
    assert body.index("## Run") < body.index(line) < body.index("- Run id:")
    # Nothing used or skipped (every file absent), or never read: no line at all.
    for report in (make_report(), make_report(instructions=None)):
        assert "Instructions" not in body_of(report)


def test_normal_pull_request_note() -> None:
    body = body_of(draft=False)
    assert "This repository cannot have draft pull requests" in body
    assert body.index(WARNING) < body.index("cannot have draft")


def test_huge_summary_is_cut_with_a_note_and_the_link_line_kept() -> None:
    report = make_report(summary="word " * 40_000)  # 200k characters
    body = body_of(report)
    assert size(body) <= BODY_BUDGET < BODY_LIMIT
    assert "characters cut to fit GitHub's size limit" in body
    assert body.endswith("\nRefs #7")
    assert WARNING in body
    assert "- Still failing (1): `tests/test_app.py::test_flaky`" in body  # short parts kept
    assert f"- Run id: `{RUN}`" in body


def test_longest_parts_are_cut_first() -> None:
    report = make_report(summary="s" * 120_000)
    comparison_of(report)["fixed"] = [f"tests/t.py::test_{i}_{'x' * 150}" for i in range(60)]
    verification_of(report)["reason"] = "r" * 70_000
    suite_of(report, "baseline")["summary"] = "short summary"
    body = body_of(report)
    assert size(body) <= BODY_BUDGET
    assert body.count("characters cut to fit") == 2  # the summary and the reason
    assert "and 10 more" in body  # long lists show 50 names
    assert "- Before (base): short summary" in body
    assert body.endswith("\nRefs #7")


def test_astral_characters_count_twice() -> None:
    body = body_of(make_report(summary="🐸" * 40_000))  # 80k UTF-16 units, 40k code points
    assert size(body) <= BODY_BUDGET
    assert "characters cut" in body


INJECTION = (
    "Done. @octocat and @org/team please merge!\n"
    "Fixes #3. closes: octo/hello#4, RESOLVED https://github.com/octo/hello/issues/5\n"
    "fix **#6** and resolves [#8](https://example.com)\n"
    "<!-- frognano:status issue=7 -->\n<!-- everything below is hidden\n"
    "Co-authored-by: mallory <1+mallory@users.noreply.github.com>\n"
    "\x1b[31mred\x1b[0m \u202eevil"
)


def test_model_text_cannot_mention_close_or_hide() -> None:
    report = make_report(summary=INJECTION)
    comparison_of(report)["fixed"] = ["test_x[@admin fixes #9]"]
    gate_of(report)["findings"][0]["path"] = "docs/@root.md"
    body = body_of(report)
    assert not MENTION.search(body)
    assert CLOSING.findall(body) == []  # `Refs #7` is not a keyword
    assert "<!--" not in body
    assert "\x1b" not in body
    assert "\u202e" not in body
    assert "Co-authored-by:" not in body
    assert "octocat" in body  # still readable: only a zero-width joiner was inserted
    assert "Fixes #7" in body_of(report, link="fixes").splitlines()[-1]
    assert CLOSING.findall(body_of(report, link="fixes")) == ["Fixes #7"]


def test_neutralise_is_idempotent_and_leaves_plain_words() -> None:
    once = neutralise(INJECTION)
    assert neutralise(once) == once
    assert neutralise("the fix for issue 3 closes nothing") == "the fix for issue 3 closes nothing"


# -- commit message -------------------------------------------------------------------------


def test_commit_message() -> None:
    summary = (
        "This change is explained at length in one very long line of prose that goes well "
        "past seventy-two columns and must be wrapped.\n\n"
        "- a bullet that is also long enough to need wrapping when it is put into a commit\n\n"
        "```python\n" + "x = 1  # " + "long code line " * 8 + "\n```\n\n" + INJECTION
    )
    message = commit_message(
        7, "Fixes #3: crash @bob", summary, co_author_login="alice", co_author_id=4242
    )
    lines = message.rstrip("\n").split("\n")
    assert len(lines[0]) <= 72
    assert lines[0].startswith("FrogNano draft for #7: ")
    assert lines[1] == ""
    assert lines[-1] == "Co-authored-by: alice <4242+alice@users.noreply.github.com>"
    assert lines[-2] == ""
    assert message.count("Co-authored-by:") == 1
    assert not CLOSING.search(message)
    assert not MENTION.search(message)
    code = next(line for line in lines if line.startswith("x = 1"))
    assert len(code) > 72  # code is not reflowed
    prose = [line for line in lines if not line.startswith(("x = 1", "Co-authored", "<!--"))]
    assert all(len(line) <= 72 for line in prose)
    assert "put into\n  a commit" in message  # a hanging indent under the bullet
    with pytest.raises(ValueError, match="login"):
        commit_message(7, "t", "s", co_author_login="bad login", co_author_id=1)
    without_id = commit_message(7, "t", "s", co_author_login="alice", co_author_id=None)
    assert without_id.endswith("Co-authored-by: alice <alice@users.noreply.github.com>\n")


def test_commit_message_cuts_a_huge_summary() -> None:
    message = commit_message(7, "t", "y " * 100_000, co_author_login="alice", co_author_id=1)
    assert len(message) < 6_000
    assert "characters cut" in message
    assert message.endswith("Co-authored-by: alice <1+alice@users.noreply.github.com>\n")


# -- verification check ---------------------------------------------------------------------


def test_verification_check_success() -> None:
    conclusion, title, summary, text = verification_check(make_report(), story=None)
    assert conclusion == "success"
    assert title == "The gate passed and verification held"
    assert "**The gate passed and rule `fail_to_pass` held.**" in summary
    assert "- Fixed (failing before, passing now) (1)" in summary
    assert "- **warn** large_file" in summary
    assert "FAILED test_flaky" in text
    assert text.index("Before (base)") < text.index("After (base + patch)")


def test_verification_check_failures() -> None:
    blocked = make_report(
        gate={"passed": False, "findings": [finding("block", "secret", "a key", "k")]}
    )
    assert verification_check(blocked, story=None)[:2] == ("failure", "The gate blocked the patch")
    assert "- **block** secret `k`: a key" in verification_check(blocked, story=None)[2]
    failing = make_report()
    verification_of(failing)["held"] = False
    assert verification_check(failing, story=None)[:2] == ("failure", "Verification failed")
    assert "did not hold" in verification_check(failing, story=None)[2]
    unverified = make_report(verification=None)
    conclusion, title, summary, text = verification_check(unverified, story=None)
    assert (conclusion, title) == ("failure", "Not verified")
    assert "not verified" in summary
    assert text.endswith("### Test output\n\nNo test output was recorded.")
    assert "No trajectory was recorded for this run." in text


def test_verification_check_fits_with_huge_output() -> None:
    report = make_report()
    output = "".join(f"line {i} " + "o" * 100 + "\n" for i in range(200)) + "LAST LINE ```\n"
    suite_of(report, "verification")["output"] = output
    suite_of(report, "baseline")["output"] = "b" * 300_000  # one huge line
    comparison_of(report)["still_failing"] = ["t" * 5000] * 500
    verification_of(report)["reason"] = "q" * 100_000
    _, _, summary, text = verification_check(report, story=None)
    assert size(summary) <= CHECK_BUDGET < CHECK_TEXT_LIMIT
    assert size(text) <= CHECK_BUDGET
    assert "LAST LINE" in text  # the end of the output is what is kept
    assert "earlier lines not shown" in text
    assert "````text" in text  # a fence longer than any in the output
    assert "characters cut" in summary


# -- status comments ------------------------------------------------------------------------


STAGES: list[status.Stage] = [
    status.Queued(run_id=RUN),
    status.AlreadyRunning(run_id=RUN, label="frognano"),
    status.Working(step=3, max_steps=150, tool="Bash", run_id=RUN),
    status.Testing(run_id=RUN),
    status.Published(url="https://github.com/octo/hello/pull/12"),
    status.NoPullRequest(why=make_report()),
    status.FollowUpCommitted(url="https://github.com/octo/hello/pull/12", sha="a" * 40, round=2),
    status.FollowUpNoCommit(url="https://github.com/octo/hello/pull/12", why=make_report()),
    status.Cancelled(reason="the label was removed", run_id=RUN),
    status.TreeRefused(why="is a hard link", member="docs/hard", run_id=RUN),
    status.Error(run_id=RUN),
]


def test_every_stage_is_listed() -> None:
    assert [type(stage) for stage in STAGES] == list(get_args(status.Stage))


@pytest.mark.parametrize("stage", STAGES, ids=lambda stage: type(stage).__name__)
def test_every_stage_starts_with_the_marker(stage: status.Stage) -> None:
    body = status.status_comment(stage, marker=MARKER)
    assert body.startswith(MARKER + "\n")
    assert body.count("<!--") == 1
    assert len(body) < 1_500
    assert "FrogNano" in body


def comment(stage: status.Stage) -> str:
    return status.status_comment(stage, marker=MARKER)


def test_stage_texts() -> None:
    assert MARKER == "<!-- frognano:status issue=7 -->"
    working = comment(status.Working(step=3, max_steps=150, tool="Bash"))
    assert "step 3 of at most 150; now running `Bash`" in working
    published = comment(status.Published(url="https://github.com/octo/hello/pull/12"))
    assert "draft pull request: #12** (https://github.com/octo/hello/pull/12)" in published
    normal = comment(status.Published(url="https://x/y", number=3, draft=False))
    assert "**FrogNano opened a pull request: #3** (https://x/y)" in normal
    assert "cannot have drafts" in normal
    reason = comment(status.NoPullRequest(why="the agent gave up @bob"))
    assert "opened no pull request.**\n\nthe agent gave up @\u200dbob." in reason
    url = "https://github.com/octo/hello/pull/12"
    added = comment(status.FollowUpCommitted(url=url, sha="b" * 40, round=3, story_url=url + "/c"))
    assert f"added a commit to its pull request** ({url}): round 3, commit `bbbbbbbbbbbb`" in added
    assert "an approval of an older head does not count" in added
    assert "[the verification check](https://github.com/octo/hello/pull/12/c)" in added
    nothing = comment(status.FollowUpNoCommit(url=url, why=make_report()))
    assert "**FrogNano added no commit to its pull request**" in nothing
    assert "The pull request is as it was" in nothing
    cancelled = comment(status.Cancelled(reason="the label was removed"))
    assert "cancelled** (the label was removed)" in cancelled
    error = comment(status.Error(run_id=RUN))
    assert f"run `{RUN}` in the worker's logs" in error
    running = comment(status.AlreadyRunning(run_id=RUN))
    assert "already working on this issue" in running


def test_status_comment_refusals() -> None:
    with pytest.raises(ValueError, match="marker"):
        status.status_comment(status.Queued(), marker="<!-- other -->")
    # A missing or unknown fact is a type error (mypy checks the ignores below are needed)
    # and fails at run time too.
    with pytest.raises(TypeError):
        status.Working(step=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        status.Queued(colour="green")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        status.NoPullRequest()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        status.Working(3, 150)  # type: ignore[call-arg]  # facts are named


def no_pr(report: RunReport) -> str:
    return comment(status.NoPullRequest(why=report))


def test_no_pull_request_reasons() -> None:
    blocked = make_report(
        outcome={"patch_ready": False, "reason": "the gate blocked the patch"},
        gate={
            "passed": False,
            "findings": [
                finding(
                    "block", "forbidden_path", "CI files are off limits", ".github/workflows/ci.yml"
                ),
                finding("warn", "large_file", "big", "x"),
            ],
        },
    )
    text = no_pr(blocked)
    assert "The gate blocked the patch:" in text
    assert "`.github/workflows/ci.yml`: CI files are off limits" in text
    assert "big" not in text
    assert f"Run `{RUN}`" in text

    failing = make_report(outcome={"patch_ready": False, "reason": "verification failed"})
    verification_of(failing)["held"] = False
    verification_of(failing)["reason"] = "1 test broken"
    comparison_of(failing)["broken"] = ["tests/test_a.py::test_b"]
    text = no_pr(failing)
    assert "rule `fail_to_pass` did not hold (1 test broken)" in text
    assert "- Broken (1): `tests/test_a.py::test_b`" in text
    assert "- After (base + patch): 41 passed" in text

    nothing = make_report(
        outcome={"patch_ready": False, "reason": "no change"},
        patch=None,
        verification=None,
        gate=None,
        stop_reason="step_limit",
        stop_detail="150 steps",
    )
    assert "The agent changed no file (the agent used all its steps: 150 steps)." in no_pr(nothing)
    idle = make_report(
        patch={"files": [], "insertions": 0, "deletions": 0, "bytes": 0},
        verification=None,
        gate=None,
    )
    assert "The agent changed no file." in no_pr(idle)

    timed = copy.deepcopy(failing)
    timed["stop_reason"] = "time_limit"
    timed["stop_detail"] = "10800 s"
    assert "Also, the agent ran out of time (10800 s)." in no_pr(timed)

    crashed = make_report(error="the sandbox could not start", patch=None)
    assert "The run failed: the sandbox could not start." in no_pr(crashed)


def test_status_comment_with_hostile_huge_facts() -> None:
    report = make_report(
        outcome={"patch_ready": False, "reason": "x"},
        error=INJECTION + "e" * 200_000,
    )
    text = no_pr(report)
    assert size(text) <= BODY_BUDGET
    assert text.startswith(MARKER + "\n")
    assert text.count("<!--") == 1  # the injected marker was defused
    assert not MENTION.search(text)
    assert "characters cut" in text


# -- publish, end to end --------------------------------------------------------------------


CHANGES = [
    FileChange("README.md", "100644", b"# hello, fixed\n"),
    FileChange("src/empty.py", "100644", b"def parse(s):\n    return s or None\n"),
    FileChange("bin/run.sh", "100755", b"#!/bin/sh\nexec python -m app\n"),
    FileChange("docs/app-link", "120000", b"../src/app.py"),
    FileChange("old.txt", "100644", None),
]
POLICY = PublishPolicy(
    labels=["frognano", "needs-human-review"],
    reviewers=["bob", "alice", "Frognano[bot]"],
    team_reviewers=["core"],
)


ISSUE_BODY = "mean([]) raises ZeroDivisionError."


async def run_publish(
    client: RepoClient,
    fake: FakeGitHub,
    *,
    repo: str = REPO,
    changes: list[FileChange] | None = None,
    report: RunReport | None = None,
    policy: PublishPolicy = POLICY,
    story: Story | None = None,
    fresh_branch: bool = False,
) -> Published:
    request = PublishRequest(
        report=report or make_report(),
        changes=changes or CHANGES,
        base_sha=fake.repo(repo).branch_sha("main") or "",
        base_branch="main",
        issue_number=7,
        issue_title="Crash on empty input",
        issue_body=ISSUE_BODY,
        labeller=LABELLER,
        labeller_id=LABELLER_ID,
        run_id=RUN,
        trajectory_location=TRAJECTORY,
        story=story,
        fresh_branch=fresh_branch,
    )
    return await publish(client, request, policy=policy, app_login=APP)


def runs_named(fake: FakeGitHub, name: str, repo: str = REPO) -> list[dict[str, Any]]:
    return [run for run in fake.repo(repo).check_runs.values() if run["name"] == name]


@pytest.fixture
def people(fake: FakeGitHub) -> None:
    people_on(fake)


@pytest.mark.usefixtures("people")
async def test_publish_end_to_end(fake: FakeGitHub, client: RepoClient) -> None:
    published = await run_publish(client, fake)
    repo = fake.repo(REPO)
    base = repo.branch_sha("main") or ""

    # The commit: the right files and modes, on the base, verified, no custom author.
    assert published.branch == BRANCH
    assert published.branch_action == "created"
    assert repo.branch_sha(BRANCH) == published.commit_sha
    files = fake.files_at(REPO, BRANCH)
    assert files["README.md"] == ("100644", b"# hello, fixed\n")
    assert files["src/empty.py"][0] == "100644"
    assert files["bin/run.sh"] == ("100755", b"#!/bin/sh\nexec python -m app\n")
    assert files["docs/app-link"] == ("120000", b"../src/app.py")
    assert "old.txt" not in files
    assert files["src/app.py"] == ("100644", FILES["src/app.py"])  # untouched files stay
    commit = repo.commits[published.commit_sha]
    assert commit["parents"] == [base]
    assert commit["verified"]
    assert commit["author"]["name"] == APP
    (request,) = fake.requests_to("POST", r"/git/commits$")
    assert "author" not in request.json
    assert "committer" not in request.json
    assert commit["message"].startswith("FrogNano draft for #7: Crash on empty input\n\n")
    assert (
        commit["message"]
        .rstrip("\n")
        .endswith(f"Co-authored-by: {LABELLER} <{LABELLER_ID}+{LABELLER}@users.noreply.github.com>")
    )
    assert commit["message"].count("Co-authored-by:") == 1

    # The pull request: a draft with the body, labels and reviewers (never the labeller).
    pull = published.pull
    assert pull.draft
    assert pull.head_sha == published.commit_sha
    assert repo.pulls[pull.number]["draft"]
    issue = repo.issues[pull.number]
    assert issue["title"] == "FrogNano draft for #7: Crash on empty input"
    assert issue["body"].splitlines()[1] == f"> {WARNING}"
    assert "## Test evidence" in issue["body"]
    assert issue["body"].endswith("\nRefs #7")
    assert issue["labels"] == ["frognano", "needs-human-review"]
    assert repo.pulls[pull.number]["requested_reviewers"] == ["bob"]
    assert published.refused_reviewers == ("core",)  # the fake knows no teams

    # The checks: verification with the review marker, human review blocking.
    (verification,) = runs_named(fake, VERIFICATION_CHECK)
    assert verification["id"] == published.verification_check_id
    assert verification["head_sha"] == published.commit_sha
    assert (verification["status"], verification["conclusion"]) == ("completed", "success")
    # The record of who started the run, and of the issue text as labelled, is the App's own.
    digest = issue_digest("Crash on empty input", ISSUE_BODY)
    assert parse_review_marker(verification["external_id"]) == ReviewOrigin(
        RUN, LABELLER, 7, 1, (LABELLER,), None, digest
    )
    assert "Fixed (failing before, passing now)" in verification["output"]["summary"]
    assert "FAILED test_flaky" in verification["output"]["text"]
    (human,) = runs_named(fake, HUMAN_REVIEW_CHECK)
    assert human["id"] == published.review_check_id
    assert human["head_sha"] == published.commit_sha
    assert (human["status"], human["conclusion"]) == ("completed", "action_required")
    assert "from someone with write access other than @alice" in human["output"]["summary"]


def _long_story(steps: int = 150) -> Story:
    lines = [
        StoryLine(n, "Bash", f"step {n}: pytest -q " + "a" * 150, f"result {n}: " + "r" * 150)
        for n in range(1, steps + 1)
    ]
    return Story(lines=lines, stop_reason="step_limit", summary="s" * 20_000, steps=steps)


@pytest.mark.usefixtures("people")
async def test_the_check_run_tells_a_150_step_story_within_githubs_limits(
    fake: FakeGitHub, client: RepoClient
) -> None:
    # The fake validates the check run against GitHub's schema and GitHub's size limits;
    # beside the story, a huge test log competes for the same text.
    report = make_report()
    suite_of(report, "verification")["output"] = "".join(f"log {i}\n" for i in range(50_000))
    published = await run_publish(client, fake, report=report, story=_long_story())
    (verification,) = runs_named(fake, VERIFICATION_CHECK)
    text = verification["output"]["text"]
    assert size(text) <= CHECK_BUDGET < CHECK_TEXT_LIMIT
    assert text.index("### What the agent did") < text.index("### Test output")
    assert "150 steps. Stopped: step_limit." in text
    assert "step 1: pytest" in text
    assert "step 150: pytest" in text
    assert "log 49999" in text  # the end of the test log is kept too
    assert published.verification_url == (
        f"{published.pull.html_url}/checks?check_run_id={published.verification_check_id}"
    )


@pytest.mark.usefixtures("people")
async def test_publishing_twice_changes_nothing_new(
    fake: FakeGitHub, client: RepoClient, make_client: MakeClient
) -> None:
    policy = PublishPolicy(reviewers=["bob", "alice"])
    first = await run_publish(client, fake, policy=policy)
    writes = len([r for r in fake.requests if r.method in ("POST", "PATCH")])
    restarted = await make_client()  # a worker restarted after a crash
    second = await run_publish(restarted, fake, policy=policy)
    repo = fake.repo(REPO)

    assert second.pull == first.pull
    assert second.commit_sha == first.commit_sha
    assert second.branch_action == "unchanged"
    assert (second.verification_check_id, second.review_check_id) == (
        first.verification_check_id,
        first.review_check_id,
    )
    assert len(repo.pulls) == 1
    assert len(runs_named(fake, VERIFICATION_CHECK)) == 1
    assert len(runs_named(fake, HUMAN_REVIEW_CHECK)) == 1
    assert len(fake.requests_to("POST", r"/pulls$")) == 1
    assert len(fake.requests_to("POST", r"/check-runs$")) == 2
    assert len(fake.requests_to("POST", r"/requested_reviewers$")) == 1  # bob, not again
    assert len(fake.requests_to("PATCH", r"/pulls/\d+$")) == 0  # the body was already right
    new_writes = [r for r in fake.requests if r.method in ("POST", "PATCH")][writes:]
    # Only content-addressed blobs and trees, one inert commit, and idempotent edits.
    assert {r.operation_id for r in new_writes} <= {
        "git/create-blob",
        "git/create-tree",
        "git/create-commit",
        "checks/update",
        "issues/add-labels",
    }
    inert_tree = fake.requests_to("POST", r"/git/commits$")[-1].json["tree"]
    assert inert_tree == repo.commits[first.commit_sha]["tree"]  # the same tree, again


@pytest.mark.usefixtures("people")
async def test_a_rerun_keeps_an_approval(
    fake: FakeGitHub, client: RepoClient, app: GitHubApp, ledger: Ledger
) -> None:
    first = await run_publish(client, fake)
    fake.submit_review(REPO, first.pull.number, user="bob", state="approved")
    repo = fake.repo(REPO)
    check = ReviewGateCheck(repo.installation_id, REPO, repo.id, first.pull.number,
                            first.commit_sha, "d-1")  # fmt: skip
    assert await review_gate(app, check, ledger) == "success"
    await run_publish(client, fake)
    (human,) = runs_named(fake, HUMAN_REVIEW_CHECK)
    assert human["conclusion"] == "success"


@pytest.mark.usefixtures("people")
async def test_a_new_patch_moves_the_branch_and_checks(
    fake: FakeGitHub, client: RepoClient
) -> None:
    first = await run_publish(client, fake)
    second = await run_publish(
        client, fake, changes=[FileChange("src/app.py", "100644", b"print('better')\n")]
    )
    assert second.branch_action == "moved"
    assert second.commit_sha != first.commit_sha
    assert second.pull.number == first.pull.number
    assert second.pull.head_sha == second.commit_sha
    assert fake.files_at(REPO, BRANCH)["README.md"] == ("100644", FILES["README.md"])
    heads = {run["head_sha"] for run in runs_named(fake, VERIFICATION_CHECK)}
    assert heads == {first.commit_sha, second.commit_sha}
    assert len(runs_named(fake, HUMAN_REVIEW_CHECK)) == 2  # one per head


@pytest.mark.usefixtures("people")
async def test_a_retry_passes_over_a_branch_a_human_pushed_to(
    fake: FakeGitHub, client: RepoClient, sleeps: Sleeps
) -> None:
    first = await run_publish(client, fake)
    human = RepoClient(REPO, fake.add_user_token("bob"), transport=make_transport(fake, sleeps))
    theirs = await human.create_commit(
        first.commit_sha, [FileChange("b.txt", "100644", b"b")], "mine"
    )
    await human.upsert_branch(BRANCH, theirs, app_login=APP)
    human.close()
    with pytest.raises(BranchConflict, match="commits by bob"):
        await run_publish(client, fake)  # a label run still refuses, as before
    retried = await run_publish(client, fake, fresh_branch=True)
    assert (retried.branch, retried.branch_action) == (f"{BRANCH}-2", "created")
    assert retried.pull.number != first.pull.number
    again = await run_publish(client, fake, fresh_branch=True)  # a re-run converges on it
    assert (again.branch, again.branch_action, again.pull) == (
        retried.branch,
        "unchanged",
        retried.pull,
    )
    assert fake.repo(REPO).branch_sha(BRANCH) == theirs
    assert len(fake.repo(REPO).pulls) == 2


async def test_a_repository_without_drafts_gets_a_normal_pull_request(
    fake: FakeGitHub, make_client: MakeClient
) -> None:
    fake.add_repo("octo/free", files={"a.txt": b"a"}, allow_drafts=False)
    client = await make_client("octo/free")
    changes = [FileChange("a.txt", "100644", b"b")]
    published = await run_publish(client, fake, repo="octo/free", changes=changes)
    repo = fake.repo("octo/free")
    assert not published.pull.draft
    assert not repo.pulls[published.pull.number]["draft"]
    body = repo.issues[published.pull.number]["body"]
    assert "This repository cannot have draft pull requests" in body
    assert [r.json["draft"] for r in fake.requests_to("POST", r"/pulls$")] == [True, False]
    patches = len(fake.requests_to("PATCH", r"/pulls/\d+$"))
    again = await run_publish(client, fake, repo="octo/free", changes=changes)
    assert again.pull == published.pull
    assert len(fake.requests_to("PATCH", r"/pulls/\d+$")) == patches  # no body flip-flop
    assert len(repo.pulls) == 1


@pytest.mark.usefixtures("people")
async def test_a_502_on_pull_creation_is_retried_into_one_pull_request(
    fake: FakeGitHub, client: RepoClient
) -> None:
    fake.fail_next("POST", r"/pulls$", status=502)
    published = await run_publish(client, fake)
    assert len(fake.requests_to("POST", r"/pulls$")) == 2
    assert list(fake.repo(REPO).pulls) == [published.pull.number]


class LossyGitHub(FakeGitHub):
    """Creates the pull request, then answers 502 once: the response was lost."""

    lose_next_pull: bool = False

    def _op_pulls__create(self, req: _Request) -> _Response:
        response = super()._op_pulls__create(req)
        if self.lose_next_pull:
            self.lose_next_pull = False
            raise HTTPError(502, {"message": "Server Error"})
        return response


def people_on(fake: FakeGitHub) -> None:
    fake.add_collaborator(REPO, "bob", "write")
    fake.add_collaborator(REPO, LABELLER, "write")
    fake.add_issue(REPO, 7, "Crash on empty input", "It crashes.", user="reporter")


async def test_a_lost_pull_creation_response_still_makes_one_pull_request(
    sleeps: Sleeps,
) -> None:
    lossy = LossyGitHub()
    with lossy as fake:
        fake.add_repo(REPO, files=FILES)
        people_on(fake)
        app = GitHubApp(
            fake.app_id, fake.app_private_key.decode(), transport=make_transport(fake, sleeps)
        )
        repo = fake.repo(REPO)
        client = await app.repo_client(repo.installation_id, REPO, repo.id, PUBLISH)
        try:
            lossy.lose_next_pull = True
            published = await run_publish(client, fake)
        finally:
            client.close()
            app.close()
        (create,) = fake.requests_to("POST", r"/pulls$")  # found again, not re-sent
        assert create.status == 502
        assert list(repo.pulls) == [published.pull.number]
        assert fake.validation_errors == []
        fake.assert_clean()


async def test_an_unpublishable_report_writes_nothing(fake: FakeGitHub, client: RepoClient) -> None:
    blocked = make_report(outcome={"patch_ready": False, "reason": "blocked"})
    gate_of(blocked)["passed"] = False
    with pytest.raises(ValueError, match="refusing to publish"):
        await run_publish(client, fake, report=blocked)
    failing = make_report()
    verification_of(failing)["held"] = False
    with pytest.raises(ValueError, match="refusing to publish"):
        await run_publish(client, fake, report=failing)
    assert [r for r in fake.requests if r.method != "GET" and "/repos/" in r.path] == []
