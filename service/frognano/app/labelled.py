"""The issue text every round works from: the one a writer labelled, and what changed since."""

# A writer labels an issue after reading it; its author (anyone, on a public repository) can
# edit it afterwards. So a follow-up round never reads the issue's instructions from GitHub:
# it works from the text FrogNano kept when the run started (ledger.py). When that record is
# gone (Redis lost it), the issue as it reads now is used only if its digest equals the one
# the verification check's marker holds, i.e. it is exactly the labelled text. The writer
# who asks for a round is told when the issue changed since, and how to start from the new
# text (a `retry` on the issue: a new run whose labeller vouches for the text as it is then).

from __future__ import annotations

import difflib
from dataclasses import dataclass

from frognano.app.ledger import LabelledIssue, Ledger, issue_digest
from frognano.app.markdown import code, fence
from frognano.app.review import ReviewOrigin
from frognano.github.client import RepoClient
from frognano.github.models import IssueText

__all__ = ["IssueTexts", "changed_notice", "issue_texts"]

_DIFF_LINES = 120
_DIFF_CHARS = 12_000


@dataclass(frozen=True)
class IssueTexts:
    """The issue as labelled (None: FrogNano cannot tell what it was) and as it reads now."""

    labelled: LabelledIssue | None
    current: IssueText


async def issue_texts(ledger: Ledger, client: RepoClient, origin: ReviewOrigin) -> IssueTexts:
    """The labelled text of the run `origin` records, and the issue as GitHub has it now."""
    current = await client.issue(origin.issue)
    kept = await ledger.labelled_issue(origin.run_id)
    if kept is not None and kept.issue == origin.issue:
        if origin.text is None or kept.digest == origin.text:
            return IssueTexts(kept, current)
        return IssueTexts(None, current)  # the two records disagree: trust neither
    if origin.text is not None and issue_digest(current.title, current.body) == origin.text:
        as_labelled = LabelledIssue(origin.issue, current.title, current.body, origin.labeller)
        return IssueTexts(as_labelled, current)
    return IssueTexts(None, current)


def _lines(title: str, body: str) -> list[str]:
    return [f"Title: {title}", "", *body.replace("\r\n", "\n").split("\n")]


def changed_notice(texts: IssueTexts, command: str) -> str | None:
    """The note to the writer asking for a round when the issue changed since it was
    labelled (the change shown inert, in a code block), or None when it did not."""
    labelled, current = texts.labelled, texts.current
    if labelled is None or labelled.digest == issue_digest(current.title, current.body):
        return None
    diff = list(
        difflib.unified_diff(
            _lines(labelled.title, labelled.body),
            _lines(current.title, current.body),
            "as labelled",
            "as it reads now",
            lineterm="",
        )
    )
    shown = "\n".join(diff[:_DIFF_LINES])
    if len(diff) > _DIFF_LINES or len(shown) > _DIFF_CHARS:
        shown = shown[:_DIFF_CHARS] + f"\n… (the change is longer: {len(diff):,} lines in all)"
    return (
        f"Issue #{labelled.issue} has changed since {code(labelled.labeller)} labelled it. This "
        "round works from the issue as it was labelled, which FrogNano kept; the agent is not "
        "shown the change:\n\n"
        f"{fence(shown, 'diff')}\n\n"
        f"To work from the new text, a writer can comment {code(command + ' retry')} on the "
        "issue: a new run, from the issue as it reads then."
    )
