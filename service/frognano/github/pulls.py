"""PullOps: open a pull request; its labels, reviewers, reviews, line comments, state, commits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from frognano.github.core import ClientCore
from frognano.github.errors import GitHubRequestError
from frognano.github.models import (
    BODY_LIMIT,
    PullCommit,
    PullInfo,
    PullState,
    Review,
    ReviewComment,
    truncate,
)
from frognano.log import get_logger

__all__ = ["PullOps"]

log = get_logger(__name__)


class PullOps(ClientCore):
    """The pull request operations of RepoClient (see there for why each is idempotent)."""

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
                log.warning("github.draft_unsupported")
                return await self.find_or_create_pull(head, base, title, body, draft=False)
            if "already exists" in message:
                found = await self._find_pull(head, base)
                if found is not None:
                    return _pull_info(found)
            raise
        log.info("github.pull_opened", number=created["number"], draft=created.get("draft"))
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
                    "github.reviewer_refused",
                    pull=number,
                    reviewer=name,
                    reason=exc.github_message,
                )
                refused.append(name)
        return refused

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

    async def review_comments(self, number: int, review_id: int) -> list[ReviewComment]:
        """The line comments of review `review_id` on pull request `number`, in order."""
        items = await self._paginate(
            f"/pulls/{number}/reviews/{review_id}/comments",
            f"list the comments of review {review_id} on #{number}",
        )
        return [_review_comment(item) for item in items]

    async def review_comment(self, comment_id: int) -> ReviewComment:
        """One line comment of a review, by its id."""
        item = await self._data(
            "GET", f"/pulls/comments/{comment_id}", f"read review comment {comment_id}"
        )
        return _review_comment(item)

    async def react_to_review_comment(self, comment_id: int, content: str = "eyes") -> None:
        """Add the app's reaction to a review's line comment (200 if it exists)."""
        await self._request(
            "POST",
            f"/pulls/comments/{comment_id}/reactions",
            f"react to review comment {comment_id}",
            body={"content": content},
        )

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
            base_ref=str((data.get("base") or {}).get("ref") or ""),
            html_url=str(data.get("html_url") or ""),
            merged=bool(data.get("merged", False)),
        )

    async def pull_commits(self, number: int) -> list[PullCommit]:
        """The commits of pull request `number`, oldest first (GitHub lists at most 250).
        Needs only `pull_requests: read`, unlike the commits and compare endpoints."""
        items = await self._paginate(f"/pulls/{number}/commits", f"list commits of #{number}")
        return [
            PullCommit(
                sha=str(item["sha"]),
                author=(item.get("author") or {}).get("login"),
                parent=next((str(p["sha"]) for p in item.get("parents") or ()), None),
                message=str((item.get("commit") or {}).get("message") or ""),
            )
            for item in items
        ]


def _pull_info(pull: dict[str, Any]) -> PullInfo:
    return PullInfo(
        number=int(pull["number"]),
        html_url=str(pull["html_url"]),
        head_sha=str(pull["head"]["sha"]),
        draft=bool(pull.get("draft", False)),
    )


def _review_comment(item: dict[str, Any]) -> ReviewComment:
    line = item.get("line")
    user = item.get("user")
    return ReviewComment(
        path=str(item.get("path") or ""),
        line=line if isinstance(line, int) and not isinstance(line, bool) else None,
        diff_hunk=str(item.get("diff_hunk") or ""),
        body=str(item.get("body") or ""),
        author=str(user.get("login") or "") if isinstance(user, dict) else "",
    )
