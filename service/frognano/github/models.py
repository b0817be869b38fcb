"""Plain values exchanged with the GitHub layer, the text limits GitHub enforces, and bots."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from frognano.errors import UnsafePathError

__all__ = [
    "BODY_LIMIT",
    "CHECK_TEXT_LIMIT",
    "CheckRunInfo",
    "FileChange",
    "PullCommit",
    "PullInfo",
    "PullState",
    "Review",
    "is_bot",
    "truncate",
]

BODY_LIMIT = 65_536
"""Issue, comment and pull request bodies: GitHub answers 422 above this many characters."""
CHECK_TEXT_LIMIT = 65_535
"""A check run's `output.summary` and `output.text`, each."""
_MARGIN = 500  # GitHub's count and ours may differ on astral characters; keep well clear

FILE_MODES = frozenset({"100644", "100755", "120000"})


@dataclass(frozen=True)
class FileChange:
    """One path of a commit: `content` None deletes it; mode 120000 is a symlink whose content
    is the link's target."""

    path: str
    mode: Literal["100644", "100755", "120000"] | str
    content: bytes | None

    def __post_init__(self) -> None:
        if self.mode not in FILE_MODES:
            modes = ", ".join(sorted(FILE_MODES))
            raise ValueError(f"{self.path!r}: mode {self.mode!r} is not one of {modes}")
        check_repo_path(self.path)


def check_repo_path(path: str) -> None:
    """Raise UnsafePathError unless `path` is a plain relative path inside a repository."""
    parts = path.split("/")
    if (
        not path
        or path.startswith("/")
        or "\0" in path
        or any(part in ("", ".", "..") for part in parts)
        or any(part.lower() == ".git" for part in parts)
    ):
        raise UnsafePathError(f"{path!r} is not a relative path inside the repository")


@dataclass(frozen=True)
class PullInfo:
    """A pull request as the worker needs it; `draft` False when drafts were not available."""

    number: int
    html_url: str
    head_sha: str
    draft: bool


@dataclass(frozen=True)
class Review:
    """One pull request review; `state` upper case as the REST API gives it (APPROVED, ...)."""

    user: str
    state: str
    commit_id: str | None
    user_type: str


@dataclass(frozen=True)
class ReviewComment:
    """One line comment of a review (`RepoClient.review_comments`); untrusted text."""

    path: str
    line: int | None
    """The line of the file it is on; None for a comment on a line the diff no longer has."""
    diff_hunk: str
    body: str
    author: str = ""
    """`user.login` of whoever wrote it ("" when GitHub names nobody)."""


@dataclass(frozen=True)
class IssueText:
    """An issue as a follow-up's context needs it (`RepoClient.issue`); untrusted text."""

    number: int
    title: str
    body: str
    """"" when GitHub sends null."""
    state: str


@dataclass(frozen=True)
class PullState:
    """A pull request as the review gate re-reads it (`RepoClient.pull`)."""

    number: int
    head_sha: str
    head_ref: str
    author: str
    """`user.login` of whoever opened it."""
    author_type: str
    """`user.type`: User, Bot, Organization."""
    state: str
    """open or closed."""
    draft: bool
    base_ref: str = ""
    """The branch it targets."""
    html_url: str = ""
    merged: bool = False


@dataclass(frozen=True)
class CheckRunInfo:
    """One check run as listed for a commit (`RepoClient.check_runs`)."""

    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    external_id: str | None
    app_id: int | None
    """The id of the GitHub App that wrote it: only that App can write or edit it."""


@dataclass(frozen=True)
class PullCommit:
    """One commit of a pull request (`RepoClient.pull_commits`)."""

    sha: str
    author: str | None
    """The GitHub login GitHub linked the commit's author to; None when it linked none."""
    parent: str | None = None
    """Its first parent's sha."""
    message: str = ""


def is_bot(login: str, user_type: str | None) -> bool:
    """Whether a GitHub account is a bot: its `type` is Bot, or its login ends in `[bot]`
    (an App's account), in any case since GitHub logins are case-insensitive."""
    return user_type == "Bot" or login.casefold().endswith("[bot]")


def truncate(text: str, limit: int, what: str = "text") -> str:
    """`text` cut to stay well under `limit` characters, with a note saying how much was cut."""
    if len(text) <= limit - _MARGIN:
        return text
    keep = limit - _MARGIN
    note = f"\n\n… ({what} truncated: {len(text) - keep:,} more characters not shown)"
    return text[: keep - len(note)] + note
