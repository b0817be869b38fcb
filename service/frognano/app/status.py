"""The status comment on an issue: its hidden marker, and what it says at each stage of a run."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from frognano.app.hidden_text import hidden_line
from frognano.app.markdown import BODY_BUDGET, Part, code, fit, fixed, md, own_link
from frognano.app.review import HUMAN_REVIEW_CHECK
from frognano.app.texts import finding_line, items, left_out_line, run_line
from frognano.run.report import ComparisonList, HiddenRecord, LeftOutLinkRecord, RunReport

__all__ = [
    "AlreadyRunning",
    "Cancelled",
    "Error",
    "FollowUpCommitted",
    "FollowUpNoCommit",
    "NoPullRequest",
    "Published",
    "Queued",
    "Stage",
    "Testing",
    "TreeRefused",
    "Working",
    "no_pull_request_reason",
    "status_comment",
    "status_marker",
]

_MARKER = re.compile(r"<!-- frognano:status[ -~]*? -->")


def status_marker(issue_number: int) -> str:
    """The hidden first line of the status comment on issue `issue_number`."""
    return f"<!-- frognano:status issue={int(issue_number)} -->"


def _run(run_id: str | None) -> str:
    return f"\n\n<sub>Run {code(run_id)}</sub>" if run_id else ""


def _story(url: str | None) -> str:
    """The link to the verification check, which tells the run's story."""
    if not url:
        return ""
    return f" What the agent did, step by step: {own_link(url, 'the verification check')}."


def _left_out(links: Sequence[LeftOutLinkRecord]) -> str:
    line = left_out_line(links, limit=10)
    return f"\n\n{line}" if line else ""


def _attempts(lines: Sequence[str]) -> str:
    """A best-of-N run's lines (bestof_texts.attempt_lines: already inert)."""
    return "\n\n" + "\n".join(lines) if lines else ""


def _hidden(records: Sequence[HiddenRecord]) -> str:
    line = hidden_line(records)
    return f"\n\n{line}" if line else ""


# -- one frozen dataclass per stage: its facts, and the comment's text at that stage --------


@dataclass(frozen=True, kw_only=True)
class Queued:
    """The run is queued, or waits `retry_in` seconds for a sandbox (the cluster had none)."""

    run_id: str | None = None
    retry_in: float | None = None

    def text(self) -> str:
        if self.retry_in is not None:
            minutes = max(1, round(self.retry_in / 60))
            return (
                "**FrogNano: waiting for a sandbox.** Every sandbox the cluster allows is in "
                f"use; this run starts again in about {minutes} "
                f"minute{'s' if minutes != 1 else ''}. "
                "Nothing needs doing; this comment is updated as it goes." + _run(self.run_id)
            )
        return (
            "**FrogNano: queued.** A sandboxed run will start on this issue shortly; this "
            "comment is updated as it goes." + _run(self.run_id)
        )


@dataclass(frozen=True, kw_only=True)
class AlreadyRunning:
    """A second trigger arrived while a run of the issue is on; `label` starts runs."""

    run_id: str | None = None
    label: str = "frognano"

    def text(self) -> str:
        return (
            "**FrogNano is already working on this issue**, so the new request did not start a "
            f"second run. To start over, wait for this run to finish, then remove the "
            f"{code(self.label)} label and add it again." + _run(self.run_id)
        )


@dataclass(frozen=True, kw_only=True)
class Working:
    """The agent is at `step` of at most `max_steps`, running `tool` if it is in one."""

    step: int
    max_steps: int
    tool: str | None = None
    run_id: str | None = None

    def text(self) -> str:
        now = f"; now running {code(self.tool)}" if self.tool else ""
        return (
            f"**FrogNano is working:** step {self.step:,} of at most {self.max_steps:,}{now}. "
            "Everything runs in an isolated sandbox without network or credentials."
            + _run(self.run_id)
        )


@dataclass(frozen=True, kw_only=True)
class Testing:
    """The patch is being verified and gated."""

    run_id: str | None = None

    def text(self) -> str:
        return (
            "**FrogNano is testing the patch:** the tests run on the base and on the base plus "
            "the patch, in a fresh sandbox, and the patch is checked against the policy."
            + _run(self.run_id)
        )


