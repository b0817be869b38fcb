"""What a webhook delivery asks FrogNano to do. Pure: no I/O, never raises on a payload."""

# `decide` routes a parsed `Delivery` to exactly one `Decision`, through the handlers registered
# on `ROUTER` by event and action (a new trigger is one handler and its `@ROUTER.register`):
#
# | delivery                                                   | decision          |
# |------------------------------------------------------------|-------------------|
# | `ping`                                                     | Ignored ("pong")  |
# | `issues.labeled` (`LABEL` or `LABEL:BRANCH`) by a human    | RunRequest        |
# | `issues.unlabeled` of `LABEL` or `LABEL:BRANCH`            | CancelRequest     |
# | `issues.closed`                                            | CancelRequest     |
# | `issue_comment.created` starting with the command, by a    | CommandRequest    |
# |   human, on an issue / on a pull request                   | / FollowUpRequest |
# | `pull_request_review.submitted` / `.dismissed`, and        | ReviewGateCheck   |
# |   `pull_request.synchronize` / `.reopened`, on an app PR   | (FollowUpRequest) |
# | `pull_request_review_comment.created`, with the command    | FollowUpRequest   |
# | `installation.*`, `installation_repositories.*`            | DropTokens        |
# | anything else                                              | Ignored (reason)  |
#
# Rules shared by all of them:
#
# - An event that needs an installation (everything but `ping`) and has none came from a
#   repository or organization webhook rather than the App's: Ignored.
# - `issues` events on pull requests (the issue has a `pull_request` key) are Ignored.
# - Bots never start a run: a sender whose `type` is `Bot`, whose login ends in `[bot]`, or who
#   is the app itself (invariant 6). Bots other than the app *may* cancel: a bot closing the
#   issue or removing the label makes the work moot. The app's own `issues` events never
#   cancel, so its housekeeping never stops its own run. No bot's comment or review commands.
# - Review and push events are routed whoever sent them: the gate decides which approvals count.
# - Labels are compared case-insensitively, as GitHub does. `LABEL` is `trigger.label`;
#   `LABEL:BRANCH` asks for a run on BRANCH (checked by the worker).
#
# Nothing here authorises anyone: the payload says who acted, not what they may do. The worker
# checks permissions through the API (invariant 6), and the review gate re-reads reviews and
# the head commit, since deliveries can arrive late or out of order.

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from frognano.app.events import fields
from frognano.app.events.commands import label_base, parse_command
from frognano.app.events.decisions import (
    CancelRequest,
    CommandRequest,
    Decision,
    DropTokens,
    Ignored,
    IssueRef,
    ReviewGateCheck,
    RunRequest,
)
from frognano.app.events.followups import FollowUpRequest, review_follow_up
from frognano.app.events.webhooks import Delivery
from frognano.github.models import is_bot


@dataclass(frozen=True)
class Lookups:
    """What a handler may ask beyond the payload; see `decide` for each."""

    label_for: Callable[[str], str | None]
    app_login: str | None
    branch_prefix_for: Callable[[str], str]
    command_for: Callable[[str], str]


Handler = Callable[[Delivery, int, Lookups], Decision]
"""Decides on a delivery that came with an installation, whose id is the second argument."""


class Router:
    """Handlers by event and action, each delivery routed to exactly one (or Ignored).

    The idea of gidgethub's `Router`, with one difference: a delivery yields one decision, so
    two handlers for the same event and action are an error rather than both called.
    """

    def __init__(self) -> None:
        self._handlers: dict[tuple[str, str | None], Handler] = {}
        """`(event, None)`: every action of the event, the missing one included."""
        self._events: set[str] = set()
        """Events with a handler for some action: their other actions are "not used"."""
        self._answers: dict[str, Decision] = {}

    def register(self, event: str, *actions: str) -> Callable[[Handler], Handler]:
        """Decorator: the handler decides on `event` with one of `actions` (no actions: with
        any action). Deliveries without an installation never reach it."""

        def add(handler: Handler) -> Handler:
            for action in actions or (None,):
                self._claim(event, action)
                self._handlers[event, action] = handler
            self._events.add(event)
            return handler

        return add

    def answer(self, event: str, decision: Decision) -> None:
        """Every `event` delivery gets `decision`, whatever it carries, installation or not."""
        self._claim(event, None)
        self._answers[event] = decision

    def routes(self) -> list[tuple[str, str | None]]:
        """The registered (event, action) pairs; None stands for any action."""
        return [*((event, None) for event in self._answers), *self._handlers]

    def route(self, delivery: Delivery, lookups: Lookups) -> Decision:
        """The decision of the handler for `delivery`, or Ignored saying why none applies."""
        event, action = delivery.event, delivery.action
        what = event if action is None else f"{event}.{action}"
        if event in self._answers:
            return self._answers[event]
        handler = self._handlers.get((event, None)) or self._handlers.get((event, action))
        if handler is None:
            return Ignored(
                f"{what} is not used" if event in self._events else f"event {event} is not used"
            )
        if delivery.installation_id is None:
            return Ignored(
                f"{what} has no installation: it came from a repository or organization"
                " webhook, not the GitHub App's"
            )
        return handler(delivery, delivery.installation_id, lookups)

    def _claim(self, event: str, action: str | None) -> None:
        """Refuse a second route for what is routed already (a wildcard overlaps every action)."""
        if (
            event in self._answers
            or (event, None) in self._handlers
            or (event, action) in self._handlers
            or (action is None and event in self._events)
        ):
            raise ValueError(f"{event}.{action or '*'} is routed already")


