"""RepoClient: exactly the operations the worker performs on one repository, each idempotent.

Idempotency, operation by operation (a retried request or a re-run job never duplicates):
- `react`: GitHub answers 200 for a reaction that already exists.
- `upsert_status_comment`: the app's own comment holding the hidden marker is found (all pages)
  and edited; only when none exists is one created, and a create that failed transiently is
  looked up again before it is re-sent.
- `create_commit`: blobs and trees are content-addressed; a commit nobody points at is inert.
- `upsert_branch`: created, moved or left unchanged; moved only over the app's own commits.
- `find_or_create_pull`: an open pull request for the head is looked up before and after a
  create that failed transiently; an existing one has its body updated.
- `add_labels`, `request_reviewers`: GitHub keeps sets, so repeating is harmless.
- `upsert_check_run`: the app's run of that name on that commit is edited, else created.

Every call goes through `retry.call` (a thread per PyGithub request, one retry policy). The
token comes from a TokenSource awaited before each request, so a run longer than a token's
hour keeps working; the token never leaves this process and is never logged.
"""

from __future__ import annotations

import asyncio
import base64
import re
import tempfile
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from github import Auth, Github

from frognano.github.archive import MAX_BYTES, extract_tarball
from frognano.github.errors import (
    BranchConflict,
    GitHubError,
    GitHubNotFound,
    GitHubRequestError,
)
from frognano.github.models import (
    BODY_LIMIT,
    CHECK_TEXT_LIMIT,
    FileChange,
    PullInfo,
    Review,
    truncate,
)
from frognano.github.retry import Transport, call
from frognano.log import get_logger

__all__ = ["CheckRunInfo", "PullCommit", "PullState", "RepoClient"]

log = get_logger(__name__)

_PER_PAGE = 100
_MAX_PAGES = 100
_NEXT_LINK = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
_REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})
_CHECK_STATUSES = frozenset({"queued", "in_progress", "completed"})
_CONCLUSIONS = frozenset(
    {"action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out"}
)
_DOWNLOAD_CHUNK = 1 << 16


@dataclass(frozen=True)
class PullState:
    """A pull request as the review gate re-reads it (`pull`)."""

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


@dataclass(frozen=True)
class CheckRunInfo:
    """One check run as listed for a commit (`check_runs`)."""

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
    """One commit of a pull request (`pull_commits`)."""

    sha: str
    author: str | None
    """The GitHub login GitHub linked the commit's author to; None when it linked none."""


class _CurrentToken(Auth.Auth):
    """PyGithub auth whose token is swapped in before each request (tokens are re-minted)."""

    def __init__(self) -> None:
        self.value = ""

    @property
    def token_type(self) -> str:
        return "token"

    @property
    def token(self) -> str:
        return self.value

    @property
    def _masked_token(self) -> str:
        return "token (removed)"


def _quote(value: str) -> str:
    return urllib.parse.quote(value, safe="")


