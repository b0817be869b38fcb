"""A follow-up on one of the App's pull requests: the request, and its rounds counted (pure)."""

# A writer's comment on the pull request that starts with the policy's command asks for one
# more round on it (docs/github-app.md, "Follow-ups on a pull request"). The receiver queues
# the comment as it came; the worker checks the commenter, the pull request and the cap.

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from frognano.github.models import PullCommit

__all__ = ["FollowUpRequest", "app_commits", "followups_done"]


@dataclass(frozen=True)
class FollowUpRequest:
    """A pull request comment starting with the command, by someone not yet authorised."""

    installation_id: int
    repo: str
    repo_id: int
    pull_number: int
    delivery_id: str
    commenter: str
    commenter_id: int | None
    comment_id: int
    """The comment's id: its reaction, and the key of the App's one reply to it."""
    body: str
    """The whole comment: the review to answer. Untrusted."""


def app_commits(commits: Sequence[PullCommit], app_login: str) -> list[PullCommit]:
    """The pull request's commits made by the App, oldest first."""
    login = app_login.casefold()
    return [commit for commit in commits if (commit.author or "").casefold() == login]


def followups_done(commits: Sequence[PullCommit], app_login: str) -> int:
    """Rounds made after the first: the run that opened the pull request made one commit and
    each follow-up one more, so the App's commits less one."""
    return max(0, len(app_commits(commits, app_login)) - 1)
