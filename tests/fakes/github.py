"""A stateful fake of the GitHub REST API, served over real HTTP on 127.0.0.1.

Use it as a context manager::

    with FakeGitHub() as gh:
        gh.add_repo("octo/hello", files={"README.md": b"hi\\n"})
        gh.add_issue("octo/hello", 1, "Bug", "It breaks")
        client = github.Github(base_url=gh.base_url, auth=...)
        ...
        assert not gh.validation_errors

What it does (see the module's tests for each behaviour):

- Routes exactly the operations in `openapi/api.github.com.subset.json` (a committed cut of
  GitHub's official description, see `openapi/generate.py`); anything else is 404
  `{"message": "Not Found"}`.
- Validates every request's JSON body and its query parameters against the operation's
  schema (OpenAPI 3.0 converted to JSON Schema 2020-12). A violation is answered 422
  `{"message": "Invalid request.\\n\\n...", "documentation_url": ...}` and appended to
  `validation_errors`. Responses the fake builds are checked against the response schemas
  too (`response_errors`): that keeps the fake's own shapes honest.
- Auth: App JWTs (RS256, checked with the App's public key; `iss` is the App id; `exp - iat`
  at most 600 s) for `/app/...` and `GET /repos/{o}/{r}/installation`; installation tokens
  (`ghs_...`, 1 hour, narrowed by `repositories` / `repository_ids` / `permissions`) for the
  rest; both the `Bearer` and `token` schemes. `add_user_token` mints a personal token for a
  human, which cannot write check runs (only Apps can). Anonymous GETs may read public repos.
- Git objects are real git objects: blob, tree and commit SHAs are what `git` would compute,
  so a tree can be compared with a local `git write-tree`.
- Commits created without `author`/`committer` by an installation token are authored by
  `<app_slug>[bot]`, committed by `GitHub <noreply@github.com>` and `verification.verified`
  is true; with a custom author (or committer) they are unsigned (`verified: false`).
- `GET /repos/{o}/{r}/tarball/{ref}` answers 302 with a `Location` on this same server
  (`/_codeload/...?token=...`, one-time token, no Authorization needed, like codeload.github.com),
  which serves a gzip tarball whose single top-level folder is `owner-repo-<7 char sha>/`,
  with file modes (executables, symlinks) preserved and the commit SHA in the pax global
  header's `comment`, as `git archive` writes it.
- `fail_next` injects faults (502, secondary rate limits, 429...) and `latency` slows every
  response down.

Endpoints (paths under base_url; JWT = App JWT, otherwise a token):
    GET /app (JWT), GET /repos/{o}/{r}/installation (JWT),
    POST /app/installations/{id}/access_tokens (JWT), DELETE /installation/token
    GET /repos/{o}/{r}, GET /repos/{o}/{r}/collaborators/{user}/permission,
    GET /repos/{o}/{r}/tarball/{ref} (302), GET /repos/{o}/{r}/commits?sha=&per_page=&page=,
    GET /repos/{o}/{r}/commits/{ref}, GET /repos/{o}/{r}/compare/{base}...{head}
    GET /git/ref/{ref}, POST /git/refs, PATCH /git/refs/{ref} (force false: fast-forward only),
    GET|POST /git/commits, GET|POST /git/blobs, GET|POST /git/trees (?recursive=1)
    GET|POST /pulls (?head=owner:branch&state=&base=), GET|PATCH /pulls/{n},
    POST /pulls/{n}/requested_reviewers, GET /pulls/{n}/reviews
    GET /issues/{n}, GET|POST /issues/{n}/comments, PATCH /issues/comments/{id},
    POST /issues/{n}/labels, POST /issues/{n}/reactions
    POST /check-runs, PATCH /check-runs/{id}, GET /commits/{ref}/check-runs?check_name=
(git, pulls, issues and check-runs paths are under /repos/{o}/{r}.)

PyGithub clients: pass `seconds_between_requests=0, seconds_between_writes=0`, or PyGithub
sleeps up to 1 s before each write. Its default GithubRetry retries 5xx (POST included) and
403/429 with Retry-After, which `fail_next` lets a test exercise.

Not modelled: GraphQL, webhooks (this server never sends any), merges, forks, teams,
conditional requests/ETags, primary rate-limit accounting (the `x-ratelimit-*` headers are
constant), the `workflows` permission check on `.github/workflows/**`.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import functools
import gzip
import hashlib
import io
import json
import re
import secrets
import socket
import tarfile
import threading
import time
import traceback
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SPEC_PATH = Path(__file__).parent / "openapi" / "api.github.com.subset.json"
SPEC_URI = "urn:github:rest"
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


# --------------------------------------------------------------------------------------
# The OpenAPI subset


@dataclass
class _Operation:
    method: str
    template: str
    regex: re.Pattern[str]
    operation_id: str
    op: dict[str, Any]
    pointer: str  # JSON pointer of the operation inside the spec


def _to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0 schema dialect -> JSON Schema 2020-12 (`nullable` is the only difference
    that matters for validation here)."""
    if isinstance(node, list):
        return [_to_json_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _to_json_schema(v) for k, v in node.items()}
    if out.pop("nullable", False) is True:
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def _pointer(*parts: str) -> str:
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass
class _Spec:
    document: dict[str, Any]
    registry: Registry[Any]
    operations: list[_Operation]
    info: dict[str, Any]
    validators: dict[str, Draft202012Validator] = field(default_factory=dict)

    def validator(self, pointer: str) -> Draft202012Validator:
        if pointer not in self.validators:
            self.validators[pointer] = Draft202012Validator(
                {"$ref": f"{SPEC_URI}#{pointer}"}, registry=self.registry
            )
        return self.validators[pointer]

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            target: Any = self.document
            for part in node["$ref"][2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
        return node


# Path parameters that may contain slashes.
_GREEDY_PARAMS = {"ref", "basehead"}


@functools.cache
def load_spec() -> _Spec:
    """The committed subset, converted and indexed (cached per process)."""
    raw = json.loads(SPEC_PATH.read_text(encoding="utf-8"))
    document = _to_json_schema(raw)
    registry: Registry[Any] = Registry().with_resource(
        SPEC_URI, Resource.from_contents(document, default_specification=DRAFT202012)
    )
    operations = []
    for template, item in document["paths"].items():
        pattern = re.sub(
            r"\{(\w+)\}",
            lambda m: f"(?P<{m[1]}>.+)" if m[1] in _GREEDY_PARAMS else f"(?P<{m[1]}>[^/]+)",
            template,
        )
        for method, op in item.items():
            if method == "parameters":
                continue
            operations.append(
                _Operation(
                    method.upper(),
                    template,
                    re.compile(f"^{pattern}$"),
                    op["operationId"],
                    op,
                    _pointer("paths", template, method),
                )
            )
    # Literal segments first, so /issues/comments/{id} never reads as /issues/{number}.
    operations.sort(key=lambda o: (o.template.count("{"), -len(o.template)))
    return _Spec(document, registry, operations, raw["info"])


# --------------------------------------------------------------------------------------
# Git objects


def _git_hash(kind: str, data: bytes) -> str:
    return hashlib.sha1(f"{kind} {len(data)}\0".encode() + data, usedforsecurity=False).hexdigest()


def _tree_bytes(entries: list[dict[str, str]]) -> bytes:
    def key(e: dict[str, str]) -> bytes:
        name = e["name"].encode()
        return name + b"/" if e["type"] == "tree" else name

    out = b""
    for e in sorted(entries, key=key):
        mode = e["mode"].lstrip("0")
        out += f"{mode} {e['name']}".encode() + b"\0" + bytes.fromhex(e["sha"])
    return out


def _now_iso(ts: float) -> str:
    return datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _git_time(iso: str) -> str:
    dt = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return f"{int(dt.timestamp())} +0000"


# --------------------------------------------------------------------------------------
# The server


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


class FakeGitHub:
    """The fake GitHub. All state is in memory and lives as long as the object."""

    def __init__(
        self,
        *,
        app_id: int = 1,
        app_slug: str = "frognano",
        private_key_pem: bytes | None = None,
        app_permissions: dict[str, str] | None = None,
        validate_responses: bool = True,
    ) -> None:
        self.app_id = app_id
        self.app_slug = app_slug
        self.app_name = app_slug.capitalize()
        self.bot_login = f"{app_slug}[bot]"
        self.app_permissions = dict(app_permissions or DEFAULT_APP_PERMISSIONS)
        if private_key_pem is None:
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            private_key_pem = key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        self.app_private_key: bytes = private_key_pem
        # Skipping the RSA consistency check saves ~70 ms per server; a bad key still fails
        # when PyJWT verifies a signature with it.
        private = serialization.load_pem_private_key(
            private_key_pem, password=None, unsafe_skip_rsa_key_validation=True
        )
        self._public_key = private.public_key()
        self.latency: float = 0.0
        self.validate_responses = validate_responses
        self.requests: list[Recorded] = []
        self.validation_errors: list[ValidationFailure] = []
        self.response_errors: list[ValidationFailure] = []
        self.server_errors: list[str] = []  # tracebacks of bugs in the fake itself (500s)
        self.tokens: dict[str, Token] = {}
        self.clock_offset: float = 0.0
        self._spec = load_spec()
        self._lock = threading.RLock()
        self._faults: list[_Fault] = []
        self._repos: dict[str, Repo] = {}
        self._users: dict[str, dict[str, Any]] = {}
        self._emails: dict[str, str] = {}
        self._installations: dict[int, dict[str, Any]] = {}
        self._comments: dict[int, tuple[str, int]] = {}  # comment id -> (repo, issue)
        self._download_tokens: dict[str, tuple[str, str]] = {}
        self._ids = 1000
        self._created = _now_iso(time.time())
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._sockets: set[socket.socket] = set()
        self.base_url: str = ""
        self._user(self.bot_login, kind="Bot")

    # ---- lifecycle ----------------------------------------------------------------

    def start(self) -> FakeGitHub:
        fake = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False
            allow_reuse_address = True

            def get_request(self) -> tuple[socket.socket, Any]:
                sock, addr = super().get_request()
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with fake._lock:
                    fake._sockets.add(sock)
                return sock, addr

            def shutdown_request(self, request: Any) -> None:
                with fake._lock:
                    fake._sockets.discard(request)
                super().shutdown_request(request)

        self._server = Server(("127.0.0.1", 0), _make_handler(self))
        port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        with self._lock:
            for sock in list(self._sockets):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- setting up state -----------------------------------------------------------

    def now(self) -> float:
        return time.time() + self.clock_offset

    def advance_time(self, seconds: float) -> None:
        """Move the fake's clock (token and JWT expiry) forward."""
        self.clock_offset += seconds

    def add_repo(
        self,
        full_name: str,
        *,
        files: dict[str, bytes],
        default_branch: str = "main",
        installation_id: int = 100,
        allow_drafts: bool = True,
        private: bool = False,
    ) -> Repo:
        """Create a repository whose default branch holds one commit with `files` (paths with
        `/` make folders). `files={}` makes an empty repository (the Git Data API answers 409).
        Also installs the App on it (installation `installation_id`, created on first use)."""
        with self._lock:
            owner, name = full_name.split("/")
            if full_name in self._repos:
                raise ValueError(f"{full_name} exists")
            self._user(owner, kind="Organization")
            repo = Repo(
                owner=owner,
                name=name,
                id=self._next_id(),
                default_branch=default_branch,
                installation_id=installation_id,
                allow_drafts=allow_drafts,
                private=private,
                created_at=_now_iso(self.now()),
            )
            self._repos[full_name] = repo
            inst = self._installations.setdefault(
                installation_id, {"account": owner, "repos": [], "created_at": repo.created_at}
            )
            inst["repos"].append(full_name)
            if files:
                flat = {p: ("100644", "blob", self._store_blob(repo, d)) for p, d in files.items()}
                tree = self._build_tree(repo, flat)
                author = {
                    "name": "Octo Cat",
                    "email": "octocat@users.noreply.github.com",
                    "date": _now_iso(self.now()),
                }
                sha = self._store_commit(
                    repo,
                    "Initial commit",
                    tree,
                    [],
                    author=author,
                    committer=author,
                    signed_by=None,
                )
                repo.refs[f"refs/heads/{default_branch}"] = sha
            return repo

    def add_collaborator(
        self,
        full_name: str,
        login: str,
        permission: str,
        *,
        role_name: str | None = None,
        bot: bool = False,
    ) -> None:
        """Give `login` a role on the repo: admin, maintain, write, triage or read (the REST
        `permission` field then shows the legacy mapping); `role_name` names a custom role."""
        if permission not in PERMISSION_RANK:
            raise ValueError(f"unknown permission {permission!r}")
        with self._lock:
            self._user(login, kind="Bot" if bot else "User")
            self.repo(full_name).collaborators[login] = {
                "permission": permission,
                "role_name": role_name or permission,
            }

    def add_issue(
        self, full_name: str, number: int, title: str, body: str, *, user: str = "reporter"
    ) -> None:
        with self._lock:
            repo = self.repo(full_name)
            if number in repo.issues:
                raise ValueError(f"issue {number} exists")
            self._user(user)
            repo.issues[number] = self._new_issue(number, title, body, user)

    def add_user_token(self, login: str) -> str:
        """A personal access token acting as `login` (a collaborator's role limits it)."""
        with self._lock:
            self._user(login)
            token = "ghp_" + secrets.token_hex(18)
            self.tokens[token] = Token(token, None, None, {}, self.now() + 10 * TOKEN_TTL, login)
            return token

    def create_installation_token(
        self,
        installation_id: int = 100,
        *,
        repositories: list[str] | None = None,
        permissions: dict[str, str] | None = None,
    ) -> str:
        """Mint an installation token directly (what POST .../access_tokens does)."""
        with self._lock:
            body: dict[str, Any] = {}
            if repositories is not None:
                body["repositories"] = repositories
            if permissions is not None:
                body["permissions"] = permissions
            return str(self._mint_token(installation_id, body)["token"])

    def fail_next(
        self,
        method: str,
        path_regex: str,
        *,
        status: int = 502,
        times: int = 1,
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        """Answer the next `times` requests matching `method` ("*" for any) and `path_regex`
        (`re.search` on the path, no query) with `status`. Defaults: 403 and 429 get the
        secondary-rate-limit message and `Retry-After: 1`; others `{"message": "Server Error"}`.
        Pass `headers={}` for no Retry-After. Requests still pass schema validation first."""
        if body is None:
            if status in (403, 429):
                body = {"message": SECONDARY_RATE_LIMIT_MESSAGE, "documentation_url": DOCS}
            else:
                body = {"message": "Server Error"}
        if headers is None:
            headers = {"Retry-After": "1"} if status in (403, 429) else {}
        with self._lock:
            self._faults.append(
                _Fault(method.upper(), re.compile(path_regex), status, times, headers, body)
            )

    def repo(self, full_name: str) -> Repo:
        with self._lock:
            return self._repos[full_name]

    def submit_review(
        self,
        full_name: str,
        pull_number: int,
        *,
        user: str,
        state: str,
        commit_id: str | None = None,
        body: str = "",
    ) -> dict[str, Any]:
        """Record a review as if `user` submitted it on github.com. `state` is the webhook's
        lowercase (approved, changes_requested, commented); the REST list shows it uppercase.
        `commit_id` defaults to the pull request's current head. Returns the review JSON."""
        with self._lock:
            repo = self.repo(full_name)
            pull = repo.pulls[pull_number]
            self._user(user)
            review = {
                "id": self._next_id(),
                "user": user,
                "body": body,
                "state": REVIEW_STATES[state.lower()],
                "commit_id": commit_id or self._pull_head_sha(repo, pull),
                "submitted_at": _now_iso(self.now()),
            }
            repo.reviews.setdefault(pull_number, []).append(review)
            return self._review_json(repo, pull_number, review)

    def file_at(self, full_name: str, ref_or_sha: str, path: str) -> bytes | None:
        """The bytes of `path` (a symlink gives its target) at a branch, full ref or commit SHA;
        None when the path is absent."""
        with self._lock:
            repo = self.repo(full_name)
            sha = self._resolve_commitish(repo, ref_or_sha)
            if sha is None:
                raise KeyError(f"{ref_or_sha} not found in {full_name}")
            entry = self._flatten(repo, repo.commits[sha]["tree"]).get(path)
            if entry is None or entry[1] != "blob":
                return None
            return repo.blobs[entry[2]]

    def files_at(self, full_name: str, ref_or_sha: str) -> dict[str, tuple[str, bytes]]:
        """Every blob at a commit: path -> (mode, bytes)."""
        with self._lock:
            repo = self.repo(full_name)
            sha = self._resolve_commitish(repo, ref_or_sha)
            if sha is None:
                raise KeyError(f"{ref_or_sha} not found in {full_name}")
            flat = self._flatten(repo, repo.commits[sha]["tree"])
            return {p: (m, repo.blobs[s]) for p, (m, t, s) in flat.items() if t == "blob"}

    def requests_to(self, method: str, path_regex: str) -> list[Recorded]:
        """The recorded requests with this method whose path matches (re.search)."""
        rx = re.compile(path_regex)
        return [r for r in self.requests if r.method == method.upper() and rx.search(r.path)]

    def assert_clean(self) -> None:
        """Fail if any request broke its schema (or a response the fake built did)."""
        problems = [*self.validation_errors, *self.response_errors]
        lines = [f"{p.where} {p.method} {p.path}: {p.message}" for p in problems]
        lines += [f"server error:\n{tb}" for tb in self.server_errors]
        if lines:
            raise AssertionError("fake GitHub saw schema violations:\n" + "\n".join(lines))

    # ---- internals: ids, users ------------------------------------------------------

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def _user(self, login: str, kind: str = "User") -> dict[str, Any]:
        if login not in self._users:
            uid = self._next_id()
            self._users[login] = {"id": uid, "type": kind}
            self._emails[f"{uid}+{login}@users.noreply.github.com"] = login
            self._emails[f"{login}@users.noreply.github.com"] = login
        return self._users[login]

    def _user_json(self, login: str) -> dict[str, Any]:
        info = self._user(login)
        api, web = f"{self.base_url}/users/{login}", f"https://github.com/{login}"
        return {
            "login": login,
            "id": info["id"],
            "node_id": _node_id("U", info["id"]),
            "avatar_url": f"https://avatars.githubusercontent.com/u/{info['id']}?v=4",
            "gravatar_id": "",
            "url": api,
            "html_url": web,
            "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions",
            "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos",
            "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events",
            "type": info["type"],
            "user_view_type": "public",
            "site_admin": False,
        }

    def _actor(self, req: _Request) -> str:
        ident = req.identity
        if ident.kind == "installation":
            return self.bot_login
        if ident.kind == "user" and ident.login:
            return ident.login
        raise _error(401, "Requires authentication")

    # ---- internals: git -------------------------------------------------------------

    def _store_blob(self, repo: Repo, data: bytes) -> str:
        sha = _git_hash("blob", data)
        repo.blobs[sha] = data
        return sha

    def _store_tree(self, repo: Repo, entries: list[dict[str, str]]) -> str:
        sha = _git_hash("tree", _tree_bytes(entries))
        repo.trees[sha] = sorted(entries, key=lambda e: e["name"])
        return sha

    def _build_tree(self, repo: Repo, flat: dict[str, tuple[str, str, str]]) -> str:
        """flat: path -> (mode, type, sha) for blobs and submodules; returns the root tree."""
        children: dict[str, dict[str, tuple[str, str, str]]] = {}
        entries: list[dict[str, str]] = []
        for path, (mode, kind, sha) in flat.items():
            head, sep, rest = path.partition("/")
            if sep:
                children.setdefault(head, {})[rest] = (mode, kind, sha)
            else:
                entries.append({"name": head, "mode": mode, "type": kind, "sha": sha})
        for name, sub in children.items():
            entries.append(
                {"name": name, "mode": "040000", "type": "tree", "sha": self._build_tree(repo, sub)}
            )
        return self._store_tree(repo, entries)

    def _flatten(
        self, repo: Repo, tree_sha: str, prefix: str = ""
    ) -> dict[str, tuple[str, str, str]]:
        out: dict[str, tuple[str, str, str]] = {}
        for e in repo.trees[tree_sha]:
            path = prefix + e["name"]
            if e["type"] == "tree":
                out.update(self._flatten(repo, e["sha"], path + "/"))
            else:
                out[path] = (e["mode"], e["type"], e["sha"])
        return out

    def _store_commit(
        self,
        repo: Repo,
        message: str,
        tree: str,
        parents: list[str],
        *,
        author: dict[str, str],
        committer: dict[str, str],
        signed_by: str | None,
    ) -> str:
        lines = [f"tree {tree}", *(f"parent {p}" for p in parents)]
        lines.append(f"author {author['name']} <{author['email']}> {_git_time(author['date'])}")
        lines.append(
            f"committer {committer['name']} <{committer['email']}> {_git_time(committer['date'])}"
        )
        payload = "\n".join(lines) + "\n\n" + message
        sha = _git_hash("commit", payload.encode())
        repo.commits[sha] = {
            "sha": sha,
            "tree": tree,
            "parents": list(parents),
            "author": dict(author),
            "committer": dict(committer),
            "message": message,
            "verified": signed_by is not None,
            "payload": payload,
            "signed_by": signed_by,
        }
        return sha

    def _resolve_commitish(self, repo: Repo, ref: str) -> str | None:
        for candidate in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/{ref}"):
            if candidate in repo.refs:
                return repo.refs[candidate]
        if ref in repo.commits:
            return ref
        if len(ref) >= 7 and re.fullmatch(r"[0-9a-f]+", ref):
            found = [s for s in repo.commits if s.startswith(ref)]
            if len(found) == 1:
                return found[0]
        return None

    def _ancestors(self, repo: Repo, sha: str) -> list[str]:
        """sha and its ancestors, newest first (parents in order; fine for linear history)."""
        seen: list[str] = []
        stack = [sha]
        while stack:
            cur = stack.pop(0)
            if cur in seen or cur not in repo.commits:
                continue
            seen.append(cur)
            stack.extend(repo.commits[cur]["parents"])
        return seen

    def _require_nonempty(self, repo: Repo) -> None:
        if not repo.refs:
            raise _error(409, "Git Repository is empty.")

    # ---- internals: auth --------------------------------------------------------------

    def _authenticate(self, headers: dict[str, str], op: _Operation) -> _Identity:
        auth = headers.get("authorization", "")
        scheme, _, credential = auth.partition(" ")
        scheme = scheme.lower()
        credential = credential.strip()
        if not auth:
            return _Identity("anonymous")
        if scheme not in ("bearer", "token") or not credential:
            raise _error(401, "Bad credentials")
        if credential.count(".") == 2 and not credential.startswith(("ghs_", "ghp_")):
            self._verify_jwt(credential)
            return _Identity("app")
        token = self.tokens.get(credential)
        if token is None or token.revoked or token.expires_at <= self.now():
            raise _error(401, "Bad credentials")
        if token.user is not None:
            return _Identity("user", token, token.user)
        return _Identity("installation", token, self.bot_login)

    def _verify_jwt(self, credential: str) -> None:
        try:
            header = jwt.get_unverified_header(credential)
            if header.get("alg") != "RS256":
                raise _error(401, "A JSON web token could not be decoded")
            # Only the signature through PyJWT: its claim checks insist on a string `iss`,
            # and GitHub accepts the App id as a number too. Claims are checked below.
            payload = jwt.PyJWS().decode(
                credential,
                self._public_key,  # type: ignore[arg-type]
                algorithms=["RS256"],
            )
            claims = json.loads(payload)
            if not isinstance(claims, dict):
                raise _error(401, "A JSON web token could not be decoded")
        except (jwt.PyJWTError, ValueError) as exc:
            raise _error(401, "A JSON web token could not be decoded") from exc
        if str(claims.get("iss")) != str(self.app_id):
            raise _error(401, f"Integration not found (iss {claims.get('iss')!r})")
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int | float) or not isinstance(exp, int | float):
            raise _error(401, "'Issued at' and 'Expiration time' claims are required")
        now = self.now()
        if exp - iat > 600:
            raise _error(
                401,
                "'Expiration time' claim ('exp') is too far in the future",
            )
        if exp <= now:
            raise _error(
                401,
                "'Expiration time' claim ('exp') must be a numeric value representing the "
                "future time at which the assertion expires",
            )
        if iat > now + 60:
            raise _error(
                401,
                "'Issued at' claim ('iat') must be an Integer representing the time that the "
                "assertion was issued",
            )

    def _require_app(self, req: _Request) -> None:
        if req.identity.kind != "app":
            raise _error(
                401,
                "A JSON web token could not be decoded"
                if req.identity.kind != "anonymous"
                else "Requires authentication",
            )

    def _access(self, req: _Request, permission: str, level: str) -> Repo:
        """The request's repo if the caller may `level` ("read"/"write") `permission` on it."""
        full = f"{req.params['owner']}/{req.params['repo']}"
        repo = self._repos.get(full)
        ident = req.identity
        if repo is None:
            raise _error(404, "Not Found")
        if ident.kind == "anonymous":
            if repo.private:
                raise _error(404, "Not Found")
            if level != "read":
                raise _error(401, "Requires authentication")
            return repo
        if ident.kind == "app":
            raise _error(
                403,
                "A JSON web token cannot be used here: this endpoint needs an installation "
                "access token",
            )
        token = ident.token
        assert token is not None
        if ident.kind == "user":
            role = repo.collaborators.get(token.user or "", {}).get("permission", "none")
            if repo.private and role == "none":
                raise _error(404, "Not Found")
            if level == "write" and PERMISSION_RANK[role] < PERMISSION_RANK["triage"]:
                raise _error(403, "Must have push access to this repository.")
            if level == "write" and permission == "contents" and PERMISSION_RANK[role] < 3:
                raise _error(403, "Must have push access to this repository.")
            return repo
        if token.installation_id != repo.installation_id or (
            token.repository_ids is not None and repo.id not in token.repository_ids
        ):
            raise _error(404, "Not Found")
        perms = permission.split("|")
        granted = [token.permissions.get(p, "none") for p in perms]
        ok = (
            any(g == "write" for g in granted)
            if level == "write"
            else any(g in ("read", "write") for g in granted)
        )
        if not ok:
            raise _error(403, NOT_ACCESSIBLE)
        return repo

    def _mint_token(self, installation_id: int, body: dict[str, Any]) -> dict[str, Any]:
        inst = self._installations.get(installation_id)
        if inst is None:
            raise _error(404, "Not Found")
        repos = [self._repos[n] for n in inst["repos"]]
        ids: frozenset[int] | None = None
        if "repositories" in body or "repository_ids" in body:
            by_name = {r.name: r for r in repos}
            by_id = {r.id: r for r in repos}
            chosen: dict[int, Repo] = {}
            for name in body.get("repositories", []):
                if name not in by_name:
                    raise _error(
                        422,
                        "There is at least one repository that does not exist or is not "
                        "accessible to the parent installation.",
                    )
                chosen[by_name[name].id] = by_name[name]
            for rid in body.get("repository_ids", []):
                if rid not in by_id:
                    raise _error(
                        422,
                        "There is at least one repository that does not exist or is not "
                        "accessible to the parent installation.",
                    )
                chosen[rid] = by_id[rid]
            if len(chosen) > 500:
                raise _error(422, "Too many repositories")
            ids = frozenset(chosen)
        permissions = dict(self.app_permissions)
        if body.get("permissions"):
            permissions = {"metadata": "read"}
            for name, level in body["permissions"].items():
                have = self.app_permissions.get(name)
                if have is None or (level == "write" and have != "write"):
                    raise _error(
                        422, "The permissions requested are not granted to this installation."
                    )
                permissions[name] = level
        token = Token(
            token="ghs_" + secrets.token_urlsafe(27).replace("-", "a").replace("_", "b"),
            installation_id=installation_id,
            repository_ids=ids,
            permissions=permissions,
            expires_at=self.now() + TOKEN_TTL,
        )
        self.tokens[token.token] = token
        out: dict[str, Any] = {
            "token": token.token,
            "expires_at": _now_iso(token.expires_at),
            "permissions": permissions,
            "repository_selection": "all" if ids is None else "selected",
        }
        if ids is not None:
            out["repositories"] = [self._repo_json(r) for r in repos if r.id in ids]
        return out

    # ---- internals: JSON shapes ------------------------------------------------------

    def _repo_json(self, repo: Repo, full: bool = False) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full_name}"
        web = f"https://github.com/{repo.full_name}"
        open_issues = sum(1 for i in repo.issues.values() if i["state"] == "open")
        out: dict[str, Any] = {
            "id": repo.id,
            "node_id": _node_id("R", repo.id),
            "name": repo.name,
            "full_name": repo.full_name,
            "owner": self._user_json(repo.owner),
            "private": repo.private,
            "html_url": web,
            "description": None,
            "fork": False,
            "url": api,
            "archive_url": f"{api}/{{archive_format}}{{/ref}}",
            "assignees_url": f"{api}/assignees{{/user}}",
            "blobs_url": f"{api}/git/blobs{{/sha}}",
            "branches_url": f"{api}/branches{{/branch}}",
            "collaborators_url": f"{api}/collaborators{{/collaborator}}",
            "comments_url": f"{api}/comments{{/number}}",
            "commits_url": f"{api}/commits{{/sha}}",
            "compare_url": f"{api}/compare/{{base}}...{{head}}",
            "contents_url": f"{api}/contents/{{+path}}",
            "contributors_url": f"{api}/contributors",
            "deployments_url": f"{api}/deployments",
            "downloads_url": f"{api}/downloads",
            "events_url": f"{api}/events",
            "forks_url": f"{api}/forks",
            "git_commits_url": f"{api}/git/commits{{/sha}}",
            "git_refs_url": f"{api}/git/refs{{/sha}}",
            "git_tags_url": f"{api}/git/tags{{/sha}}",
            "git_url": f"git://github.com/{repo.full_name}.git",
            "hooks_url": f"{api}/hooks",
            "issue_comment_url": f"{api}/issues/comments{{/number}}",
            "issue_events_url": f"{api}/issues/events{{/number}}",
            "issues_url": f"{api}/issues{{/number}}",
            "keys_url": f"{api}/keys{{/key_id}}",
            "labels_url": f"{api}/labels{{/name}}",
            "languages_url": f"{api}/languages",
            "merges_url": f"{api}/merges",
            "milestones_url": f"{api}/milestones{{/number}}",
            "notifications_url": f"{api}/notifications{{?since,all,participating}}",
            "pulls_url": f"{api}/pulls{{/number}}",
            "releases_url": f"{api}/releases{{/id}}",
            "ssh_url": f"git@github.com:{repo.full_name}.git",
            "stargazers_url": f"{api}/stargazers",
            "statuses_url": f"{api}/statuses/{{sha}}",
            "subscribers_url": f"{api}/subscribers",
            "subscription_url": f"{api}/subscription",
            "tags_url": f"{api}/tags",
            "teams_url": f"{api}/teams",
            "trees_url": f"{api}/git/trees{{/sha}}",
            "clone_url": f"{web}.git",
            "mirror_url": None,
            "svn_url": web,
            "homepage": None,
            "language": "Python",
            "forks": 0,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "watchers": 0,
            "size": sum(len(b) for b in repo.blobs.values()) // 1024,
            "default_branch": repo.default_branch,
            "open_issues": open_issues,
            "open_issues_count": open_issues,
            "is_template": False,
            "topics": [],
            "has_issues": True,
            "has_projects": True,
            "has_wiki": True,
            "has_pages": False,
            "has_downloads": True,
            "has_discussions": False,
            "archived": False,
            "disabled": False,
            "visibility": "private" if repo.private else "public",
            "pushed_at": repo.created_at,
            "created_at": repo.created_at,
            "updated_at": repo.created_at,
            "allow_forking": True,
            "web_commit_signoff_required": False,
            "license": None,
        }
        if full:
            out.update(
                {
                    "network_count": 0,
                    "subscribers_count": 0,
                    "allow_squash_merge": True,
                    "allow_merge_commit": True,
                    "allow_rebase_merge": True,
                    "allow_auto_merge": False,
                    "delete_branch_on_merge": False,
                }
            )
        return out

    def _integration_json(self) -> dict[str, Any]:
        return {
            "id": self.app_id,
            "slug": self.app_slug,
            "node_id": _node_id("A", self.app_id),
            "client_id": f"Iv23li{self.app_id:014d}",
            "owner": self._user_json(next(iter(self._installations.values()))["account"])
            if self._installations
            else self._user_json("frognano-org"),
            "name": self.app_name,
            "description": "Drafts pull requests for labelled issues.",
            "external_url": "https://example.invalid/frognano",
            "html_url": f"https://github.com/apps/{self.app_slug}",
            "created_at": self._created,
            "updated_at": self._created,
            "permissions": dict(self.app_permissions),
            "events": ["issues", "pull_request", "pull_request_review", "check_run"],
            "installations_count": len(self._installations),
        }

    def _installation_json(self, iid: int) -> dict[str, Any]:
        inst = self._installations[iid]
        account = self._user_json(inst["account"])
        return {
            "id": iid,
            "account": account,
            "repository_selection": "selected",
            "access_tokens_url": f"{self.base_url}/app/installations/{iid}/access_tokens",
            "repositories_url": f"{self.base_url}/installation/repositories",
            "html_url": f"https://github.com/organizations/{inst['account']}/settings/installations/{iid}",
            "app_id": self.app_id,
            "app_slug": self.app_slug,
            "target_id": account["id"],
            "target_type": account["type"],
            "permissions": dict(self.app_permissions),
            "events": ["issues", "pull_request", "pull_request_review", "check_run"],
            "created_at": inst["created_at"],
            "updated_at": inst["created_at"],
            "single_file_name": None,
            "has_multiple_single_files": False,
            "single_file_paths": [],
            "suspended_by": None,
            "suspended_at": None,
        }

    def _git_user_for(self, person: dict[str, str]) -> dict[str, Any] | None:
        login = self._emails.get(person["email"])
        return self._user_json(login) if login else None

    def _verification(self, c: dict[str, Any]) -> dict[str, Any]:
        if c["verified"]:
            return {
                "verified": True,
                "reason": "valid",
                "signature": "-----BEGIN PGP SIGNATURE-----\n\nfake\n-----END PGP SIGNATURE-----\n",
                "payload": c["payload"],
                "verified_at": c["committer"]["date"],
            }
        return {
            "verified": False,
            "reason": "unsigned",
            "signature": None,
            "payload": None,
            "verified_at": None,
        }

    def _git_commit_json(self, repo: Repo, sha: str) -> dict[str, Any]:
        c = repo.commits[sha]
        api = f"{self.base_url}/repos/{repo.full_name}"
        return {
            "sha": sha,
            "node_id": _node_id("C", sha),
            "url": f"{api}/git/commits/{sha}",
            "html_url": f"https://github.com/{repo.full_name}/commit/{sha}",
            "author": dict(c["author"]),
            "committer": dict(c["committer"]),
            "tree": {"sha": c["tree"], "url": f"{api}/git/trees/{c['tree']}"},
            "message": c["message"],
            "parents": [
                {
                    "sha": p,
                    "url": f"{api}/git/commits/{p}",
                    "html_url": f"https://github.com/{repo.full_name}/commit/{p}",
                }
                for p in c["parents"]
            ],
            "verification": self._verification(c),
        }

    def _commit_json(self, repo: Repo, sha: str) -> dict[str, Any]:
        """The `commit` schema (repos API: list commits, compare)."""
        c = repo.commits[sha]
        api = f"{self.base_url}/repos/{repo.full_name}"
        return {
            "url": f"{api}/commits/{sha}",
            "sha": sha,
            "node_id": _node_id("C", sha),
            "html_url": f"https://github.com/{repo.full_name}/commit/{sha}",
            "comments_url": f"{api}/commits/{sha}/comments",
            "commit": {
                "url": f"{api}/git/commits/{sha}",
                "author": dict(c["author"]),
                "committer": dict(c["committer"]),
                "message": c["message"],
                "comment_count": 0,
                "tree": {"sha": c["tree"], "url": f"{api}/git/trees/{c['tree']}"},
                "verification": self._verification(c),
            },
            "author": self._git_user_for(c["author"]),
            "committer": self._git_user_for(c["committer"]),
            "parents": [
                {
                    "sha": p,
                    "url": f"{api}/commits/{p}",
                    "html_url": f"https://github.com/{repo.full_name}/commit/{p}",
                }
                for p in c["parents"]
            ],
        }

    def _new_issue(self, number: int, title: str, body: str | None, user: str) -> dict[str, Any]:
        now = _now_iso(self.now())
        return {
            "id": self._next_id(),
            "number": number,
            "title": title,
            "body": body,
            "user": user,
            "state": "open",
            "labels": [],
            "comments": [],
            "reactions": [],
            "created_at": now,
            "updated_at": now,
            "closed_at": None,
        }

    def _label_json(self, repo: Repo, name: str) -> dict[str, Any]:
        label = repo.labels[name]
        return {
            "id": label["id"],
            "node_id": _node_id("LA", label["id"]),
            "url": f"{self.base_url}/repos/{repo.full_name}/labels/{urllib.parse.quote(name)}",
            "name": name,
            "description": "",  # the pull-request-simple schema does not allow null here
            "color": label["color"],
            "default": False,
        }

    def _rollup(self, repo: Repo, number: int, url: str) -> dict[str, Any]:
        counts = dict.fromkeys(REACTIONS, 0)
        for r in repo.issues[number]["reactions"]:
            counts[r["content"]] += 1
        return {"url": f"{url}/reactions", "total_count": sum(counts.values()), **counts}

    def _author_association(self, repo: Repo, login: str) -> str:
        if login == repo.owner:
            return "OWNER"
        if login in repo.collaborators:
            return "COLLABORATOR"
        return "NONE"

    def _issue_json(self, repo: Repo, number: int) -> dict[str, Any]:
        issue = repo.issues[number]
        api = f"{self.base_url}/repos/{repo.full_name}"
        url = f"{api}/issues/{number}"
        is_pull = number in repo.pulls
        kind = "pull" if is_pull else "issues"
        out: dict[str, Any] = {
            "id": issue["id"],
            "node_id": _node_id("I", issue["id"]),
            "url": url,
            "repository_url": api,
            "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "html_url": f"https://github.com/{repo.full_name}/{kind}/{number}",
            "number": number,
            "state": issue["state"],
            "state_reason": None,
            "title": issue["title"],
            "body": issue["body"],
            "user": self._user_json(issue["user"]),
            "labels": [self._label_json(repo, n) for n in issue["labels"]],
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "locked": False,
            "active_lock_reason": None,
            "comments": len(issue["comments"]),
            "closed_at": issue["closed_at"],
            "created_at": issue["created_at"],
            "updated_at": issue["updated_at"],
            "author_association": self._author_association(repo, issue["user"]),
            "reactions": self._rollup(repo, number, url),
        }
        if is_pull:
            out["pull_request"] = {
                "url": f"{api}/pulls/{number}",
                "html_url": f"https://github.com/{repo.full_name}/pull/{number}",
                "diff_url": f"https://github.com/{repo.full_name}/pull/{number}.diff",
                "patch_url": f"https://github.com/{repo.full_name}/pull/{number}.patch",
                "merged_at": None,
            }
        return out

    def _comment_json(self, repo: Repo, number: int, comment: dict[str, Any]) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full_name}"
        kind = "pull" if number in repo.pulls else "issues"
        return {
            "id": comment["id"],
            "node_id": _node_id("IC", comment["id"]),
            "url": f"{api}/issues/comments/{comment['id']}",
            "html_url": f"https://github.com/{repo.full_name}/{kind}/{number}#issuecomment-{comment['id']}",
            "issue_url": f"{api}/issues/{number}",
            "body": comment["body"],
            "user": self._user_json(comment["user"]),
            "created_at": comment["created_at"],
            "updated_at": comment["updated_at"],
            "author_association": self._author_association(repo, comment["user"]),
            "performed_via_github_app": self._integration_json()
            if comment["user"] == self.bot_login
            else None,
        }

    def _pull_head_sha(self, repo: Repo, pull: dict[str, Any]) -> str:
        if repo.issues[pull["number"]]["state"] == "open":
            sha = repo.branch_sha(pull["head"])
            if sha is not None:
                pull["head_sha"] = sha
        return str(pull["head_sha"])

    def _pull_json(self, repo: Repo, number: int, full: bool = True) -> dict[str, Any]:
        pull = repo.pulls[number]
        issue = repo.issues[number]
        api = f"{self.base_url}/repos/{repo.full_name}"
        url = f"{api}/pulls/{number}"
        web = f"https://github.com/{repo.full_name}/pull/{number}"
        head_sha = self._pull_head_sha(repo, pull)
        base_sha = repo.branch_sha(pull["base"]) or ""
        repo_json = self._repo_json(repo)
        owner = self._user_json(repo.owner)

        def side(ref: str, sha: str) -> dict[str, Any]:
            return {
                "label": f"{repo.owner}:{ref}",
                "ref": ref,
                "sha": sha,
                "user": owner,
                "repo": repo_json,
            }

        out: dict[str, Any] = {
            "url": url,
            "id": pull["id"],
            "node_id": _node_id("PR", pull["id"]),
            "html_url": web,
            "diff_url": f"{web}.diff",
            "patch_url": f"{web}.patch",
            "issue_url": f"{api}/issues/{number}",
            "commits_url": f"{url}/commits",
            "review_comments_url": f"{url}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{api}/issues/{number}/comments",
            "statuses_url": f"{api}/statuses/{head_sha}",
            "number": number,
            "state": issue["state"],
            "locked": False,
            "title": issue["title"],
            "user": self._user_json(issue["user"]),
            "body": issue["body"],
            "labels": [self._label_json(repo, n) for n in issue["labels"]],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": issue["created_at"],
            "updated_at": issue["updated_at"],
            "closed_at": issue["closed_at"],
            "merged_at": None,
            "merge_commit_sha": None,
            "assignee": None,
            "assignees": [],
            "requested_reviewers": [self._user_json(u) for u in pull["requested_reviewers"]],
            "requested_teams": [],
            "head": side(pull["head"], head_sha),
            "base": side(pull["base"], base_sha),
            "_links": {
                "self": {"href": url},
                "html": {"href": web},
                "issue": {"href": f"{api}/issues/{number}"},
                "comments": {"href": f"{api}/issues/{number}/comments"},
                "review_comments": {"href": f"{url}/comments"},
                "review_comment": {"href": f"{api}/pulls/comments{{/number}}"},
                "commits": {"href": f"{url}/commits"},
                "statuses": {"href": f"{api}/statuses/{head_sha}"},
            },
            "author_association": self._author_association(repo, issue["user"]),
            "auto_merge": None,
            "draft": pull["draft"],
        }
        if full:
            ahead = self._ahead(repo, base_sha, head_sha)
            out.update(
                {
                    "merged": False,
                    "mergeable": None,
                    "rebaseable": None,
                    "mergeable_state": "unknown",
                    "merged_by": None,
                    "comments": len(issue["comments"]),
                    "review_comments": 0,
                    "maintainer_can_modify": pull["maintainer_can_modify"],
                    "commits": len(ahead),
                    "additions": 0,
                    "deletions": 0,
                    "changed_files": len(self._diff(repo, base_sha, head_sha)) if base_sha else 0,
                }
            )
        return out

    def _review_json(self, repo: Repo, number: int, review: dict[str, Any]) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full_name}"
        web = f"https://github.com/{repo.full_name}/pull/{number}"
        return {
            "id": review["id"],
            "node_id": _node_id("PRR", review["id"]),
            "user": self._user_json(review["user"]),
            "body": review["body"],
            "state": review["state"],
            "html_url": f"{web}#pullrequestreview-{review['id']}",
            "pull_request_url": f"{api}/pulls/{number}",
            "_links": {
                "html": {"href": f"{web}#pullrequestreview-{review['id']}"},
                "pull_request": {"href": f"{api}/pulls/{number}"},
            },
            "submitted_at": review["submitted_at"],
            "commit_id": review["commit_id"],
            "author_association": self._author_association(repo, review["user"]),
        }

    def _check_run_json(self, repo: Repo, run: dict[str, Any]) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full_name}"
        pulls = []
        for number, pull in repo.pulls.items():
            if (
                repo.issues[number]["state"] == "open"
                and self._pull_head_sha(repo, pull) == run["head_sha"]
            ):
                base_sha = repo.branch_sha(pull["base"]) or ""
                pulls.append(
                    {
                        "id": pull["id"],
                        "number": number,
                        "url": f"{api}/pulls/{number}",
                        "head": {
                            "ref": pull["head"],
                            "sha": run["head_sha"],
                            "repo": {"id": repo.id, "url": api, "name": repo.name},
                        },
                        "base": {
                            "ref": pull["base"],
                            "sha": base_sha,
                            "repo": {"id": repo.id, "url": api, "name": repo.name},
                        },
                    }
                )
        output = run["output"]
        return {
            "id": run["id"],
            "node_id": _node_id("CR", run["id"]),
            "head_sha": run["head_sha"],
            "external_id": run["external_id"],
            "url": f"{api}/check-runs/{run['id']}",
            "html_url": f"https://github.com/{repo.full_name}/runs/{run['id']}",
            "details_url": run["details_url"],
            "status": run["status"],
            "conclusion": run["conclusion"],
            "started_at": run["started_at"],
            "completed_at": run["completed_at"],
            "output": {
                "title": output.get("title"),
                "summary": output.get("summary"),
                "text": output.get("text"),
                "annotations_count": len(run["annotations"]),
                "annotations_url": f"{api}/check-runs/{run['id']}/annotations",
            },
            "name": run["name"],
            "check_suite": {"id": run["check_suite_id"]},
            "app": self._integration_json(),
            "pull_requests": pulls,
        }

    # ---- internals: diffs ------------------------------------------------------------

    def _ahead(self, repo: Repo, base: str, head: str) -> list[str]:
        """Commits reachable from head but not base, oldest first."""
        if not base or not head:
            return []
        base_set = set(self._ancestors(repo, base))
        return [s for s in self._ancestors(repo, head) if s not in base_set][::-1]

    def _diff(self, repo: Repo, base: str, head: str) -> list[dict[str, Any]]:
        a = self._flatten(repo, repo.commits[base]["tree"])
        b = self._flatten(repo, repo.commits[head]["tree"])
        files = []
        for path in sorted(set(a) | set(b)):
            if a.get(path) == b.get(path):
                continue
            status = "added" if path not in a else "removed" if path not in b else "modified"
            sha = (b.get(path) or a[path])[2]
            files.append({"filename": path, "status": status, "sha": sha})
        return files

    # ---- request handling ------------------------------------------------------------

    def _route(self, method: str, path: str) -> tuple[_Operation, dict[str, str]] | None:
        for op in self._spec.operations:
            if op.method != method:
                continue
            m = op.regex.match(path)
            if m:
                return op, {k: urllib.parse.unquote(v) for k, v in m.groupdict().items()}
        return None

    def _validate_request(  # noqa: PLR0912 - query and body rules side by side
        self, op: _Operation, path: str, query: dict[str, list[str]], body: Any, has_body: bool
    ) -> str | None:
        """Returns the 422 message for the first violation, after recording every one."""
        problems: list[tuple[str, str]] = []
        doc = self._spec.document
        item = doc["paths"][op.template]
        params = [
            self._spec.resolve(p)
            for p in [*item.get("parameters", []), *op.op.get("parameters", [])]
        ]
        for p in params:
            if p["in"] != "query" or p["name"] not in query:
                continue
            schema = p.get("schema", {})
            raw = query[p["name"]][-1]
            value: Any = raw
            kind = schema.get("type")
            kinds = kind if isinstance(kind, list) else [kind]
            try:
                if "integer" in kinds:
                    value = int(raw)
                elif "boolean" in kinds:
                    value = {"true": True, "false": False}[raw]
            except (ValueError, KeyError):
                problems.append(("query", f"{p['name']}: {raw!r} is not of type {kind!r}"))
                continue
            errors = list(Draft202012Validator(schema).iter_errors(value))
            if errors:
                problems.append(("query", f"{p['name']}: {best_match(errors).message}"))
        rb = op.op.get("requestBody")
        if rb is not None and "application/json" in rb.get("content", {}):
            if not has_body:
                if rb.get("required"):
                    problems.append(("body", "a JSON request body is required"))
            else:
                validator = self._spec.validator(
                    op.pointer + "/requestBody/content/application~1json/schema"
                )
                errors = sorted(validator.iter_errors(body), key=lambda e: list(e.path))
                if errors:
                    best = best_match(errors)
                    where = "/".join(str(x) for x in best.absolute_path) or "(root)"
                    problems.append(("body", f"For '{where}', {best.message}"))
        elif has_body and body is not None and op.method in ("GET", "DELETE"):
            pass  # GitHub ignores bodies on these
        for where, message in problems:
            self.validation_errors.append(
                ValidationFailure(op.method, path, op.operation_id, where, message)
            )
        if problems:
            return "Invalid request.\n\n" + "\n".join(m for _, m in problems)
        return None

    def _validate_response(self, op: _Operation, path: str, resp: _Response) -> None:
        if not self.validate_responses or resp.body is None:
            return
        responses = op.op["responses"]
        entry = responses.get(str(resp.status))
        if entry is None:
            if 200 <= resp.status < 300:
                self.response_errors.append(
                    ValidationFailure(
                        op.method, path, op.operation_id, "response", f"undocumented {resp.status}"
                    )
                )
            return
        pointer = op.pointer + _pointer("responses", str(resp.status))
        entry = self._spec.resolve(entry)
        if "$ref" in responses[str(resp.status)]:
            pointer = responses[str(resp.status)]["$ref"][1:]
        if "application/json" not in entry.get("content", {}):
            return
        validator = self._spec.validator(pointer + "/content/application~1json/schema")
        for err in validator.iter_errors(resp.body):
            where = "/".join(str(x) for x in err.absolute_path) or "(root)"
            self.response_errors.append(
                ValidationFailure(
                    op.method, path, op.operation_id, "response", f"{where}: {err.message}"
                )
            )

    def handle(
        self, method: str, raw_path: str, headers: dict[str, str], raw_body: bytes
    ) -> _Response:
        parsed = urllib.parse.urlsplit(raw_path)
        path = parsed.path
        query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        body: Any = None
        bad_json = False
        if raw_body:
            try:
                body = json.loads(raw_body)
            except ValueError:
                bad_json = True
        record = Recorded(method, path, query, headers, body)
        with self._lock:
            self.requests.append(record)
            try:
                resp = self._dispatch(record, has_body=bool(raw_body), bad_json=bad_json)
            except HTTPError as exc:
                resp = _Response(exc.status, exc.body, exc.headers)
            except Exception as exc:  # a bug in the fake: answer 500 and make it visible
                self.server_errors.append(traceback.format_exc())
                resp = _Response(500, {"message": f"fake GitHub failed: {exc!r}"})
            record.status = resp.status
        return resp

    def _dispatch(
        self,
        record: Recorded,
        *,
        has_body: bool,
        bad_json: bool,
    ) -> _Response:
        method, path, query, headers, body = (
            record.method,
            record.path,
            record.query,
            record.headers,
            record.json,
        )
        if path.startswith("/_codeload/"):
            return self._codeload(path, query)
        routed = self._route(method, path)
        if routed is None:
            self._maybe_fault(method, path)
            raise _error(404, "Not Found")
        op, params = routed
        record.operation_id = op.operation_id
        if bad_json:
            raise HTTPError(400, {"message": "Problems parsing JSON", "documentation_url": DOCS})
        invalid = self._validate_request(op, path, query, body, has_body)
        if invalid is not None:
            raise HTTPError(
                422,
                {
                    "message": invalid,
                    "documentation_url": op.op.get("externalDocs", {}).get("url", DOCS),
                    "status": "422",
                },
            )
        self._maybe_fault(method, path)
        identity = self._authenticate(headers, op)
        req = _Request(method, path, query, headers, body, params, op, identity)
        handler: Callable[[_Request], _Response] = getattr(
            self, "_op_" + op.operation_id.replace("/", "__").replace("-", "_")
        )
        resp = handler(req)
        self._validate_response(op, path, resp)
        return resp

    def _maybe_fault(self, method: str, path: str) -> None:
        for fault in self._faults:
            if fault.method in ("*", method) and fault.regex.search(path):
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
                raise HTTPError(fault.status, copy.deepcopy(fault.body), dict(fault.headers))

    def _paginate(self, req: _Request, items: list[Any]) -> _Response:
        try:
            per_page = int(req.query.get("per_page", ["30"])[-1])
            page = int(req.query.get("page", ["1"])[-1])
        except ValueError:
            per_page, page = 30, 1
        per_page = max(1, min(per_page, 100))
        page = max(page, 1)
        chunk = items[(page - 1) * per_page : page * per_page]
        last = max(1, -(-len(items) // per_page))
        headers = {}
        if page < last:

            def link(n: int) -> str:
                q = {k: v[-1] for k, v in req.query.items()}
                q["page"] = str(n)
                return f"{self.base_url}{req.path}?{urllib.parse.urlencode(q)}"

            headers["Link"] = f'<{link(page + 1)}>; rel="next", <{link(last)}>; rel="last"'
        return _Response(200, chunk, headers)

    def _check_body_size(self, resource: str, body: str | None) -> None:
        if body is not None and len(body) > MAX_BODY:
            raise _validation_failed(
                resource, "body", "custom", f"body is too long (maximum is {MAX_BODY} characters)"
            )

    def _issue_or_404(self, repo: Repo, number: str) -> dict[str, Any]:
        if not number.isdigit() or int(number) not in repo.issues:
            raise _error(404, "Not Found")
        return repo.issues[int(number)]

    def _pull_or_404(self, repo: Repo, number: str) -> dict[str, Any]:
        if not number.isdigit() or int(number) not in repo.pulls:
            raise _error(404, "Not Found")
        return repo.pulls[int(number)]

    # ---- operations: apps -------------------------------------------------------------

    def _op_apps__get_authenticated(self, req: _Request) -> _Response:
        self._require_app(req)
        return _Response(200, self._integration_json())

    def _op_apps__get_repo_installation(self, req: _Request) -> _Response:
        self._require_app(req)
        repo = self._repos.get(f"{req.params['owner']}/{req.params['repo']}")
        if repo is None:
            raise _error(404, "Not Found")
        return _Response(200, self._installation_json(repo.installation_id))

    def _op_apps__create_installation_access_token(self, req: _Request) -> _Response:
        self._require_app(req)
        iid = req.params["installation_id"]
        if not iid.isdigit():
            raise _error(404, "Not Found")
        return _Response(201, self._mint_token(int(iid), req.body or {}))

    def _op_apps__revoke_installation_access_token(self, req: _Request) -> _Response:
        if req.identity.kind != "installation" or req.identity.token is None:
            raise _error(401, "Bad credentials")
        req.identity.token.revoked = True
        return _Response(204)

    # ---- operations: repos --------------------------------------------------------------

    def _op_repos__get(self, req: _Request) -> _Response:
        repo = self._access(req, "metadata", "read")
        out = self._repo_json(repo, full=True)
        token = req.identity.token
        if token is not None and token.user is None:
            out["permissions"] = {
                "admin": False,
                "maintain": False,
                "push": token.permissions.get("contents") == "write",
                "triage": token.permissions.get("issues") == "write",
                "pull": True,
            }
        return _Response(200, out)

    def _op_repos__get_collaborator_permission_level(self, req: _Request) -> _Response:
        repo = self._access(req, "metadata", "read")
        login = req.params["username"]
        collab = repo.collaborators.get(login)
        if login == repo.owner:
            collab = {"permission": "admin", "role_name": "admin"}
        if collab is None:
            if login not in self._users:
                raise _error(404, "Not Found")
            level = "none" if repo.private else "read"
            collab = {"permission": level, "role_name": level}
        role = collab["permission"]
        rank = PERMISSION_RANK[role]
        user = self._user_json(login)
        user.update(
            {
                "permissions": {
                    "pull": rank >= 1,
                    "triage": rank >= 2,
                    "push": rank >= 3,
                    "maintain": rank >= 4,
                    "admin": rank >= 5,
                },
                "role_name": collab["role_name"],
            }
        )
        return _Response(
            200,
            {"permission": LEGACY_PERMISSION[role], "role_name": collab["role_name"], "user": user},
        )

    def _op_repos__download_tarball_archive(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        sha = self._resolve_commitish(repo, req.params["ref"])
        if sha is None:
            raise _error(404, "Not Found")
        token = secrets.token_hex(16)
        self._download_tokens[token] = (repo.full_name, sha)
        location = f"{self.base_url}/_codeload/{repo.full_name}/legacy.tar.gz/{sha}?token={token}"
        return _Response(302, None, {"Location": location})

    def _codeload(self, path: str, query: dict[str, list[str]]) -> _Response:
        token = query.get("token", [""])[-1]
        target = self._download_tokens.pop(token, None)
        if target is None:
            raise _error(404, "Not Found")
        full_name, sha = target
        top = f"{full_name.replace('/', '-')}-{sha[:7]}"
        return _Response(
            200,
            raw=self.tarball(full_name, sha),
            headers={
                "Content-Type": "application/x-gzip",
                "Content-Disposition": f"attachment; filename={top}.tar.gz",
            },
        )

    def tarball(self, full_name: str, ref_or_sha: str) -> bytes:
        """The gzip tarball GitHub would serve for this commit (folder `owner-repo-sha7/`)."""
        with self._lock:
            repo = self.repo(full_name)
            sha = self._resolve_commitish(repo, ref_or_sha)
            if sha is None:
                raise KeyError(ref_or_sha)
            commit = repo.commits[sha]
            mtime = int(
                datetime.strptime(commit["committer"]["date"], "%Y-%m-%dT%H:%M:%SZ")
                .replace(tzinfo=UTC)
                .timestamp()
            )
            top = f"{repo.owner}-{repo.name}-{sha[:7]}"
            buf = io.BytesIO()
            with tarfile.open(
                fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": sha}
            ) as tar:
                dirs = {top}
                info = tarfile.TarInfo(top)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o775, mtime
                tar.addfile(info)
                for path, (mode, kind, obj) in sorted(self._flatten(repo, commit["tree"]).items()):
                    parts = path.split("/")
                    for i in range(1, len(parts)):
                        d = "/".join([top, *parts[:i]])
                        if d not in dirs:
                            dirs.add(d)
                            dinfo = tarfile.TarInfo(d)
                            dinfo.type, dinfo.mode, dinfo.mtime = tarfile.DIRTYPE, 0o775, mtime
                            tar.addfile(dinfo)
                    info = tarfile.TarInfo(f"{top}/{path}")
                    info.mtime = mtime
                    if kind == "commit":  # submodule: an empty folder, as git archive does
                        info.type, info.mode = tarfile.DIRTYPE, 0o775
                        tar.addfile(info)
                    elif mode == "120000":
                        info.type, info.mode = tarfile.SYMTYPE, 0o777
                        info.linkname = repo.blobs[obj].decode()
                        tar.addfile(info)
                    else:
                        data = repo.blobs[obj]
                        info.size, info.mode = len(data), 0o775 if mode == "100755" else 0o664
                        tar.addfile(info, io.BytesIO(data))
            return gzip.compress(buf.getvalue(), mtime=0)

    def _op_repos__list_commits(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        ref = req.query.get("sha", [repo.default_branch])[-1]
        sha = self._resolve_commitish(repo, ref)
        if sha is None:
            raise _error(404, "No commit found for SHA: " + ref)
        return self._paginate(req, [self._commit_json(repo, s) for s in self._ancestors(repo, sha)])

    def _op_repos__get_commit(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        sha = self._resolve_commitish(repo, req.params["ref"])
        if sha is None:
            raise _validation_failed(
                "Commit", "sha", "invalid", "No commit found for SHA: " + req.params["ref"]
            )
        out = self._commit_json(repo, sha)
        parents = repo.commits[sha]["parents"]
        files = self._compare_files(repo, parents[0], sha) if parents else []
        out["stats"] = {"total": 0, "additions": 0, "deletions": 0}
        out["files"] = files
        return _Response(200, out)

    def _compare_files(self, repo: Repo, base: str, head: str) -> list[dict[str, Any]]:
        api = f"{self.base_url}/repos/{repo.full_name}"
        web = f"https://github.com/{repo.full_name}"
        return [
            {
                "sha": f["sha"],
                "filename": f["filename"],
                "status": f["status"],
                "additions": 0,
                "deletions": 0,
                "changes": 0,
                "blob_url": f"{web}/blob/{head}/{f['filename']}",
                "raw_url": f"{web}/raw/{head}/{f['filename']}",
                "contents_url": f"{api}/contents/{f['filename']}?ref={head}",
            }
            for f in self._diff(repo, base, head)
        ]

    def _op_repos__compare_commits_with_basehead(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        basehead = req.params["basehead"]
        if "..." not in basehead:
            raise _error(404, "Not Found")
        base_ref, head_ref = basehead.split("...", 1)
        base, head = (
            self._resolve_commitish(repo, base_ref),
            self._resolve_commitish(repo, head_ref),
        )
        if base is None or head is None:
            raise _error(404, "Not Found")
        head_anc = self._ancestors(repo, head)
        base_anc = self._ancestors(repo, base)
        merge_base = next((s for s in head_anc if s in set(base_anc)), base)
        ahead = self._ahead(repo, base, head)
        behind = self._ahead(repo, head, base)
        status = (
            "identical"
            if base == head
            else "ahead"
            if not behind
            else "behind"
            if not ahead
            else "diverged"
        )
        api = f"{self.base_url}/repos/{repo.full_name}"
        web = f"https://github.com/{repo.full_name}"
        files = self._compare_files(repo, merge_base, head)
        return _Response(
            200,
            {
                "url": f"{api}/compare/{basehead}",
                "html_url": f"{web}/compare/{basehead}",
                "permalink_url": f"{web}/compare/{repo.owner}:{base[:7]}...{repo.owner}:{head[:7]}",
                "diff_url": f"{web}/compare/{basehead}.diff",
                "patch_url": f"{web}/compare/{basehead}.patch",
                "base_commit": self._commit_json(repo, base),
                "merge_base_commit": self._commit_json(repo, merge_base),
                "status": status,
                "ahead_by": len(ahead),
                "behind_by": len(behind),
                "total_commits": len(ahead),
                "commits": [self._commit_json(repo, s) for s in ahead],
                "files": files,
            },
        )

    # ---- operations: git data -----------------------------------------------------------

    def _ref_json(self, repo: Repo, ref: str) -> dict[str, Any]:
        sha = repo.refs[ref]
        api = f"{self.base_url}/repos/{repo.full_name}"
        return {
            "ref": ref,
            "node_id": _node_id("REF", ref),
            "url": f"{api}/git/{ref}",
            "object": {"type": "commit", "sha": sha, "url": f"{api}/git/commits/{sha}"},
        }

    def _op_git__get_ref(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        ref = "refs/" + req.params["ref"]
        if ref not in repo.refs:
            raise _error(404, "Not Found")
        return _Response(200, self._ref_json(repo, ref))

    def _op_git__create_ref(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "write")
        ref, sha = req.body["ref"], req.body["sha"]
        if not ref.startswith("refs/") or ref.count("/") < 2 or ref.endswith("/") or ".." in ref:
            raise _error(422, f"{ref} is not a valid ref name.")
        if sha not in repo.commits:
            raise _error(422, "Object does not exist")
        if ref in repo.refs:
            raise _error(422, "Reference already exists")
        repo.refs[ref] = sha
        return _Response(
            201, self._ref_json(repo, ref), {"Location": self._ref_json(repo, ref)["url"]}
        )

    def _op_git__update_ref(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "write")
        self._require_nonempty(repo)
        ref = "refs/" + req.params["ref"]
        sha = req.body["sha"]
        if ref not in repo.refs:
            raise _error(422, "Reference does not exist")
        if sha not in repo.commits:
            raise _error(422, "Object does not exist")
        if not req.body.get("force", False) and repo.refs[ref] not in self._ancestors(repo, sha):
            raise _error(422, "Update is not a fast forward")
        repo.refs[ref] = sha
        return _Response(200, self._ref_json(repo, ref))

    def _op_git__get_commit(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        sha = req.params["commit_sha"]
        if sha not in repo.commits:
            raise _error(404, "Not Found")
        return _Response(200, self._git_commit_json(repo, sha))

    def _op_git__create_commit(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "write")
        body = req.body
        if body["tree"] not in repo.trees:
            raise _error(422, "Tree SHA does not exist")
        for parent in body.get("parents", []):
            if parent not in repo.commits:
                raise _error(422, "Parent SHA does not exist or is not a commit object")
        now = _now_iso(self.now())
        author_in, committer_in = body.get("author"), body.get("committer")
        custom = author_in is not None or committer_in is not None or "signature" in body
        actor = self._actor(req)
        if author_in is None:
            info = self._user(actor)
            default = {
                "name": actor,
                "email": f"{info['id']}+{actor}@users.noreply.github.com",
                "date": now,
            }
        author = {**(default if author_in is None else author_in)}
        author.setdefault("date", now)
        if committer_in is not None:
            committer = {**committer_in}
            committer.setdefault("date", now)
        elif author_in is not None:
            committer = {**author, "date": now}
        else:
            committer = {"name": "GitHub", "email": "noreply@github.com", "date": now}
        for person in (author, committer):
            person["date"] = _normalise_date(person["date"])
        signed = None if custom or req.identity.kind != "installation" else self.bot_login
        sha = self._store_commit(
            repo,
            body["message"],
            body["tree"],
            list(body.get("parents", [])),
            author=author,
            committer=committer,
            signed_by=signed,
        )
        out = self._git_commit_json(repo, sha)
        return _Response(201, out, {"Location": out["url"]})

    def _op_git__create_blob(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "write")
        encoding = req.body.get("encoding", "utf-8")
        content = req.body["content"]
        if encoding == "base64":
            try:
                data = base64.b64decode(content, validate=False)
            except ValueError as exc:
                raise _error(422, "Invalid base64 content") from exc
        elif encoding in ("utf-8", "utf8"):
            data = content.encode()
        else:
            raise _validation_failed(
                "Blob", "encoding", "invalid", f"encoding {encoding} is not supported"
            )
        sha = self._store_blob(repo, data)
        url = f"{self.base_url}/repos/{repo.full_name}/git/blobs/{sha}"
        return _Response(201, {"url": url, "sha": sha}, {"Location": url})

    def _op_git__get_blob(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        sha = req.params["file_sha"]
        if sha not in repo.blobs:
            raise _error(404, "Not Found")
        data = repo.blobs[sha]
        encoded = base64.encodebytes(data).decode()
        return _Response(
            200,
            {
                "sha": sha,
                "node_id": _node_id("B", sha),
                "size": len(data),
                "url": f"{self.base_url}/repos/{repo.full_name}/git/blobs/{sha}",
                "content": encoded,
                "encoding": "base64",
            },
        )

    def _tree_json(self, repo: Repo, sha: str, recursive: bool) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full_name}"
        entries: list[dict[str, Any]] = []

        def walk(tree_sha: str, prefix: str) -> None:
            for e in repo.trees[tree_sha]:
                item: dict[str, Any] = {
                    "path": prefix + e["name"],
                    "mode": e["mode"],
                    "type": e["type"],
                    "sha": e["sha"],
                }
                if e["type"] == "blob":
                    item["size"] = len(repo.blobs[e["sha"]])
                    item["url"] = f"{api}/git/blobs/{e['sha']}"
                elif e["type"] == "tree":
                    item["url"] = f"{api}/git/trees/{e['sha']}"
                entries.append(item)
                if recursive and e["type"] == "tree":
                    walk(e["sha"], prefix + e["name"] + "/")

        walk(sha, "")
        return {"sha": sha, "url": f"{api}/git/trees/{sha}", "tree": entries, "truncated": False}

    def _op_git__get_tree(self, req: _Request) -> _Response:
        repo = self._access(req, "contents", "read")
        self._require_nonempty(repo)
        ref = req.params["tree_sha"]
        sha: str | None = ref if ref in repo.trees else None
        if sha is None:
            commit = self._resolve_commitish(repo, ref)
            sha = repo.commits[commit]["tree"] if commit else None
        if sha is None:
            raise _error(404, "Not Found")
        recursive = bool(req.query.get("recursive", [""])[-1])
        return _Response(200, self._tree_json(repo, sha, recursive))

    def _op_git__create_tree(self, req: _Request) -> _Response:  # noqa: PLR0912 - one rule a branch
        repo = self._access(req, "contents", "write")
        base = req.body.get("base_tree")
        flat: dict[str, tuple[str, str, str]] = {}
        if base is not None:
            if base not in repo.trees:
                commit = repo.commits.get(base)
                if commit is None:
                    raise _error(422, "Invalid tree info (base_tree does not exist)")
                base = commit["tree"]
            flat = self._flatten(repo, base)
        expected_type = {
            "100644": "blob",
            "100755": "blob",
            "120000": "blob",
            "040000": "tree",
            "160000": "commit",
        }
        for i, entry in enumerate(req.body["tree"]):
            path, mode, kind = entry.get("path"), entry.get("mode"), entry.get("type")
            where = f"tree.{i}"
            if not path or path.startswith("/") or path.endswith("/") or "//" in path:
                raise _error(422, f"{where}.path is invalid: {path!r}")
            if mode is None or kind is None:
                raise _error(422, f"{where} must have mode and type")
            if expected_type[mode] != kind:
                raise _error(422, f"{where}.type {kind} does not match mode {mode}")
            has_sha, has_content = "sha" in entry, "content" in entry
            if has_sha and has_content:
                raise _error(422, f"{where} may contain either sha or content, not both")
            if not has_sha and not has_content:
                raise _error(422, f"{where} must contain sha or content")
            if has_sha and entry["sha"] is None:
                removed = [p for p in flat if p == path or p.startswith(path + "/")]
                if not removed:
                    raise _error(422, f"{where}.path '{path}' does not exist in base_tree")
                for p in removed:
                    del flat[p]
                continue
            # a new entry replaces whatever was at the path or under it
            for p in [p for p in flat if p == path or p.startswith(path + "/")]:
                del flat[p]
            for parent in _parents(path):
                if parent in flat:
                    raise _error(422, f"{where}.path '{path}' is below the file '{parent}'")
            if has_content:
                if kind != "blob":
                    raise _error(422, f"{where}: content is only valid for blobs")
                flat[path] = (mode, "blob", self._store_blob(repo, entry["content"].encode()))
            elif kind == "blob":
                if entry["sha"] not in repo.blobs:
                    raise _error(422, f"{where}.sha {entry['sha']} is not a valid blob")
                flat[path] = (mode, "blob", entry["sha"])
            elif kind == "tree":
                if entry["sha"] not in repo.trees:
                    raise _error(422, f"{where}.sha {entry['sha']} is not a valid tree")
                for sub, value in self._flatten(repo, entry["sha"]).items():
                    flat[f"{path}/{sub}"] = value
            else:  # submodule
                if not re.fullmatch(r"[0-9a-f]{40}", entry["sha"]):
                    raise _error(422, f"{where}.sha is not a valid commit SHA")
                flat[path] = (mode, "commit", entry["sha"])
        sha = self._build_tree(repo, flat)
        out = self._tree_json(repo, sha, recursive=False)
        return _Response(201, out, {"Location": out["url"]})

    # ---- operations: pulls -------------------------------------------------------------

    def _op_pulls__list(self, req: _Request) -> _Response:
        repo = self._access(req, "pull_requests", "read")
        state = req.query.get("state", ["open"])[-1]
        head = req.query.get("head", [None])[-1]
        base = req.query.get("base", [None])[-1]
        out = []
        for number in sorted(repo.pulls, reverse=True):
            pull, issue = repo.pulls[number], repo.issues[number]
            if state != "all" and issue["state"] != state:
                continue
            if head is not None:
                owner, _, branch = head.partition(":")
                if not branch:
                    owner, branch = repo.owner, head  # GitHub ignores a bare branch; be lenient
                if owner != repo.owner or branch != pull["head"]:
                    continue
            if base is not None and pull["base"] != base:
                continue
            out.append(self._pull_json(repo, number, full=False))
        return self._paginate(req, out)

    def _op_pulls__create(self, req: _Request) -> _Response:
        repo = self._access(req, "pull_requests", "write")
        body = req.body
        head, base = body["head"], body["base"]
        if ":" in head:
            owner, _, head = head.partition(":")
            if owner != repo.owner:
                raise _validation_failed("PullRequest", "head", "invalid")
        if "title" not in body and "issue" not in body:
            raise _validation_failed("PullRequest", "title", "missing_field")
        self._check_body_size("PullRequest", body.get("body"))
        head_sha, base_sha = repo.branch_sha(head), repo.branch_sha(base)
        if head_sha is None:
            raise _validation_failed("PullRequest", "head", "invalid")
        if base_sha is None:
            raise _validation_failed("PullRequest", "base", "invalid")
        if body.get("draft") and not repo.allow_drafts:
            raise _error(422, "Draft pull requests are not supported in this repository.")
        for number, pull in repo.pulls.items():
            if (
                pull["head"] == head
                and pull["base"] == base
                and repo.issues[number]["state"] == "open"
            ):
                raise _validation_failed(
                    "PullRequest",
                    "",
                    "custom",
                    f"A pull request already exists for {repo.owner}:{head}.",
                )
        if not self._ahead(repo, base_sha, head_sha):
            raise _validation_failed(
                "PullRequest", "", "custom", f"No commits between {base} and {head}"
            )
        number = max([0, *repo.issues]) + 1
        actor = self._actor(req)
        issue = self._new_issue(number, body.get("title", ""), body.get("body"), actor)
        repo.issues[number] = issue
        repo.pulls[number] = {
            "id": self._next_id(),
            "number": number,
            "head": head,
            "base": base,
            "head_sha": head_sha,
            "draft": bool(body.get("draft", False)),
            "maintainer_can_modify": bool(body.get("maintainer_can_modify", False)),
            "requested_reviewers": [],
        }
        out = self._pull_json(repo, number)
        return _Response(201, out, {"Location": out["url"]})

    def _op_pulls__get(self, req: _Request) -> _Response:
        repo = self._access(req, "pull_requests", "read")
        self._pull_or_404(repo, req.params["pull_number"])
        return _Response(200, self._pull_json(repo, int(req.params["pull_number"])))

    def _op_pulls__list_commits(self, req: _Request) -> _Response:
        repo = self._access(req, "pull_requests", "read")
        pull = self._pull_or_404(repo, req.params["pull_number"])
        head = self._pull_head_sha(repo, pull)
        base = repo.branch_sha(pull["base"]) or ""
        # Oldest first, as GitHub lists them.
        return self._paginate(
            req, [self._commit_json(repo, s) for s in self._ahead(repo, base, head)]
        )

    def _op_pulls__update(self, req: _Request) -> _Response:
        repo = self._access(req, "pull_requests", "write")
        pull = self._pull_or_404(repo, req.params["pull_number"])
        number = int(req.params["pull_number"])
        issue = repo.issues[number]
        body = req.body
        self._check_body_size("PullRequest", body.get("body"))
        if "base" in body:
            if repo.branch_sha(body["base"]) is None:
                raise _validation_failed("PullRequest", "base", "invalid")
            pull["base"] = body["base"]
        for key in ("title", "body"):
            if key in body:
                issue[key] = body[key]
        if "maintainer_can_modify" in body:
            pull["maintainer_can_modify"] = body["maintainer_can_modify"]
        if "state" in body and body["state"] != issue["state"]:
            self._pull_head_sha(repo, pull)  # freeze the head at closing time
            issue["state"] = body["state"]
            issue["closed_at"] = _now_iso(self.now()) if body["state"] == "closed" else None
        issue["updated_at"] = _now_iso(self.now())
        return _Response(200, self._pull_json(repo, number))

    def _op_pulls__request_reviewers(self, req: _Request) -> _Response:
        repo = self._access(req, "pull_requests", "write")
        pull = self._pull_or_404(repo, req.params["pull_number"])
        number = int(req.params["pull_number"])
        reviewers = req.body.get("reviewers", [])
        teams = req.body.get("team_reviewers", [])
        if teams:
            raise _validation_failed(
                "PullRequest",
                "team_reviewers",
                "custom",
                "Reviews may only be requested from collaborators. One or more of the teams "
                f"you specified is not a collaborator of the {repo.full_name} repository.",
            )
        for login in reviewers:
            if login == repo.issues[number]["user"]:
                raise _validation_failed(
                    "PullRequest",
                    "reviewers",
                    "custom",
                    "Review cannot be requested from pull request author.",
                )
            if login not in repo.collaborators and login != repo.owner:
                raise _validation_failed(
                    "PullRequest",
                    "reviewers",
                    "custom",
                    "Reviews may only be requested from collaborators. One or more of the users "
                    f"or teams you specified is not a collaborator of the {repo.full_name} "
                    "repository.",
                )
        for login in reviewers:
            if login not in pull["requested_reviewers"]:
                pull["requested_reviewers"].append(login)
        return _Response(201, self._pull_json(repo, number, full=False))

    def _op_pulls__list_reviews(self, req: _Request) -> _Response:
        repo = self._access(req, "pull_requests", "read")
        self._pull_or_404(repo, req.params["pull_number"])
        number = int(req.params["pull_number"])
        return self._paginate(
            req, [self._review_json(repo, number, r) for r in repo.reviews.get(number, [])]
        )

    # ---- operations: issues ------------------------------------------------------------

    def _issue_permission(self, repo: Repo, number: str) -> str:
        if number.isdigit() and int(number) in repo.pulls:
            return "issues|pull_requests"
        return "issues"

    def _repo_for_issue(self, req: _Request, level: str) -> tuple[Repo, dict[str, Any]]:
        full = f"{req.params['owner']}/{req.params['repo']}"
        probe = self._repos.get(full)
        perm = self._issue_permission(probe, req.params["issue_number"]) if probe else "issues"
        repo = self._access(req, perm, level)
        return repo, self._issue_or_404(repo, req.params["issue_number"])

    def _op_issues__get(self, req: _Request) -> _Response:
        repo, issue = self._repo_for_issue(req, "read")
        return _Response(200, self._issue_json(repo, issue["number"]))

    def _op_issues__list_comments(self, req: _Request) -> _Response:
        repo, issue = self._repo_for_issue(req, "read")
        return self._paginate(
            req, [self._comment_json(repo, issue["number"], c) for c in issue["comments"]]
        )

    def _op_issues__create_comment(self, req: _Request) -> _Response:
        repo, issue = self._repo_for_issue(req, "write")
        self._check_body_size("IssueComment", req.body["body"])
        now = _now_iso(self.now())
        comment = {
            "id": self._next_id(),
            "body": req.body["body"],
            "user": self._actor(req),
            "created_at": now,
            "updated_at": now,
        }
        issue["comments"].append(comment)
        self._comments[comment["id"]] = (repo.full_name, issue["number"])
        out = self._comment_json(repo, issue["number"], comment)
        return _Response(201, out, {"Location": out["url"]})

    def _op_issues__update_comment(self, req: _Request) -> _Response:
        cid = req.params["comment_id"]
        located = self._comments.get(int(cid)) if cid.isdigit() else None
        full = f"{req.params['owner']}/{req.params['repo']}"
        if located is None or located[0] != full:
            self._access(req, "issues", "write")
            raise _error(404, "Not Found")
        number = located[1]
        perm = "issues|pull_requests" if number in self._repos[full].pulls else "issues"
        repo = self._access(req, perm, "write")
        self._check_body_size("IssueComment", req.body["body"])
        comment = next(c for c in repo.issues[number]["comments"] if c["id"] == int(cid))
        actor = self._actor(req)
        if req.identity.kind == "user" and actor != comment["user"]:
            role = repo.collaborators.get(actor, {}).get("permission", "none")
            if PERMISSION_RANK[role] < PERMISSION_RANK["triage"]:
                raise _error(403, "Must have admin rights to Repository.")
        comment["body"] = req.body["body"]
        comment["updated_at"] = _now_iso(self.now())
        return _Response(200, self._comment_json(repo, number, comment))

    def _op_issues__add_labels(self, req: _Request) -> _Response:
        repo, issue = self._repo_for_issue(req, "write")
        body = req.body
        raw = body if isinstance(body, list) else body.get("labels", [])
        names = [x if isinstance(x, str) else x["name"] for x in raw]
        for name in names:
            if name not in repo.labels:
                repo.labels[name] = {"id": self._next_id(), "color": "ededed"}
            if name not in issue["labels"]:
                issue["labels"].append(name)
        issue["updated_at"] = _now_iso(self.now())
        return _Response(200, [self._label_json(repo, n) for n in issue["labels"]])

    def _op_reactions__create_for_issue(self, req: _Request) -> _Response:
        _repo, issue = self._repo_for_issue(req, "write")
        actor = self._actor(req)
        content = req.body["content"]
        for reaction in issue["reactions"]:
            if reaction["user"] == actor and reaction["content"] == content:
                return _Response(200, self._reaction_json(reaction))
        reaction = {
            "id": self._next_id(),
            "user": actor,
            "content": content,
            "created_at": _now_iso(self.now()),
        }
        issue["reactions"].append(reaction)
        return _Response(201, self._reaction_json(reaction))

    def _reaction_json(self, reaction: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": reaction["id"],
            "node_id": _node_id("REA", reaction["id"]),
            "user": self._user_json(reaction["user"]),
            "content": reaction["content"],
            "created_at": reaction["created_at"],
        }

    # ---- operations: checks ------------------------------------------------------------

    def _require_installation(self, req: _Request) -> None:
        if req.identity.kind == "user":
            raise _error(403, "You must authenticate via a GitHub App.")

    def _apply_check_fields(self, run: dict[str, Any], body: dict[str, Any]) -> None:
        for key in ("name", "details_url", "external_id", "started_at", "completed_at"):
            if key in body:
                run[key] = body[key]
        if "status" in body:
            run["status"] = body["status"]
        if "conclusion" in body:
            run["conclusion"] = body["conclusion"]
            if body["conclusion"] is not None:
                run["status"] = "completed"
        if run["status"] == "completed":
            if run["conclusion"] is None:
                raise _validation_failed(
                    "CheckRun",
                    "conclusion",
                    "missing_field",
                    "Conclusion is required when status is completed",
                )
            run["completed_at"] = (
                body.get("completed_at") or run["completed_at"] or _now_iso(self.now())
            )
        if "output" in body:
            output = body["output"]
            for key in ("title", "summary", "text"):
                if key in output:
                    run["output"][key] = output[key]
            annotations = output.get("annotations", [])
            if len(annotations) > 50:
                raise _validation_failed(
                    "CheckRun",
                    "annotations",
                    "custom",
                    "Only 50 annotations are allowed per request",
                )
            run["annotations"].extend(annotations)
        if "actions" in body:
            run["actions"] = body["actions"]

    def _op_checks__create(self, req: _Request) -> _Response:
        self._require_installation(req)
        repo = self._access(req, "checks", "write")
        body = req.body
        if body.get("head_sha") not in repo.commits:
            raise _validation_failed(
                "CheckRun",
                "head_sha",
                "invalid",
                f"No commit found for SHA: {body.get('head_sha')}",
            )
        if "name" not in body:
            raise _validation_failed("CheckRun", "name", "missing_field")
        if len(body.get("actions", [])) > 3:
            raise _validation_failed("CheckRun", "actions", "custom", "Only 3 actions are allowed")
        run: dict[str, Any] = {
            "id": self._next_id(),
            "name": body["name"],
            "head_sha": body["head_sha"],
            "external_id": "",
            "details_url": f"https://example.invalid/{self.app_slug}",
            "status": "queued",
            "conclusion": None,
            "started_at": _now_iso(self.now()),
            "completed_at": None,
            "output": {"title": None, "summary": None, "text": None},
            "annotations": [],
            "actions": [],
            "check_suite_id": self._check_suite_id(repo, body["head_sha"]),
            "app_id": self.app_id,
        }
        self._apply_check_fields(run, body)
        repo.check_runs[run["id"]] = run
        out = self._check_run_json(repo, run)
        return _Response(201, out, {"Location": out["url"]})

    def _check_suite_id(self, repo: Repo, head_sha: str) -> int:
        for run in repo.check_runs.values():
            if run["head_sha"] == head_sha:
                return int(run["check_suite_id"])
        return self._next_id()

    def _op_checks__update(self, req: _Request) -> _Response:
        self._require_installation(req)
        repo = self._access(req, "checks", "write")
        rid = req.params["check_run_id"]
        run = repo.check_runs.get(int(rid)) if rid.isdigit() else None
        if run is None:
            raise _error(404, "Not Found")
        updated = copy.deepcopy(run)
        self._apply_check_fields(updated, req.body)
        run.update(updated)
        return _Response(200, self._check_run_json(repo, run))

    def _op_checks__list_for_ref(self, req: _Request) -> _Response:
        repo = self._access(req, "checks", "read")
        sha = self._resolve_commitish(repo, req.params["ref"])
        if sha is None:
            raise _validation_failed(
                "CheckRun", "ref", "invalid", "No commit found for SHA: " + req.params["ref"]
            )
        runs = [r for r in repo.check_runs.values() if r["head_sha"] == sha]
        name = req.query.get("check_name", [None])[-1]
        status = req.query.get("status", [None])[-1]
        app_id = req.query.get("app_id", [None])[-1]
        if name is not None:
            runs = [r for r in runs if r["name"] == name]
        if status is not None:
            runs = [r for r in runs if r["status"] == status]
        if app_id is not None:
            runs = [r for r in runs if str(r["app_id"]) == app_id]
        if req.query.get("filter", ["latest"])[-1] == "latest":
            latest: dict[str, dict[str, Any]] = {}
            for r in sorted(runs, key=lambda r: r["id"]):
                latest[r["name"]] = r
            runs = list(latest.values())
        runs.sort(key=lambda r: r["id"], reverse=True)
        page = self._paginate(req, [self._check_run_json(repo, r) for r in runs])
        return _Response(200, {"total_count": len(runs), "check_runs": page.body}, page.headers)


def _parents(path: str) -> Iterator[str]:
    parts = path.split("/")
    for i in range(1, len(parts)):
        yield "/".join(parts[:i])


def _node_id(kind: str, value: object) -> str:
    return base64.b64encode(f"{kind}_{value}".encode()).decode().rstrip("=")


def _normalise_date(value: str) -> str:
    dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _make_handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "GitHub.com"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            resp = fake.handle(self.command, self.path, headers, raw)
            if fake.latency:
                time.sleep(fake.latency)
            if resp.raw is not None:
                payload = resp.raw
            elif resp.body is None:
                payload = b""
            else:
                payload = json.dumps(resp.body).encode()
            self.send_response(resp.status)
            sent = {k.lower() for k in resp.headers}
            if "content-type" not in sent and (payload or resp.body is not None):
                self.send_header("Content-Type", "application/json; charset=utf-8")
            for key, value in {
                "X-GitHub-Media-Type": "github.v3; format=json",
                "X-GitHub-Api-Version-Selected": "2022-11-28",
                "X-RateLimit-Limit": "5000",
                "X-RateLimit-Remaining": "4999",
                "X-RateLimit-Used": "1",
                "X-RateLimit-Reset": str(int(time.time()) + 3600),
                "X-RateLimit-Resource": "core",
                "X-GitHub-Request-Id": secrets.token_hex(8).upper(),
            }.items():
                if key.lower() not in sent:
                    self.send_header(key, value)
            for key, value in resp.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _serve

    return Handler
