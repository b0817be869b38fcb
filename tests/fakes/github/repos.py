"""Repositories: creating them, their metadata, and collaborators' permissions."""

from __future__ import annotations

from typing import Any

from tests.fakes.github.auth import _Auth
from tests.fakes.github.gitstore import _GitStore
from tests.fakes.github.model import (
    LEGACY_PERMISSION,
    PERMISSION_RANK,
    Repo,
    _error,
    _node_id,
    _now_iso,
    _Request,
    _Response,
)


class _Repos(_Auth, _GitStore):
    """Repositories, their JSON shape and the repos operations on metadata."""

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
