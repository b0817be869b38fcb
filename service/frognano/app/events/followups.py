"""A follow-up on one of the App's pull requests: the request, read from a delivery (pure)."""

# A writer's comment on the pull request that starts with the policy's command asks for one
# more round on it (docs/github-app.md, "Follow-ups on a pull request"). The receiver queues
# the comment as it came; the worker checks the commenter, the pull request and the cap.

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from frognano.app.events import fields
from frognano.app.events.commands import parse_command
from frognano.app.events.webhooks import Delivery

__all__ = ["FollowUpRequest", "Kind", "review_follow_up"]

Kind = Literal["comment", "review", "review_comment"]


@dataclass(frozen=True)
class FollowUpRequest:
    """A pull request comment starting with the command, by someone not yet authorised."""

    installation_id: int
    repo: str
    repo_id: int
    pull_number: int
    delivery_id: str
    commenter: str
    commenter_id: int | None
    comment_id: int
    """The comment's id: its reaction, and the key of the App's one reply to it."""
    body: str
    """The whole comment (or the review's body): the review to answer. Untrusted."""
    kind: Kind = "comment"
    """`review`: `comment_id` is a submitted review's id, whose line comments belong to it;
    `review_comment`: the id of one line comment of a review. Stored: absent (queued before it
    existed), null or a kind this worker does not know reads as a comment."""

    @property
    def reply_key(self) -> str:
        """The key of the App's one reply to this request (replies.reply_marker), and of the
        request in the marker of the commit answering it (review.py)."""
        kind = self.kind.replace("_", "-")
        return str(self.comment_id) if self.kind == "comment" else f"{kind}-{self.comment_id}"


def review_follow_up(
    delivery: Delivery,
    installation_id: int,
    pull: tuple[str, int, int],
    app_login: str | None,
    command_for: Callable[[str], str],
) -> FollowUpRequest | None:
    """The follow-up a submitted review or a new review comment asks for when its body starts
    with the command and a human wrote it (`pull`: repo, repo id, number); None: a review goes
    to the gate only, a review comment is ignored."""
    repo, repo_id, number = pull
    event = (delivery.event, delivery.action)
    kind: Kind
    if event == ("pull_request_review", "submitted"):
        key, kind = "review", "review"
    elif event == ("pull_request_review_comment", "created"):
        key, kind = "comment", "review_comment"
    else:
        return None
    review = delivery.payload.get(key)
    if not isinstance(review, dict) or not isinstance(review.get("body"), str):
        return None
    body = str(review["body"])
    try:
        sender, bot = fields.sender(delivery.payload, app_login)
        review_id = fields.integer(review, "id", f"{key}.id")
    except fields.Missing:
        return None
    if bot is not None or parse_command(body, command_for(repo)) is None:
        return None
    who = fields.sender_id(delivery.payload)
    return FollowUpRequest(
        installation_id, repo, repo_id, number, delivery.id, sender, who, review_id, body, kind
    )