@dataclass(frozen=True, kw_only=True)
class Published:
    """The pull request at `url` (its html_url) is open; `number` is read from the url when
    not given, and `draft` False says the repository cannot have drafts."""

    url: str
    number: int | None = None
    draft: bool = True
    run_id: str | None = None
    story_url: str | None = None
    """The verification check, which tells what the agent did step by step."""
    left_out: Sequence[LeftOutLinkRecord] = ()
    """The report's `left_out_links`: the repository's symlinks the run left out."""
    hidden: Sequence[HiddenRecord] = ()
    """The report's `hidden_input`: what was removed before the agent read the task."""
    attempts: Sequence[str] = ()
    """A best-of-N run's line per attempt."""

    def text(self) -> str:
        number = self.number
        if number is None:
            found = re.search(r"/pull/(\d+)/?$", self.url)
            number = int(found.group(1)) if found else None
        kind = "a draft pull request" if self.draft else "a pull request"
        which = f": #{number}" if number is not None else ""
        note = (
            ""
            if self.draft
            else " This repository cannot have drafts, so it is a normal pull request: treat "
            "it as a draft."
        )
        return (
            f"**FrogNano opened {kind}{which}** ({own_link(self.url)}).{note}\n\n"
            "It was written by a small research model: a human must review every line, and "
            f"the `{HUMAN_REVIEW_CHECK}` check blocks it until someone other than the person "
            "who asked approves."
            + _story(self.story_url)
            + _attempts(self.attempts)
            + _left_out(self.left_out)
            + _hidden(self.hidden)
            + _run(self.run_id)
        )


@dataclass(frozen=True, kw_only=True)
class NoPullRequest:
    """The run ended without a pull request: `why` is its report (the reasons, and the run
    id when `run_id` is None, come from it) or one sentence."""

    why: RunReport | str
    run_id: str | None = None
    attempts: Sequence[str] = ()
    """A best-of-N run's line per attempt (`why` is the strongest one's report)."""

    def text(self) -> str:
        run_id = self.run_id
        left_out = ""
        if isinstance(self.why, str):
            lines = [md(self.why.rstrip(".")) + "."]
        else:
            lines = no_pull_request_reason(self.why)
            run_id = run_id or self.why["run_id"]
            left_out = _left_out(self.why["left_out_links"]) + _hidden(self.why["hidden_input"])
        return (
            "**FrogNano opened no pull request.**\n\n"
            + "\n".join(lines)
            + _attempts(self.attempts)
            + left_out
            + "\n\nYou can improve the issue's description and add the label again to retry."
            + _run(run_id)
        )


@dataclass(frozen=True, kw_only=True)
class Cancelled:
    """The run was cancelled, for `reason` (the label was removed, the issue closed)."""

    reason: str
    run_id: str | None = None

    def text(self) -> str:
        return (
            f"**FrogNano stopped: the run was cancelled** ({md(self.reason)}). Nothing was "
            "published." + _run(self.run_id)
        )


@dataclass(frozen=True, kw_only=True)
class Error:
    """The run failed; the exception is never shown (it may hold internal detail), only the
    run id to look up in the worker's logs."""

    run_id: str
    label: str = "frognano"

    def text(self) -> str:
        return (
            "**FrogNano failed with an internal error**, and nothing was published. Add the "
            f"{code(self.label)} label again to retry; if it fails again, ask the administrators "
            f"to look up run {code(self.run_id)} in the worker's logs."
        )


@dataclass(frozen=True, kw_only=True)
class TreeRefused:
    """GitHub's archive of the base holds something that refuses it whole (a hard link, a
    device, a path out of its folder...): the repository's content, so the reason is shown,
    inert: `why` is FrogNano's words, `member` the repository path it names (untrusted)."""

    why: str
    member: str | None = None
    run_id: str | None = None
    label: str = "frognano"

    def text(self) -> str:
        what = md(self.why) if self.member is None else f"{code(self.member)} {md(self.why)}"
        return (
            "**FrogNano could not use this repository's files**, and nothing was published: "
            f"GitHub's archive of the base commit was refused because {what}. Change that in "
            f"the repository, then add the {code(self.label)} label again." + _run(self.run_id)
        )


