"""Pull requests, their requested reviewers and reviews."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tests.fakes.github.commits import _Commits
from tests.fakes.github.issues import _Issues
from tests.fakes.github.model import (
    REVIEW_STATES,
    Repo,
    _error,
    _node_id,
    _now_iso,
    _Request,
    _Response,
    _validation_failed,
)


class _Pulls(_Issues, _Commits):
    """Pull requests and their reviews."""

    def submit_review(
        self,
        full_name: str,
        pull_number: int,
        *,
        user: str,
        state: str,
        commit_id: str | None = None,
        body: str = "",
        comments: Sequence[tuple[str, int, str, str]] = (),
    ) -> dict[str, Any]:
        """Record a review as if `user` submitted it on github.com. `state` is the webhook's
        lowercase (approved, changes_requested, commented); the REST list shows it uppercase.
        `commit_id` defaults to the pull request's current head. `comments`: its line
        comments as (path, line, diff hunk, body). Returns the review JSON."""
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
                "comments": [
                    {
                        "id": self._next_id(),
                        "path": path,
                        "line": line,
                        "diff_hunk": hunk,
                        "body": text,
                    }
                    for path, line, hunk, text in comments
                ],
            }
            repo.reviews.setdefault(pull_number, []).append(review)
            return self._review_json(repo, pull_number, review)

    # ---- internals: JSON shapes ------------------------------------------------------

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

    def _pull_or_404(self, repo: Repo, number: str) -> dict[str, Any]:
        if not number.isdigit() or int(number) not in repo.pulls:
            raise _error(404, "Not Found")
        return repo.pulls[int(number)]

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

    def _op_pulls__list_comments_for_review(self, req: _Request) -> _Response:
        repo = self._access(req, "pull_requests", "read")
        self._pull_or_404(repo, req.params["pull_number"])
        number, wanted = int(req.params["pull_number"]), req.params["review_id"]
        for review in repo.reviews.get(number, []):
            if str(review["id"]) == wanted:
                items = [
                    self._review_comment_json(repo, number, review, c) for c in review["comments"]
                ]
                return self._paginate(req, items)
        raise _error(404, "Not Found")

    def _op_pulls__get_review_comment(self, req: _Request) -> _Response:
        repo = self._access(req, "pull_requests", "read")
        wanted = req.params["comment_id"]
        for number, reviews in repo.reviews.items():
            for review in reviews:
                for comment in review["comments"]:
                    if str(comment["id"]) == wanted:
                        return _Response(
                            200, self._review_comment_json(repo, number, review, comment)
                        )
        raise _error(404, "Not Found")

    def _op_reactions__create_for_pull_request_review_comment(self, req: _Request) -> _Response:
        repo = self._access(req, "pull_requests", "write")
        wanted = req.params["comment_id"]
        found = [c for reviews in repo.reviews.values() for r in reviews for c in r["comments"]]
        comment = next((c for c in found if str(c["id"]) == wanted), None)
        if comment is None:
            raise _error(404, "Not Found")
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

    def _review_comment_json(
        self, repo: Repo, number: int, review: dict[str, Any], comment: dict[str, Any]
    ) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full_name}"
        web = f"https://github.com/{repo.full_name}/pull/{number}#discussion_r{comment['id']}"
        url = f"{api}/pulls/comments/{comment['id']}"
        return {
            "id": comment["id"],
            "node_id": _node_id("PRRC", comment["id"]),
            "url": url,
            "pull_request_review_id": review["id"],
            "diff_hunk": comment["diff_hunk"],
            "path": comment["path"],
            "position": 1,
            "original_position": 1,
            "commit_id": review["commit_id"],
            "original_commit_id": review["commit_id"],
            "user": self._user_json(review["user"]),
            "body": comment["body"],
            "created_at": review["submitted_at"],
            "updated_at": review["submitted_at"],
            "html_url": web,
            "pull_request_url": f"{api}/pulls/{number}",
            "author_association": self._author_association(repo, review["user"]),
            "_links": {
                "self": {"href": url},
                "html": {"href": web},
                "pull_request": {"href": f"{api}/pulls/{number}"},
            },
            "line": comment["line"],
            "side": "RIGHT",
        }
