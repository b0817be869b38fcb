"""The App's short replies on an issue: one comment per request, found again by its marker."""

from __future__ import annotations

from frognano.app.markdown import mention
from frognano.github.client import RepoClient
from frognano.log import get_logger

__all__ = ["reply", "reply_marker"]

log = get_logger(__name__)


def reply_marker(key: str) -> str:
    """The hidden marker of the App's reply to the request `key` (a comment or delivery id)."""
    safe = "".join(c for c in key if c.isalnum() or c in "-_.")
    return f"<!-- frognano:reply:{safe} -->"


async def reply(client: RepoClient, issue_number: int, key: str, login: str, text: str) -> None:
    """Tell `login` why their request was not served, once: a re-run edits the same comment.
    `text` is FrogNano's words, untrusted parts already made inert (markdown.py)."""
    body = f"{mention(login)} {text}"
    await client.upsert_status_comment(issue_number, reply_marker(key), body)
    log.info("reply.posted", issue=issue_number, key=key)
