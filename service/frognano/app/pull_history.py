"""One of FrogNano's pull requests as its own records tell it: each commit, round and pusher."""

# A commit is FrogNano's when the App's own `FrogNano / verification` check run on it carries
# a marker (review.py): only this App can write one, and FrogNano writes it on every commit it
# makes before the branch points there. The commit's author is no such record: anyone who
# can push may set the App's e-mail address as a commit's author, and GitHub then links that
# commit to the App's account. Check runs of any other App are ignored, whatever their name.
# Who pushed the other commits comes from the ledger (the synchronize deliveries).

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from frognano.app.review import (
    LABELLED,
    SHORT_SHA,
    VERIFICATION_CHECK,
    Excluded,
    ReviewOrigin,
    parse_review_marker,
)
from frognano.github.client import RepoClient
from frognano.github.errors import GitHubError, GitHubNotFound
from frognano.github.models import PullCommit
from frognano.log import get_logger

__all__ = ["CommitRecord", "PullHistory", "read_history"]

log = get_logger(__name__)

_PULL_COMMITS_LIMIT = 250
"""GitHub lists at most this many commits of a pull request."""
_SEARCH_LIMIT = 100
"""Most commits searched for FrogNano's records; more and the search fails closed."""


@dataclass(frozen=True)
class CommitRecord:
    """One commit of the pull request, oldest first, with FrogNano's rounds recorded on it."""

    sha: str
    parent: str | None
    """Its first parent's sha (the first commit's is the base the pull request started from)."""
    rounds: tuple[ReviewOrigin, ...]
    """The markers of the App's verification check runs on it; empty: not FrogNano's commit."""

    @property
    def ours(self) -> bool:
        return bool(self.rounds)


@dataclass(frozen=True)
class PullHistory:
    """What FrogNano's records say about one of its pull requests."""

    head_sha: str
    commits: tuple[CommitRecord, ...]
    pushers: Mapping[str, str]
    """Who pushed each recorded head (sha -> login), from the ledger."""

    @property
    def ours(self) -> tuple[CommitRecord, ...]:
        return tuple(commit for commit in self.commits if commit.ours)

    @property
    def foreign(self) -> tuple[CommitRecord, ...]:
        """The commits FrogNano did not make (pushed by someone, or made by another tool)."""
        return tuple(commit for commit in self.commits if not commit.ours)

    @property
    def origin(self) -> ReviewOrigin | None:
        """The round that opened the pull request: the record on FrogNano's first commit."""
        ours = self.ours
        return ours[0].rounds[0] if ours else None

    @property
    def followups(self) -> int:
        """Rounds made after the first: FrogNano's commits less the one that opened it."""
        return max(0, len(self.ours) - 1)

    def answered(self, key: str) -> str | None:
        """The commit of the round that answered the request `key`, or None."""
        for commit in self.ours:
            if any(round_.answers == key for round_ in commit.rounds):
                return commit.sha
        return None

    def unknown(self, app_login: str) -> str | None:
        """Why the records cannot tell who must not approve, or None when they can."""
        head = next((c for c in self.commits if c.sha == self.head_sha), None)
        if head is None:
            return f"{self.head_sha[:SHORT_SHA]}, the head, is not among the commits GitHub lists"
        if not head.ours and self.pusher(head.sha, app_login) is None:
            return (
                f"{head.sha[:SHORT_SHA]}, the head, is not a commit FrogNano made, and FrogNano "
                "has no record of who pushed it (it learns that from the pull request's "
                "`synchronize` webhook delivery; redeliver it from the App's settings if it "
                "failed)"
            )
        for commit in self.ours[1:]:
            if any(round_.round is None for round_ in commit.rounds):
                return (
                    f"FrogNano's commit {commit.sha[:SHORT_SHA]} was made before FrogNano "
                    "recorded who asks for each round"
                )
        return None

    def pusher(self, sha: str, app_login: str) -> str | None:
        login = self.pushers.get(sha)
        return None if login is None or login.casefold() == app_login.casefold() else login

    def excluded(self, app_login: str) -> list[Excluded]:
        """Everyone who started or steered what the pull request holds, with why."""
        found: list[Excluded] = []
        for commit in self.ours:
            for round_ in commit.rounds:
                found.append(Excluded(round_.labeller, LABELLED))
                if round_.round is not None and round_.round > 1:
                    why = f"asked for round {round_.round}"
                    found += [Excluded(login, why) for login in round_.asked]
        shas = {commit.sha for commit in self.commits}
        for sha, login in self.pushers.items():
            if sha in shas and login.casefold() != app_login.casefold():
                found.append(Excluded(login, f"pushed {sha[:SHORT_SHA]}"))
        return found


async def _rounds_on(client: RepoClient, sha: str, app_id: int) -> tuple[ReviewOrigin, ...]:
    found = []
    for run in await client.check_runs(sha, VERIFICATION_CHECK):
        if run.app_id != app_id:  # another App can name a check run anything
            continue
        origin = parse_review_marker(run.external_id)
        if origin is not None:
            found.append(origin)
    return tuple(found)


async def read_history(
    client: RepoClient, number: int, head_sha: str, pushers: Mapping[str, str]
) -> PullHistory:
    """Pull request `number`'s commits, each with FrogNano's rounds on it. Raises
    GitHubError when the search cannot be complete (too many commits)."""
    if client.app_id is None:
        raise GitHubError("reading FrogNano's records needs the App's numeric id")
    try:
        listed: Sequence[PullCommit] = await client.pull_commits(number)
    except GitHubNotFound:
        log.warning("pull_history.commits_unlisted", pull=number)
        listed = []
    if len(listed) >= _PULL_COMMITS_LIMIT or len(listed) > _SEARCH_LIMIT:
        raise GitHubError(
            f"pull request #{number} has {len(listed)} commits, too many to search for the "
            "FrogNano records behind it"
        )
    commits = [
        CommitRecord(c.sha, c.parent, await _rounds_on(client, c.sha, client.app_id))
        for c in listed
    ]
    return PullHistory(head_sha, tuple(commits), dict(pushers))
