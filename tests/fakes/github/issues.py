"""Issues, their comments, labels and reactions."""

from __future__ import annotations

import urllib.parse
from typing import Any

from tests.fakes.github.apps import _Apps
from tests.fakes.github.model import (
    PERMISSION_RANK,
    REACTIONS,
    Repo,
    _error,
    _node_id,
    _now_iso,
    _Request,
    _Response,
)


class _Issues(_Apps):
    """Issues, comments, labels and reactions (pull requests are issues too)."""

    def add_issue(
        self, full_name: str, number: int, title: str, body: str, *, user: str = "reporter"
    ) -> None:
        with self._lock:
            repo = self.repo(full_name)
            if number in repo.issues:
                raise ValueError(f"issue {number} exists")
            self._user(user)
            repo.issues[number] = self._new_issue(number, title, body, user)

    def add_comment(self, full_name: str, number: int, body: str, *, user: str) -> int:
        """Record a comment as if `user` wrote it on github.com; returns its id."""
        with self._lock:
            repo = self.repo(full_name)
            self._user(user)
            now, cid = _now_iso(self.now()), self._next_id()
            comment: dict[str, Any] = {
                "id": cid,
                "body": body,
                "user": user,
                "created_at": now,
                "updated_at": now,
                "reactions": [],
            }
            repo.issues[number]["comments"].append(comment)
            self._comments[cid] = (full_name, number)
            return cid

    # ---- internals: JSON shapes ------------------------------------------------------

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

    def _issue_or_404(self, repo: Repo, number: str) -> dict[str, Any]:
        if not number.isdigit() or int(number) not in repo.issues:
            raise _error(404, "Not Found")
        return repo.issues[int(number)]

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

    def _op_reactions__create_for_issue_comment(self, req: _Request) -> _Response:
        cid = req.params["comment_id"]
        located = self._comments.get(int(cid)) if cid.isdigit() else None
        full = f"{req.params['owner']}/{req.params['repo']}"
        if located is None or located[0] != full:
            self._access(req, "issues", "write")
            raise _error(404, "Not Found")
        number = located[1]
        perm = "issues|pull_requests" if number in self._repos[full].pulls else "issues"
        repo = self._access(req, perm, "write")
        comment = next(c for c in repo.issues[number]["comments"] if c["id"] == int(cid))
        reactions = comment.setdefault("reactions", [])
        actor, content = self._actor(req), req.body["content"]
        for reaction in reactions:
            if reaction["user"] == actor and reaction["content"] == content:
                return _Response(200, self._reaction_json(reaction))
        reaction = {
            "id": self._next_id(),
            "user": actor,
            "content": content,
            "created_at": _now_iso(self.now()),
        }
        reactions.append(reaction)
        return _Response(201, self._reaction_json(reaction))

    def _reaction_json(self, reaction: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": reaction["id"],
            "node_id": _node_id("REA", reaction["id"]),
            "user": self._user_json(reaction["user"]),
            "content": reaction["content"],
            "created_at": reaction["created_at"],
        }