ROUTER = Router()
ROUTER.answer("ping", Ignored("pong"))


def decide(
    delivery: Delivery,
    *,
    label_for: Callable[[str], str | None],
    app_login: str | None,
    branch_prefix_for: Callable[[str], str],
    command_for: Callable[[str], str],
) -> Decision:
    """Route `delivery` through `ROUTER`.

    `label_for(repo)` is the policy's trigger label for `owner/name`, or None where the policy
    disables the app. `app_login` is the app's bot login (`<slug>[bot]`) when known.
    `branch_prefix_for(repo)` is the prefix of the branches the app pushes its PRs from.
    `command_for(repo)` is the word an issue comment starts with to command the app.
    Each callback is asked only when the rule needs it; their exceptions propagate. Nothing
    in the payload makes `decide` raise: a field it needs that is missing or mistyped gives
    `Ignored` naming the field.
    """
    lookups = Lookups(label_for, app_login, branch_prefix_for, command_for)
    return ROUTER.route(delivery, lookups)


@ROUTER.register("issues", "labeled", "unlabeled", "closed")
def _issues(  # noqa: PLR0911 - one return per rule
    delivery: Delivery, installation_id: int, lookups: Lookups
) -> Decision:
    payload, action = delivery.payload, delivery.action
    try:
        repo, repo_id = fields.repository(payload)
        issue = fields.obj(payload, "issue")
        number = fields.integer(issue, "number", "issue.number")
        sender, bot = fields.sender(payload, lookups.app_login)
    except fields.Missing as exc:
        return Ignored(f"issues.{action}: {exc}")
    if "pull_request" in issue:
        return Ignored(f"#{number} in {repo} is a pull request, not an issue")
    ref = IssueRef(installation_id=installation_id, repo=repo, repo_id=repo_id, number=number)
    if action == "closed":
        if bot == "self":
            return Ignored(f"issues.closed of {repo}#{number} was sent by this app itself")
        return CancelRequest(ref, delivery.id, f"the issue was closed by @{sender}")

    wanted = lookups.label_for(repo)
    if wanted is None:
        return Ignored(f"the policy disables FrogNano for {repo}")
    try:
        label = fields.string(fields.obj(payload, "label"), "name", "label.name")
    except fields.Missing as exc:
        return Ignored(f"issues.{action}: {exc}")
    base = label_base(label, wanted)
    if base is None:
        return Ignored(f"the label {label!r} is not the trigger label {wanted!r}")
    if action == "unlabeled":
        if bot == "self":
            return Ignored(f"the label {label} was removed from {repo}#{number} by this app itself")
        return CancelRequest(ref, delivery.id, f"the label {label} was removed by @{sender}")

    if bot is not None:
        return Ignored(f"@{sender} is a bot; bots never start a run")
    if issue.get("state") == "closed":
        return Ignored(f"{repo}#{number} is closed")
    try:
        title = fields.string(issue, "title", "issue.title")
    except fields.Missing as exc:
        return Ignored(f"issues.labeled: {exc}")
    return RunRequest(
        issue=ref,
        delivery_id=delivery.id,
        labeller=sender,
        label=label,
        title=title,
        body=fields.text(issue, "body"),
        labeller_id=fields.sender_id(payload),
        base=base or None,
    )


