"""Commits as the repos API shows them: list, get, compare."""

from __future__ import annotations

from typing import Any

from tests.fakes.github.auth import _Auth
from tests.fakes.github.gitstore import _GitStore
from tests.fakes.github.model import Repo, _error, _node_id, _Request, _Response, _validation_failed


class _Commits(_Auth, _GitStore):
    """List commits, get one, compare two."""

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

    # ---- operations: repos (commits) ---------------------------------------------------

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
