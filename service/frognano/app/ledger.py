"""FrogNano's own records in Redis: the issue as labelled, and who pushed to its pull requests."""

# Nothing the model, the repository or an outsider writes is read back as FrogNano's record of
# what it did (invariant 6). What only the worker writes lives here and in the `external_id`
# of the App's own check runs (review.py); what is read back from GitHub's editable texts
# (issue bodies, commit messages, pull request bodies) is never trusted as such a record.
#
# Redis keys (`P` is the intake queue's `key_prefix`):
#
#     P labelled:{run_id}            JSON {title, body, labeller, issue}: the issue exactly as
#                                    the webhook that started the run carried it, written by
#                                    the run job once the labeller is authorised. Every
#                                    follow-up round of the pull request that run opened works
#                                    from it, never from the issue as it reads now (its author
#                                    may edit it after a writer labelled it). EX RECORD_TTL.
#     P pushed:{repo_id}:{pull}      hash {head sha: login}: the sender of each
#                                    `pull_request.synchronize` delivery of one of FrogNano's
#                                    pull requests, i.e. who pushed that head. Whoever pushed
#                                    to it may not approve it. EX RECORD_TTL, renewed on write.
#
# The verification check's marker also holds a digest of the labelled text, so a follow-up
# can still go on when this record is gone but the issue reads exactly as it was labelled.

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from redis.asyncio import Redis

__all__ = ["RECORD_TTL_SECONDS", "LabelledIssue", "Ledger", "issue_digest"]

RECORD_TTL_SECONDS = 400 * 24 * 3600
"""How long a record outlives its last write: longer than a draft usually stays open."""


def issue_digest(title: str, body: str) -> str:
    """SHA-256 (hex) of an issue's title and body, unambiguous about where one ends."""
    return hashlib.sha256(json.dumps([title, body], ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class LabelledIssue:
    """An issue's text as it was when a writer labelled it (or asked for a retry)."""

    issue: int
    title: str
    body: str
    labeller: str

    @property
    def digest(self) -> str:
        return issue_digest(self.title, self.body)


class Ledger:
    """FrogNano's records in Redis (see the comment above); only the worker writes them."""

    def __init__(self, redis: Redis, *, key_prefix: str, ttl: int = RECORD_TTL_SECONDS) -> None:
        self.redis, self.key_prefix, self.ttl = redis, key_prefix, ttl

    def labelled_key(self, run_id: str) -> str:
        return f"{self.key_prefix}labelled:{run_id}"

    def pushed_key(self, repo_id: int, pull: int) -> str:
        return f"{self.key_prefix}pushed:{repo_id}:{pull}"

    async def keep_issue(self, run_id: str, issue: LabelledIssue) -> None:
        """Keep the text run `run_id` was started with; the first write wins (a re-run of the
        job carries the same text)."""
        data = {"issue": issue.issue, "title": issue.title, "body": issue.body,
                "labeller": issue.labeller}  # fmt: skip
        await self.redis.set(self.labelled_key(run_id), json.dumps(data), ex=self.ttl, nx=True)

    async def labelled_issue(self, run_id: str) -> LabelledIssue | None:
        """The text run `run_id` was started with, or None when no such record is kept (or
        what is kept is not one: then no text is trusted, and the caller says so)."""
        raw = await self.redis.get(self.labelled_key(run_id))
        if raw is None:
            return None
        try:
            data = json.loads(raw)
            issue, title, body = data["issue"], data["title"], data["body"]
            labeller = data["labeller"]
        except (ValueError, TypeError, KeyError):
            return None
        typed = isinstance(issue, int) and all(isinstance(v, str) for v in (title, body, labeller))
        return LabelledIssue(issue, title, body, labeller) if typed else None

    async def record_push(self, repo_id: int, pull: int, head_sha: str, pusher: str) -> None:
        """`pusher` pushed `head_sha` onto pull request `pull` (a synchronize delivery)."""
        key = self.pushed_key(repo_id, pull)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(key, head_sha, pusher)
            pipe.expire(key, self.ttl)
            await pipe.execute()

    async def pushers(self, repo_id: int, pull: int) -> dict[str, str]:
        """Who pushed each recorded head of pull request `pull` (sha -> login)."""
        raw = await self.redis.hgetall(self.pushed_key(repo_id, pull))  # type: ignore[misc]
        return {_text(sha): _text(login) for sha, login in raw.items()}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