@dataclass(frozen=True, kw_only=True)
class FollowUpCommitted:
    """A follow-up run added the commit `sha` to the pull request at `url`."""

    url: str
    sha: str
    round: int
    run_id: str | None = None
    story_url: str | None = None
    hidden: Sequence[HiddenRecord] = ()
    """The report's `hidden_input`: what was removed before the agent read the task."""

    def text(self) -> str:
        return (
            f"**FrogNano added a commit to its pull request** ({own_link(self.url)}): round "
            f"{self.round}, commit `{self.sha[:12]}`, answering the review.\n\n"
            "A human must review the new commit too: the "
            f"`{HUMAN_REVIEW_CHECK}` check is back to waiting, since an approval of an older "
            "head does not count."
            + _story(self.story_url)
            + _hidden(self.hidden)
            + _run(self.run_id)
        )


@dataclass(frozen=True, kw_only=True)
class FollowUpNoCommit:
    """A follow-up run on the pull request at `url` ended without a commit; `why` is its
    report."""

    url: str
    why: RunReport
    run_id: str | None = None

    def text(self) -> str:
        return (
            f"**FrogNano added no commit to its pull request** ({own_link(self.url)}).\n\n"
            + "\n".join(no_pull_request_reason(self.why))
            + _left_out(self.why["left_out_links"])
            + _hidden(self.why["hidden_input"])
            + "\n\nThe pull request is as it was; you can ask again with a clearer review."
            + _run(self.run_id or self.why["run_id"])
        )


Stage = (
    Queued
    | AlreadyRunning
    | Working
    | Testing
    | Published
    | NoPullRequest
    | FollowUpCommitted
    | FollowUpNoCommit
    | Cancelled
    | TreeRefused
    | Error
)
"""What the status comment can say. There is no `unauthorised` stage on purpose: a labeller
without the required permission gets no comment at all (nothing that tells an outsider how the
app is set up, and no bot-written noise an outsider could trigger at will); the worker only
logs it."""


def status_comment(stage: Stage, *, marker: str) -> str:
    """The body of the status comment at `stage`, starting with the hidden `marker` line
    (`status_marker(N)`)."""
    if not _MARKER.fullmatch(marker):
        raise ValueError(f"{marker!r} is not a FrogNano status marker")
    return fit([fixed(marker), Part(stage.text())], BODY_BUDGET)


# -- why there is no pull request ---------------------------------------------------------------

_STOPS = {
    "step_limit": "the agent used all its steps",
    "time_limit": "the agent ran out of time",
    "context_limit": "the conversation outgrew the model's context",
    "model_error": "the model server failed",
    "no_answer": "the model's replies had neither a usable tool call nor an answer",
    "sandbox_error": "the sandbox failed",
    "cancelled": "the run was cancelled",
}
_FAILURES: tuple[tuple[str, ComparisonList], ...] = (
    ("Broken", "broken"),
    ("Failing differently", "fails_differently"),
    ("Still failing", "still_failing"),
)


def no_pull_request_reason(report: RunReport) -> list[str]:
    """Markdown lines saying why a run opened no pull request, most decisive first: gate
    findings that block, failing verification, an empty patch, the agent's limits."""
    lines: list[str] = []
    gate, verification, patch = report["gate"], report["verification"], report["patch"]
    stop = report["stop_reason"] or ""
    detail = md(report["stop_detail"] or "")
    if report["error"]:
        lines.append(f"The run failed: {md(report['error'])}.")
    elif patch is None or not patch["files"]:
        why = _STOPS.get(stop)
        lines.append("The agent changed no file" + (f" ({why}: {detail})." if why else "."))
    elif gate is not None and not gate["passed"]:
        lines.append("The gate blocked the patch:")
        blocking = [f for f in gate["findings"] if f["severity"] == "block"]
        lines += [finding_line(finding) for finding in blocking[:10]]
        if len(blocking) > 10:
            lines.append(f"- and {len(blocking) - 10:,} more")
    elif verification is None or not verification["held"]:
        if verification is None:
            lines.append("The patch was not verified.")
        else:
            lines.append(
                f"The tests did not support the patch: rule "
                f"{code(verification['require'])} did not hold "
                f"({md(verification['reason'])})."
            )
            comparison = verification["comparison"]
            for label, key in _FAILURES:
                if comparison is not None and comparison[key]:
                    lines.append(items(label, comparison[key], limit=10))
            lines.append(run_line("After (base + patch)", verification["verification"]))
    else:
        lines.append(md(report["outcome"]["reason"] or "unknown") + ".")
    empty = lines[0].startswith("The agent changed no file")
    if patch is not None and stop in _STOPS and not empty:
        lines.append(f"Also, {_STOPS[stop]} ({detail}).")
    return lines
