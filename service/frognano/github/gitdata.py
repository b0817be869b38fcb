"""GitDataOps: the default branch, tarball download, commits and branches (Git data API)."""

from __future__ import annotations

import asyncio
import base64
import tempfile
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from frognano.github.archive import MAX_BYTES, ExtractedTree, extract_tarball
from frognano.github.core import ClientCore, quote
from frognano.github.errors import BranchConflict, GitHubError, GitHubNotFound, GitHubRequestError
from frognano.github.models import FileChange
from frognano.github.retry import call
from frognano.log import get_logger

__all__ = ["GitDataOps"]

log = get_logger(__name__)

_DOWNLOAD_CHUNK = 1 << 16


class GitDataOps(ClientCore):
    """The git data operations of RepoClient (see there for why each is idempotent)."""

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

    async def download_tree(
        self, sha: str, dest: Path, *, max_bytes: int = MAX_BYTES
    ) -> ExtractedTree:
        """Download commit `sha` as a tarball and extract it safely into `dest` (missing or
        empty) without GitHub's top folder, leaving out the symlinks that lead outside the
        tree (archive.py); return `dest` and those links. The token stays in this process."""
        await asyncio.to_thread(_require_empty, dest)  # fail before downloading
        url = f"/repos/{self.full_name}/tarball/{quote(sha)}"
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
            log.info("github.tarball_downloaded", sha=sha, bytes=size)
            return await asyncio.to_thread(extract_tarball, archive, dest, max_bytes=max_bytes)

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
        base = await self._data("GET", f"/git/commits/{quote(base_sha)}", f"read commit {base_sha}")
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
        log.info("github.commit_created", sha=commit["sha"], files=len(entries))
        return str(commit["sha"])

    async def _branch_sha(self, branch: str) -> str | None:
        try:
            ref = await self._data(
                "GET", f"/git/ref/heads/{urllib.parse.quote(branch)}", f"read branch {branch}"
            )
        except GitHubNotFound:
            return None
        return str(ref["object"]["sha"])

    async def branch_sha(self, branch: str) -> str | None:
        """The head commit of `branch`, or None when the repository has no such branch."""
        return await self._branch_sha(branch)

    async def _check_only_app_commits(
        self, branch: str, head: str, app_login: str, base: str | None
    ) -> None:
        default, default_sha = await self.default_branch()
        if base is not None and base != default:
            default, default_sha = base, await self._branch_sha(base) or default_sha
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
        self,
        branch: str,
        commit_sha: str,
        *,
        app_login: str | None = None,
        base: str | None = None,
    ) -> Literal["created", "moved", "unchanged"]:
        """Point `refs/heads/<branch>` at `commit_sha`: create it, leave it, or force-move it
        when every commit on it since its merge base with the default branch (or `base`) is
        by `app_login` (default: the client's); else raise BranchConflict."""
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
                log.info("github.branch_created", branch=branch, sha=commit_sha)
                return "created"
        if current == commit_sha:
            return "unchanged"
        await self._check_only_app_commits(branch, current, login, base)
        await self._request(
            "PATCH",
            f"/git/refs/heads/{urllib.parse.quote(branch)}",
            f"move branch {branch}",
            body={"sha": commit_sha, "force": True},
        )
        log.info("github.branch_moved", branch=branch, old=current, new=commit_sha)
        return "moved"

    async def fast_forward(self, branch: str, commit_sha: str) -> None:
        """Move `branch` to `commit_sha` only if that is a fast-forward (GitHub checks it in
        the same request, so a push that lands after any earlier look at the branch is never
        overwritten); else raise BranchConflict."""
        try:
            await self._request(
                "PATCH",
                f"/git/refs/heads/{urllib.parse.quote(branch)}",
                f"fast-forward branch {branch}",
                body={"sha": commit_sha, "force": False},
            )
        except GitHubRequestError as exc:
            if "fast forward" not in str(exc).lower():
                raise
            raise BranchConflict(
                f"{branch} moved on GitHub; {commit_sha[:12]} no longer follows its head"
            ) from exc
        log.info("github.branch_fast_forwarded", branch=branch, new=commit_sha)


def _require_empty(dest: Path) -> None:
    if dest.exists() and any(dest.iterdir()):
        raise ValueError(f"{dest} is not empty")
