"""IssueOps: an issue, a user's permission, reactions and the app's status comment on an issue."""

from __future__ import annotations

from typing import Any

from frognano.github.core import ClientCore, quote
from frognano.github.errors import GitHubNotFound
from frognano.github.models import BODY_LIMIT, IssueText, truncate
from frognano.log import get_logger

__all__ = ["IssueOps"]

log = get_logger(__name__)

_REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})


class IssueOps(ClientCore):
    """The issue operations of RepoClient (see there for why each is idempotent)."""

    async def permission_levels(self, login: str) -> tuple[str, str]:
        """`login`'s (`role_name`, legacy `permission`) on the repository: `role_name` may be a
        custom role, whose base role shows in `permission` (maintain reads as write there,
        triage as read); ("none", "none") when GitHub does not know the user."""
        try:
            data = await self._data(
                "GET",
                f"/collaborators/{quote(login)}/permission",
                f"read {login}'s permission on {self.full_name}",
            )
        except GitHubNotFound:
            log.info("github.permission_unknown_user", login=login)
            return "none", "none"
        legacy = str(data.get("permission") or "none")
        return str(data.get("role_name") or legacy), legacy

    async def permission(self, login: str) -> str:
        """`login`'s role on the repository, the first of `permission_levels`: admin,
        maintain, write, triage, read, a custom role's name, or "none"."""
        role_name, _legacy = await self.permission_levels(login)
        return role_name

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

    async def react_to_comment(self, comment_id: int, content: str = "eyes") -> None:
        """Add the app's reaction to an issue or pull request comment (200 if it exists)."""
        if content not in _REACTIONS:
            raise ValueError(f"{content!r} is not a GitHub reaction")
        await self._request(
            "POST",
            f"/issues/comments/{comment_id}/reactions",
            f"react to comment {comment_id}",
            body={"content": content},
        )

    async def issue(self, number: int) -> IssueText:
        """Issue `number`'s title, body and state as they are now."""
        data = await self._data("GET", f"/issues/{number}", f"read issue #{number}")
        return IssueText(
            number=int(data["number"]),
            title=str(data.get("title") or ""),
            body=str(data.get("body") or ""),
            state=str(data.get("state") or "open"),
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
                log.info("github.status_comment_recreated", issue=issue_number)
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