@ROUTER.register("issue_comment", "created")
def _issue_comment(  # noqa: PLR0911 - one return per rule
    delivery: Delivery, installation_id: int, lookups: Lookups
) -> Decision:
    payload = delivery.payload
    try:
        repo, repo_id = fields.repository(payload)
        issue = fields.obj(payload, "issue")
        number = fields.integer(issue, "number", "issue.number")
        comment = fields.obj(payload, "comment")
        comment_id = fields.integer(comment, "id", "comment.id")
        sender, bot = fields.sender(payload, lookups.app_login)
        title = fields.string(issue, "title", "issue.title")
    except fields.Missing as exc:
        return Ignored(f"issue_comment.created: {exc}")
    label = lookups.label_for(repo)
    if label is None:
        return Ignored(f"the policy disables FrogNano for {repo}")
    command = lookups.command_for(repo)
    words = parse_command(fields.text(comment, "body"), command)
    if words is None:
        return Ignored(f"the comment does not start with the command {command}")
    if bot == "self":
        return Ignored(f"the comment on {repo}#{number} is this app's own")
    if bot is not None:
        return Ignored(f"@{sender} is a bot; bots never command FrogNano")
    if "pull_request" in issue:  # a follow-up: the worker checks the PR (a closed one: a reply)
        who, body = fields.sender_id(payload), fields.text(comment, "body")
        return FollowUpRequest(installation_id, repo, repo_id, number, delivery.id, sender, who,
                               comment_id, body)  # fmt: skip
    if issue.get("state") == "closed":
        return Ignored(f"{repo}#{number} is closed")
    return CommandRequest(
        issue=IssueRef(installation_id=installation_id, repo=repo, repo_id=repo_id, number=number),
        delivery_id=delivery.id,
        commenter=sender,
        commenter_id=fields.sender_id(payload),
        comment_id=comment_id,
        words=words,
        label=label,
        title=title,
        body=fields.text(issue, "body"),
    )


@ROUTER.register("pull_request_review", "submitted", "dismissed")
@ROUTER.register("pull_request_review_comment", "created")
@ROUTER.register("pull_request", "synchronize", "reopened")
def _pull_request(  # noqa: PLR0911 - one return per rule
    delivery: Delivery, installation_id: int, lookups: Lookups
) -> Decision:
    # Not `label_for`: a PR the app opened stays gated even if the policy later disables the repo.
    app_login = lookups.app_login
    what = f"{delivery.event}.{delivery.action}"
    payload = delivery.payload
    try:
        repo, repo_id = fields.repository(payload)
        pull = fields.obj(payload, "pull_request")
        number = fields.integer(pull, "number", "pull_request.number")
        head = fields.obj(pull, "head", "pull_request.head")
        ref = fields.string(head, "ref", "pull_request.head.ref")
        sha = fields.string(head, "sha", "pull_request.head.sha")
        author = fields.obj(pull, "user", "pull_request.user")
        author_login = fields.string(author, "login", "pull_request.user.login")
    except fields.Missing as exc:
        return Ignored(f"{what}: {exc}")
    pr = f"{repo}#{number}"
    prefix = lookups.branch_prefix_for(repo)
    if not prefix:
        return Ignored(f"{pr}: no branch prefix is configured for {repo}")
    if not ref.startswith(prefix):
        return Ignored(f"{pr} is not one of the app's pull requests (branch {ref!r})")
    head_repo = head.get("repo")
    if (head_repo.get("id") if isinstance(head_repo, dict) else None) != repo_id:
        return Ignored(f"{pr} comes from another repository, not one of the app's pull requests")
    if app_login is not None:
        if author_login.casefold() != app_login.casefold():
            return Ignored(f"{pr} was opened by @{author_login}, not by this app")
    elif not is_bot(author_login, author.get("type")):
        return Ignored(f"{pr} was opened by @{author_login}, who is not a bot")
    pulled = (repo, repo_id, number)
    if found := review_follow_up(delivery, installation_id, pulled, app_login, lookups.command_for):
        return found  # a human's review starting with the command; its job runs the gate first
    if delivery.event == "pull_request_review_comment":
        return Ignored(f"the review comment on {pr} does not start with the command or is a bot's")
    pushed = (delivery.event, delivery.action) == ("pull_request", "synchronize")
    pusher = fields.sender_login(payload) if pushed else None
    return ReviewGateCheck(installation_id, repo, repo_id, number, sha, delivery.id, pusher)


@ROUTER.register("installation")
@ROUTER.register("installation_repositories")
def _installation(delivery: Delivery, installation_id: int, lookups: Lookups) -> Decision:
    del lookups
    return DropTokens(installation_id=installation_id, delivery_id=delivery.id)