class RepoClient:
    """One repository, one narrowed token; every method is async and idempotent."""

    def __init__(
        self,
        full_name: str,
        token: str | Callable[[], Awaitable[str]],
        *,
        transport: Transport | None = None,
        app_login: str | None = None,
        app_id: int | None = None,
    ) -> None:
        """`token` is a token or an async callable returning a valid one (GitHubApp's
        `token_source`). `app_login` (`slug[bot]`) identifies the app's own comments and
        commits; `app_id` its check runs. Without them, comments by any bot holding the
        marker and check runs of any app with the name are taken as the app's own."""
        if full_name.count("/") != 1 or not all(full_name.split("/")):
            raise ValueError(f"{full_name!r} is not owner/name")
        self.full_name = full_name
        self.owner = full_name.split("/", maxsplit=1)[0]
        self.transport = transport or Transport()
        self.app_login = app_login
        self.app_id = app_id
        self._token = token
        self._auth = _CurrentToken()
        if isinstance(token, str):
            self._auth.value = token
        self._github = Github(
            auth=self._auth,
            base_url=self.transport.base_url,
            timeout=self.transport.timeout,
            user_agent=self.transport.user_agent,
            retry=None,
            seconds_between_requests=self.transport.seconds_between_requests,
            seconds_between_writes=self.transport.seconds_between_writes,
            lazy=True,
        )
        self._requester = self._github.requester
        self._comment_ids: dict[tuple[int, str], int] = {}

    async def __aenter__(self) -> RepoClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP connections."""
        self._github.close()

    # -- plumbing ---------------------------------------------------------------------------

    async def _refresh(self) -> None:
        if not isinstance(self._token, str):
            self._auth.value = await self._token()

    async def _request(
        self,
        verb: str,
        path: str,
        what: str,
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
        recover: Callable[[], Awaitable[Any]] | None = None,
    ) -> tuple[dict[str, Any], Any]:
        """`path` is relative to the repository (`/pulls`) or absolute (a pagination link).
        `recover` looks up the response data of a create that may have succeeded."""
        await self._refresh()
        url = path if path.startswith("http") else f"/repos/{self.full_name}{path}"
        requester = self._requester

        def send() -> tuple[dict[str, Any], Any]:
            return requester.requestJsonAndCheck(verb, url, parameters=params, input=body)

        lookup = recover

        async def recovered() -> tuple[dict[str, Any], Any] | None:
            found = await lookup() if lookup is not None else None
            return None if found is None else ({}, found)

        result: tuple[dict[str, Any], Any] = await call(
            send, what=what, transport=self.transport, recover=recovered if recover else None
        )
        return result

    async def _data(self, verb: str, path: str, what: str, **kwargs: Any) -> Any:
        return (await self._request(verb, path, what, **kwargs))[1]

    async def _paginate(
        self, path: str, what: str, *, params: dict[str, Any] | None = None, key: str | None = None
    ) -> list[Any]:
        """Every item of a list endpoint: follows `Link: rel="next"`, or page numbers while
        pages come back full when the server sends no Link header."""
        items: list[Any] = []
        url = path
        query: dict[str, Any] | None = {**(params or {}), "per_page": _PER_PAGE, "page": 1}
        for page in range(1, _MAX_PAGES + 1):
            headers, data = await self._request("GET", url, what, params=query)
            batch = (data or {}).get(key, []) if key else (data or [])
            items.extend(batch)
            found = _NEXT_LINK.search(headers.get("link", ""))
            if found:
                url, query = found.group(1), None
            elif "link" not in headers and len(batch) == _PER_PAGE:
                query = {**(params or {}), "per_page": _PER_PAGE, "page": page + 1}
            else:
                break
        return items

    def _mine(self, user: dict[str, Any] | None) -> bool:
        if not user:
            return False
        if self.app_login is not None:
            return bool(user.get("login") == self.app_login)
        return user.get("type") == "Bot"

    # -- issues -----------------------------------------------------------------------------

    async def permission(self, login: str) -> str:
        """`login`'s role on the repository: `role_name` (admin, maintain, write, triage, read
        or a custom role) when GitHub gives one, else the legacy `permission`; "none" when
        GitHub does not know the user."""
        try:
            data = await self._data(
                "GET",
                f"/collaborators/{_quote(login)}/permission",
                f"read {login}'s permission on {self.full_name}",
            )
        except GitHubNotFound:
            log.info("no permission: user unknown to the repository", login=login)
            return "none"
        return str(data.get("role_name") or data.get("permission") or "none")

    async def react(self, issue_number: int, content: str = "eyes") -> None:
        """Add the app's reaction to an issue (GitHub answers 200 if it already exists)."""
        if content not in _REACTIONS:
            raise ValueError(f"{content!r} is not a GitHub reaction")
        await self._request(
            "POST",
            f"/issues/{issue_number}/reactions",
            f"react to issue #{issue_number}",
            body={"content": content},
        )

    async def _find_comment(self, issue_number: int, marker: str) -> int | None:
        comments = await self._paginate(
            f"/issues/{issue_number}/comments", f"list the comments of issue #{issue_number}"
        )
        for comment in comments:
            if marker in (comment.get("body") or "") and self._mine(comment.get("user")):
                return int(comment["id"])
        return None

    async def upsert_status_comment(self, issue_number: int, marker: str, body: str) -> int:
        """Edit the app's comment holding `marker` (e.g. `<!-- frognano:status:RUN -->`), or
        create it; return its id. The marker is put first so truncation never drops it."""
        text = truncate(f"{marker}\n{body.replace(marker, '')}", BODY_LIMIT, "comment")
        key = (issue_number, marker)
        comment_id = self._comment_ids.get(key)
        if comment_id is None:
            comment_id = await self._find_comment(issue_number, marker)
        if comment_id is not None:
            try:
                await self._request(
                    "PATCH",
                    f"/issues/comments/{comment_id}",
                    f"update the status comment on issue #{issue_number}",
                    body={"body": text},
                )
            except GitHubNotFound:
                log.info("status comment was deleted; creating it again", issue=issue_number)
                self._comment_ids.pop(key, None)
            else:
                self._comment_ids[key] = comment_id
                return comment_id

        async def find_again() -> dict[str, Any] | None:
            found = await self._find_comment(issue_number, marker)
            return None if found is None else {"id": found}

        data = await self._data(
            "POST",
            f"/issues/{issue_number}/comments",
            f"create the status comment on issue #{issue_number}",
            body={"body": text},
            recover=find_again,
        )
        self._comment_ids[key] = int(data["id"])
        return self._comment_ids[key]

    # -- fetch ------------------------------------------------------------------------------

    async def default_branch(self) -> tuple[str, str]:
        """The default branch's name and head commit sha."""
        repo = await self._data("GET", "", f"read repository {self.full_name}")
        name = str(repo["default_branch"])
        ref = await self._data(
            "GET",
            f"/git/ref/heads/{urllib.parse.quote(name)}",
            f"read branch {name} of {self.full_name}",
        )
        return name, str(ref["object"]["sha"])

    async def download_tree(self, sha: str, dest: Path, *, max_bytes: int = MAX_BYTES) -> Path:
        """Download commit `sha` as a tarball and extract it safely into `dest` (missing or
        empty) without GitHub's top folder; return `dest`. The token stays in this process."""
        await asyncio.to_thread(_require_empty, dest)  # fail before downloading
        url = f"/repos/{self.full_name}/tarball/{_quote(sha)}"
        with tempfile.TemporaryDirectory(prefix="frognano-tarball-") as tmp:
            archive = Path(tmp) / "repo.tar.gz"
            requester = self._requester

            def download() -> int:
                _status, _headers, chunks = requester.getStream(url, chunk_size=_DOWNLOAD_CHUNK)
                size = 0
                with archive.open("wb") as out:
                    for chunk in chunks:
                        size += len(chunk)
                        if size > max_bytes:
                            raise GitHubError(
                                f"the tarball of {sha} is larger than {max_bytes} bytes"
                            )
                        out.write(chunk)
                return size

            await self._refresh()
            size = await call(
                download, what=f"download {self.full_name}@{sha}", transport=self.transport
            )
            log.info("downloaded repository tarball", sha=sha, bytes=size)
            await asyncio.to_thread(extract_tarball, archive, dest, max_bytes=max_bytes)
        return dest

    # -- publish ----------------------------------------------------------------------------

    async def create_commit(
        self,
        base_sha: str,
        changes: Sequence[FileChange],
        message: str,
        *,
        co_author: str | None = None,
    ) -> str:
        """Create a commit on `base_sha` applying `changes`; return its sha. No author or
        committer is sent, so GitHub signs it as the app; `co_author` ("Name <email>") is
        credited with a `Co-authored-by:` trailer. No branch is moved."""
        if not changes:
            raise ValueError("a commit needs at least one change")
        paths = [change.path for change in changes]
        if len(set(paths)) != len(paths):
            raise ValueError("each path may appear only once in a commit")
        base = await self._data(
            "GET", f"/git/commits/{_quote(base_sha)}", f"read commit {base_sha}"
        )
        entries: list[dict[str, Any]] = []
        for change in changes:
            sha: str | None = None
            if change.content is not None:
                blob = await self._data(
                    "POST",
                    "/git/blobs",
                    f"upload {change.path}",
                    body={
                        "content": base64.b64encode(change.content).decode("ascii"),
                        "encoding": "base64",
                    },
                )
                sha = str(blob["sha"])
            entries.append({"path": change.path, "mode": change.mode, "type": "blob", "sha": sha})
        tree = await self._data(
            "POST",
            "/git/trees",
            "create the tree",
            body={"base_tree": base["tree"]["sha"], "tree": entries},
        )
        full_message = message.rstrip()
        if co_author and f"Co-authored-by: {co_author}" not in full_message:
            full_message += f"\n\nCo-authored-by: {co_author}"
        commit = await self._data(
            "POST",
            "/git/commits",
            "create the commit",
            body={"message": full_message + "\n", "tree": tree["sha"], "parents": [base_sha]},
        )
        log.info("created commit", sha=commit["sha"], files=len(entries))
        return str(commit["sha"])

    async def _branch_sha(self, branch: str) -> str | None:
        try:
            ref = await self._data(
                "GET", f"/git/ref/heads/{urllib.parse.quote(branch)}", f"read branch {branch}"
            )
        except GitHubNotFound:
            return None
        return str(ref["object"]["sha"])

    async def _check_only_app_commits(self, branch: str, head: str, app_login: str) -> None:
        default, default_sha = await self.default_branch()
        compare = await self._data(
            "GET",
            f"/compare/{default_sha}...{head}",
            f"compare {branch} with {default}",
        )
        commits = compare.get("commits") or []
        total = int(compare.get("total_commits", len(commits)))
        if total > len(commits):
            raise BranchConflict(
                f"branch {branch} of {self.full_name} has {total} commits since {default}, too "
                "many to check that the app made them all; delete it or choose another name"
            )
        others = sorted(
            {
                (commit.get("author") or {}).get("login") or "an unknown author"
                for commit in commits
                if (commit.get("author") or {}).get("login") != app_login
            }
        )
        if others:
            raise BranchConflict(
                f"branch {branch} of {self.full_name} has commits by {', '.join(others)} since "
                f"{default}; FrogNano only replaces branches holding its own commits. Delete "
                "the branch, or rename it, to let FrogNano publish there"
            )

    async def upsert_branch(
        self, branch: str, commit_sha: str, *, app_login: str | None = None
    ) -> Literal["created", "moved", "unchanged"]:
        """Point `refs/heads/<branch>` at `commit_sha`: create it, leave it, or force-move it
        when every commit on it since its merge base with the default branch is by
        `app_login` (default: the client's); else raise BranchConflict."""
        login = app_login or self.app_login
        if login is None:
            raise ValueError("upsert_branch needs app_login to recognise the app's commits")
        if not branch or branch.startswith(("/", "refs/")) or ".." in branch:
            raise ValueError(f"{branch!r} is not a branch name")
        current = await self._branch_sha(branch)
        if current is None:
            try:
                await self._request(
                    "POST",
                    "/git/refs",
                    f"create branch {branch}",
                    body={"ref": f"refs/heads/{branch}", "sha": commit_sha},
                )
            except GitHubRequestError as exc:
                if "already exists" not in str(exc).lower():
                    raise
                current = await self._branch_sha(branch)
                if current is None:
                    raise
            else:
                log.info("created branch", branch=branch, sha=commit_sha)
                return "created"
        if current == commit_sha:
            return "unchanged"
        await self._check_only_app_commits(branch, current, login)
        await self._request(
            "PATCH",
            f"/git/refs/heads/{urllib.parse.quote(branch)}",
            f"move branch {branch}",
            body={"sha": commit_sha, "force": True},
        )
        log.info("moved branch", branch=branch, old=current, new=commit_sha)
        return "moved"

    async def _find_pull(self, head: str, base: str) -> dict[str, Any] | None:
        pulls = await self._paginate(
            "/pulls",
            f"look for an open pull request from {head}",
            params={"state": "open", "head": f"{self.owner}:{head}", "base": base},
        )
        for pull in pulls:
            if (
                pull.get("state") == "open"
                and pull["head"]["ref"] == head
                and pull["base"]["ref"] == base
                and ((pull["head"].get("repo") or {}).get("full_name") in (None, self.full_name))
            ):
                return dict(pull)
        return None

    async def find_or_create_pull(
        self, head: str, base: str, title: str, body: str, *, draft: bool = True
    ) -> PullInfo:
        """The open pull request from `head` into `base`, its body updated; else a new one,
        a draft unless the repository does not support drafts (then `draft` is False)."""
        text = truncate(body, BODY_LIMIT, "description")
        pull = await self._find_pull(head, base)
        if pull is not None:
            if pull.get("body") != text:
                pull = await self._data(
                    "PATCH",
                    f"/pulls/{pull['number']}",
                    f"update pull request #{pull['number']}",
                    body={"body": text},
                )
            return _pull_info(pull)

        async def find_again() -> dict[str, Any] | None:
            return await self._find_pull(head, base)

        request = {"title": title, "head": head, "base": base, "body": text, "draft": draft}
        try:
            created = await self._data(
                "POST",
                "/pulls",
                f"open a pull request from {head}",
                body=request,
                recover=find_again,
            )
        except GitHubRequestError as exc:
            message = str(exc).lower()
            if draft and "draft pull requests are not supported" in message:
                log.warning("drafts not supported here; opening a normal pull request")
                return await self.find_or_create_pull(head, base, title, body, draft=False)
            if "already exists" in message:
                found = await self._find_pull(head, base)
                if found is not None:
                    return _pull_info(found)
            raise
        log.info("opened pull request", number=created["number"], draft=created.get("draft"))
        return _pull_info(created)

    async def add_labels(self, number: int, labels: Sequence[str]) -> None:
        """Add labels to an issue or pull request (labels already there stay once)."""
        if labels:
            await self._request(
                "POST",
                f"/issues/{number}/labels",
                f"label #{number}",
                body={"labels": list(labels)},
            )

    async def request_reviewers(
        self, number: int, reviewers: Sequence[str], team_reviewers: Sequence[str] = ()
    ) -> list[str]:
        """Request reviews; return the reviewers and teams GitHub refused (422: the author,
        a non-collaborator), each logged, without failing the rest."""
        if not reviewers and not team_reviewers:
            return []
        path, what = f"/pulls/{number}/requested_reviewers", f"request reviews on #{number}"
        try:
            await self._request(
                "POST",
                path,
                what,
                body={"reviewers": list(reviewers), "team_reviewers": list(team_reviewers)},
            )
        except GitHubRequestError as exc:
            if exc.status != 422:
                raise
        else:
            return []
        refused = []
        wanted = [("reviewers", name) for name in reviewers]
        wanted += [("team_reviewers", name) for name in team_reviewers]
        for kind, name in wanted:
            try:
                await self._request("POST", path, what, body={kind: [name]})
            except GitHubRequestError as exc:
                if exc.status != 422:
                    raise
                log.warning(
                    "reviewer cannot be requested",
                    pull=number,
                    reviewer=name,
                    reason=exc.github_message,
                )
                refused.append(name)
        return refused

    async def _find_check_run(self, head_sha: str, name: str) -> int | None:
        runs = await self._paginate(
            f"/commits/{_quote(head_sha)}/check-runs",
            f"look for check run {name!r}",
            params={"check_name": name},
            key="check_runs",
        )
        ids = [
            int(run["id"])
            for run in runs
            if run.get("name") == name
            and (self.app_id is None or (run.get("app") or {}).get("id") == self.app_id)
        ]
        return max(ids) if ids else None

    async def upsert_check_run(
        self,
        head_sha: str,
        name: str,
        *,
        status: str,
        conclusion: str | None = None,
        title: str,
        summary: str,
        text: str | None = None,
        details_url: str | None = None,
    ) -> int:
        """Edit the app's check run `name` on `head_sha`, or create it; return its id.
        `conclusion` is required with status "completed" and refused otherwise."""
        if status not in _CHECK_STATUSES:
            raise ValueError(f"check run status {status!r} is not one of {sorted(_CHECK_STATUSES)}")
        if (status == "completed") != (conclusion is not None):
            raise ValueError("a conclusion is required with status 'completed', and only then")
        if conclusion is not None and conclusion not in _CONCLUSIONS:
            raise ValueError(
                f"check run conclusion {conclusion!r} is not one of {sorted(_CONCLUSIONS)}"
            )
        output = {
            "title": truncate(title, 1024, "title"),
            "summary": truncate(summary, CHECK_TEXT_LIMIT, "summary"),
        }
        if text is not None:
            output["text"] = truncate(text, CHECK_TEXT_LIMIT, "text")
        fields: dict[str, Any] = {"status": status, "output": output}
        if conclusion is not None:
            fields["conclusion"] = conclusion
        if details_url is not None:
            fields["details_url"] = details_url
        existing = await self._find_check_run(head_sha, name)
        if existing is not None:
            await self._request(
                "PATCH", f"/check-runs/{existing}", f"update check run {name!r}", body=fields
            )
            return existing

        async def find_again() -> dict[str, Any] | None:
            found = await self._find_check_run(head_sha, name)
            return None if found is None else {"id": found}

        created = await self._data(
            "POST",
            "/check-runs",
            f"create check run {name!r}",
            body={"name": name, "head_sha": head_sha, **fields},
            recover=find_again,
        )
        return int(created["id"])

    async def reviews(self, number: int) -> list[Review]:
        """Every review of pull request `number`, oldest first."""
        items = await self._paginate(f"/pulls/{number}/reviews", f"list reviews of #{number}")
        reviews = []
        for item in items:
            user = item.get("user") or {}
            reviews.append(
                Review(
                    user=str(user.get("login") or "ghost"),
                    state=str(item.get("state", "")).upper(),
                    commit_id=item.get("commit_id"),
                    user_type=str(user.get("type") or "User"),
                )
            )
        return reviews

    # -- review gate ------------------------------------------------------------------------

    async def pull(self, number: int) -> PullState:
        """Pull request `number` as it is now: head commit, branch, author, state."""
        data = await self._data("GET", f"/pulls/{number}", f"read pull request #{number}")
        user = data.get("user") or {}
        return PullState(
            number=int(data["number"]),
            head_sha=str(data["head"]["sha"]),
            head_ref=str(data["head"]["ref"]),
            author=str(user.get("login") or "ghost"),
            author_type=str(user.get("type") or "User"),
            state=str(data.get("state") or "open"),
            draft=bool(data.get("draft", False)),
        )

    async def pull_commits(self, number: int) -> list[PullCommit]:
        """The commits of pull request `number`, oldest first (GitHub lists at most 250).
        Needs only `pull_requests: read`, unlike the commits and compare endpoints."""
        items = await self._paginate(f"/pulls/{number}/commits", f"list commits of #{number}")
        return [
            PullCommit(
                sha=str(item["sha"]),
                author=(item.get("author") or {}).get("login"),
            )
            for item in items
        ]

    async def check_runs(self, head_sha: str, name: str) -> list[CheckRunInfo]:
        """Every check run named `name` on commit `head_sha` (all of them, not only the latest),
        newest first; restricted to this client's App when `app_id` is known. Callers that
        trust a run's content must still compare `app_id` themselves."""
        params: dict[str, Any] = {"check_name": name, "filter": "all"}
        if self.app_id is not None:
            params["app_id"] = self.app_id
        runs = await self._paginate(
            f"/commits/{_quote(head_sha)}/check-runs",
            f"list check runs {name!r} of {head_sha}",
            params=params,
            key="check_runs",
        )
        found = []
        for run in runs:
            if run.get("name") != name:
                continue
            app = run.get("app") or {}
            app_id = app.get("id")
            found.append(
                CheckRunInfo(
                    id=int(run["id"]),
                    name=str(run["name"]),
                    head_sha=str(run.get("head_sha") or head_sha),
                    status=str(run.get("status") or ""),
                    conclusion=run.get("conclusion"),
                    external_id=run.get("external_id"),
                    app_id=app_id if isinstance(app_id, int) else None,
                )
            )
        found.sort(key=lambda info: info.id, reverse=True)
        return found

    async def set_check_run_external_id(self, check_run_id: int, external_id: str) -> None:
        """Set the `external_id` of one of the app's check runs (e.g. the review marker on
        `FrogNano / verification`; see `frognano.app.review.review_marker`)."""
        await self._request(
            "PATCH",
            f"/check-runs/{check_run_id}",
            f"set the external id of check run {check_run_id}",
            body={"external_id": external_id},
        )

    async def permission_levels(self, login: str) -> tuple[str, str]:
        """`login`'s (`role_name`, legacy `permission`) on the repository: `role_name` may be a
        custom role, whose base role shows in `permission` (maintain reads as write there,
        triage as read); ("none", "none") when GitHub does not know the user."""
        try:
            data = await self._data(
                "GET",
                f"/collaborators/{_quote(login)}/permission",
                f"read {login}'s permission on {self.full_name}",
            )
        except GitHubNotFound:
            log.info("no permission: user unknown to the repository", login=login)
            return "none", "none"
        legacy = str(data.get("permission") or "none")
        return str(data.get("role_name") or legacy), legacy


def _require_empty(dest: Path) -> None:
    if dest.exists() and any(dest.iterdir()):
        raise ValueError(f"{dest} is not empty")


def _pull_info(pull: dict[str, Any]) -> PullInfo:
    return PullInfo(
        number=int(pull["number"]),
        html_url=str(pull["html_url"]),
        head_sha=str(pull["head"]["sha"]),
        draft=bool(pull.get("draft", False)),
    )
