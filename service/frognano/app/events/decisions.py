"""What a webhook delivery can ask FrogNano to do: one frozen dataclass per decision."""

# triggers.py decides which one a delivery is (pure); the intake queue stores them as jobs
# (jobs.py), and the worker acts on them once it has checked who asked.

from __future__ import annotations

from dataclasses import dataclass

from frognano.app.events.followups import FollowUpRequest

__all__ = [
    "CancelRequest",
    "CommandRequest",
    "Decision",
    "DropTokens",
    "FollowUpRequest",
    "Ignored",
    "IssueRef",
    "Request",
    "ReviewGateCheck",
    "RunRequest",
]


@dataclass(frozen=True)
class IssueRef:
    installation_id: int
    repo: str
    """`owner/name`, as in `repository.full_name`."""
    repo_id: int
    number: int


@dataclass(frozen=True)
class RunRequest:
    """Start a run on an issue (after the worker has checked the labeller's permission)."""

    issue: IssueRef
    delivery_id: str
    labeller: str
    """`sender.login`: who added the label. Not yet authorised."""
    label: str
    """The label's name as the repository spells it."""
    title: str
    body: str
    """The issue body; "" when GitHub sends null. Untrusted text (invariant 4)."""
    labeller_id: int | None = None
    """`sender.id`: credits the labeller in the commit's Co-authored-by trailer by account,
    which survives a rename."""
    retry: bool = False
    """`/frognano retry`: a branch a human pushed to is passed over (`-2`, `-3`, ...)."""
    base: str | None = None
    """The branch a writer picked (`frognano:BRANCH`, `base=BRANCH`); None: the default one."""


@dataclass(frozen=True)
class CancelRequest:
    """Stop any queued or running run on an issue; nothing to do when there is none."""

    issue: IssueRef
    delivery_id: str
    reason: str
    """For the status comment, e.g. "the issue was closed by @bob"."""


@dataclass(frozen=True)
class CommandRequest:
    """An issue comment starting with the policy's command, by someone not yet authorised."""

    issue: IssueRef
    delivery_id: str
    commenter: str
    commenter_id: int | None
    comment_id: int
    words: tuple[str, ...]
    """What follows the command on its first line; untrusted, like title and body."""
    label: str
    """The policy's trigger label, for a run the command starts."""
    title: str
    body: str


@dataclass(frozen=True)
class ReviewGateCheck:
    """Re-evaluate the human-review check of one of the app's pull requests."""

    installation_id: int
    repo: str
    repo_id: int
    pull_number: int
    head_sha: str
    """The PR's head as this delivery saw it; the gate re-reads the current one."""
    delivery_id: str
    pusher: str | None = None
    """`pull_request.synchronize`: `sender.login`, who pushed `head_sha` (GitHub's word, in a
    signed delivery); the gate records it and never counts that person's approval."""


@dataclass(frozen=True)
class DropTokens:
    """The installation changed (created, deleted, suspended, permissions, repositories):
    forget its cached tokens and anything derived from them."""

    installation_id: int
    delivery_id: str


@dataclass(frozen=True)
class Ignored:
    """Nothing to do; `reason` goes back to GitHub as the JSON reason of a 200."""

    reason: str


Request = RunRequest | CancelRequest | CommandRequest | FollowUpRequest | ReviewGateCheck
Decision = Request | DropTokens | Ignored
