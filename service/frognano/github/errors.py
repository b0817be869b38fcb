"""Errors of the GitHub layer, all under `GitHubError(FrogNanoError)`."""

# GitHubError              GitHub refused a request; the message has the status, GitHub's
# │                        own message and what to check
# ├── GitHubUnavailable    5xx or connection errors until the retry budget ran out
# │   └── GitHubRateLimited a primary or secondary rate limit outlasted the retry budget
# ├── GitHubAuthError      401: the JWT or the installation token was refused
# ├── GitHubForbidden      403 (not a rate limit): the App or token lacks a permission
# ├── GitHubNotFound       404: missing object, or the token cannot see it
# ├── GitHubRequestError   409, 422 and other 4xx: the request itself was refused
# └── BranchConflict       the branch holds commits not made by the app; it is left alone

from __future__ import annotations

from frognano.errors import FrogNanoError

__all__ = [
    "BranchConflict",
    "GitHubAuthError",
    "GitHubError",
    "GitHubForbidden",
    "GitHubNotFound",
    "GitHubRateLimited",
    "GitHubRequestError",
    "GitHubUnavailable",
]


class GitHubError(FrogNanoError):
    """GitHub refused or failed a request; `status` is the HTTP status (None: no response)."""

    def __init__(
        self, message: str, *, status: int | None = None, github_message: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.github_message = github_message


class GitHubUnavailable(GitHubError):
    """GitHub kept answering 5xx, or could not be reached, until the retry budget ran out."""


class GitHubRateLimited(GitHubUnavailable):
    """A rate limit would outlast the retry budget."""


class GitHubAuthError(GitHubError):
    """401: the App's JWT or the installation token was not accepted."""


class GitHubForbidden(GitHubError):
    """403 that is not a rate limit: a permission the App or the narrowed token lacks."""


class GitHubNotFound(GitHubError):
    """404: the object does not exist, or the token is not allowed to see it."""


class GitHubRequestError(GitHubError):
    """409, 422 or another 4xx: GitHub refused the request as sent."""


class BranchConflict(GitHubError):
    """The branch exists with commits the app did not make, so it is not moved."""
