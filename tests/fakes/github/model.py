"""The fake GitHub's constants, public records, errors and request/response types."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.fakes.github.spec import _Operation

DOCS = "https://docs.github.com/rest"
MAX_BODY = 65536
SECONDARY_RATE_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID "
    "0000:0000:0000000:0000000:00000000."
)
NOT_ACCESSIBLE = "Resource not accessible by integration"
DEFAULT_APP_PERMISSIONS = {
    "metadata": "read",
    "contents": "write",
    "issues": "write",
    "pull_requests": "write",
    "checks": "write",
}
TOKEN_TTL = 3600
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
REVIEW_STATES = {
    "approved": "APPROVED",
    "changes_requested": "CHANGES_REQUESTED",
    "commented": "COMMENTED",
    "dismissed": "DISMISSED",
}
LEGACY_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
    "none": "none",
}
PERMISSION_RANK = {"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}


# --------------------------------------------------------------------------------------
# Public records


@dataclass
class Recorded:
    """One request as the server saw it (headers lower-cased; `json` is the parsed body)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    json: Any
    status: int = 0
    operation_id: str | None = None


@dataclass
class ValidationFailure:
    """A request (or, in `response_errors`, a response) that broke the operation's schema."""

    method: str
    path: str
    operation_id: str
    where: str  # "body" or "query" (requests); "response" (responses)
    message: str


@dataclass
class Token:
    """An installation token (or, with `user` set, a personal access token)."""

    token: str
    installation_id: int | None
    repository_ids: frozenset[int] | None  # None: every repo of the installation
    permissions: dict[str, str]
    expires_at: float
    user: str | None = None
    revoked: bool = False


@dataclass
class Repo:
    """State of one repository. Inspect it in tests; change it through FakeGitHub or the API.

    `refs` maps full ref names (`refs/heads/main`) to commit SHAs; `commits`, `trees` and
    `blobs` are the git object store (trees as lists of `{"name", "mode", "type", "sha"}`);
    `pulls` and `issues` share the issue-number space (a pull request is also in `issues`,
    where its comments, labels and reactions live); `check_runs` is keyed by id; `reviews`
    by pull number.
    """

    owner: str
    name: str
    id: int
    default_branch: str
    installation_id: int
    allow_drafts: bool
    private: bool
    created_at: str
    refs: dict[str, str] = field(default_factory=dict)
    commits: dict[str, dict[str, Any]] = field(default_factory=dict)
    trees: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    reviews: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    collaborators: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def branch_sha(self, branch: str) -> str | None:
        return self.refs.get(f"refs/heads/{branch}")

    def comments(self, number: int) -> list[dict[str, Any]]:
        """The comments on issue or pull request `number`, oldest first."""
        return list(self.issues[number]["comments"])


class HTTPError(Exception):
    """Raised inside handlers: becomes the response."""

    def __init__(
        self, status: int, body: Any = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(status, body)
        self.status = status
        self.body = body
        self.headers = headers or {}


def _error(status: int, message: str, **extra: Any) -> HTTPError:
    return HTTPError(
        status, {"message": message, "documentation_url": DOCS, "status": str(status), **extra}
    )


def _validation_failed(
    resource: str, field_: str, code: str, message: str | None = None
) -> HTTPError:
    err: dict[str, Any] = {"resource": resource, "field": field_, "code": code}
    if message is not None:
        err["message"] = message
    return _error(422, "Validation Failed", errors=[err])


def _now_iso(ts: float) -> str:
    return datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node_id(kind: str, value: object) -> str:
    return base64.b64encode(f"{kind}_{value}".encode()).decode().rstrip("=")


# --------------------------------------------------------------------------------------
# Requests and responses as the operation handlers see them


@dataclass
class _Fault:
    method: str
    regex: re.Pattern[str]
    status: int
    times: int
    headers: dict[str, str]
    body: Any


@dataclass
class _Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    params: dict[str, str]
    op: _Operation
    identity: _Identity


@dataclass
class _Identity:
    kind: str  # "app", "installation", "user", "anonymous"
    token: Token | None = None
    login: str | None = None


@dataclass
class _Response:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
