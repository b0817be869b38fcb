"""The command job: a comment's `stop` or `retry`, acted on only once the commenter is checked."""

# The receiver queues every comment that starts with the policy's command (triggers.py); the
# payload says who commented, not what they may do, so nothing happens before the commenter's
# permission is read from GitHub here (the label's rule: `trigger.min_permission`). Below it:
# nothing at all, not even a reply, so an outsider cannot make the App talk. A writer's
# request that cannot be served gets one short reply, a comment marked with the command
# comment's id, so a re-run of the job edits it instead of posting another.

from __future__ import annotations

from frognano.app.attempt import RunDeps
from frognano.app.events.commands import BASE, RETRY, STOP, word_base
from frognano.app.events.decisions import CancelRequest, CommandRequest, RunRequest
from frognano.app.intake import Submission
from frognano.app.markdown import code
from frognano.app.permissions import role_at_least
from frognano.app.status_comment import reply
from frognano.github.auth import ACKNOWLEDGE
from frognano.github.client import RepoClient
from frognano.log import bound_contextvars, get_logger
from frognano.policy.models import Permission

__all__ = ["run_command"]

log = get_logger(__name__)


async def run_command(deps: RunDeps, request: CommandRequest) -> str:
    """Act on one command comment. Returns what happened: disabled, unauthorised, unknown,
    or the command and the queue's answer (`stop:cancelled`, `retry:queued`, ...)."""
    issue = request.issue
    with bound_contextvars(repo=issue.repo, issue=issue.number, delivery=request.delivery_id):
        policy = deps.policies.current.for_repo(issue.repo)
        if not policy.enabled:
            log.info("command.disabled")
            return "disabled"
        client = await deps.app.repo_client(
            issue.installation_id, issue.repo, issue.repo_id, ACKNOWLEDGE
        )
        allowed, role = await role_at_least(
            client, request.commenter, policy.trigger.min_permission
        )
        if not allowed:
            log.warning("command.unauthorised", commenter=request.commenter, role=role)
            return "unauthorised"
        command = policy.trigger.command
        word = request.words[0].casefold() if request.words else ""
        word = BASE if word.startswith(BASE) else word  # the branch is not logged
        if word == STOP:
            reason = f"@{request.commenter} commented {code(command + ' stop')}"
            cancel = CancelRequest(issue, request.delivery_id, reason)
            status = _status(await deps.queue.cancel(cancel, command=True))
            if status == "nothing_to_cancel":
                await _reply(client, request, "There is no queued or running run here to stop.")
        elif word == RETRY or word.startswith(BASE):
            # A run queued for someone who may not start one (a triage user's label) ends
            # refused, and what waits for it is queued then: this retry waits too, rather
            # than be answered "already running" and dropped.
            wait = await _held_by_outsider(deps, client, request, policy.trigger.min_permission)
            status = _status(await deps.queue.retry_run(_retry(request), wait=wait))
            if status == "already_running" and not wait:
                await _reply(
                    client,
                    request,
                    "A run is already queued or running on this issue: wait for it to end, "
                    f"or stop it with {code(command + ' stop')}, before asking for another.",
                )
        else:
            log.info("command.unknown", words=len(request.words))
            await _reply(
                client,
                request,
                f"FrogNano knows {code(command + ' stop')} (cancel this issue's run), "
                f"{code(command + ' retry')} (start a new run) and "
                f"{code(command + ' base=BRANCH')} (a new run on BRANCH); nothing was done.",
            )
            return "unknown"
        log.info("command.done", command=word, status=status)
        return f"{word}:{status}"


async def _held_by_outsider(
    deps: RunDeps, client: RepoClient, request: CommandRequest, least: Permission
) -> bool:
    """Whether the issue's queued or running run belongs to someone below `least` (its
    labeller's permission read from GitHub, as its own job will read it)."""
    issue = request.issue
    current = await deps.queue.current_run(issue.repo_id, issue.number)
    holder = (current or {}).get("labeller")
    if not holder:
        return False
    allowed, _role = await role_at_least(client, holder, least)
    return not allowed


def _status(submission: Submission) -> str:
    """What the queue did; for a re-run of the job, what it did the first time."""
    if submission.status != "duplicate":
        return submission.status
    return (submission.previous or "").split(":", 1)[0]


def _retry(request: CommandRequest) -> RunRequest:
    """The new run `retry` asks for, as if the commenter had added the label again."""
    return RunRequest(
        issue=request.issue,
        delivery_id=request.delivery_id,
        labeller=request.commenter,
        label=request.label,
        title=request.title,
        body=request.body,
        labeller_id=request.commenter_id,
        retry=True,
        base=word_base(request.words),
    )


async def _reply(client: RepoClient, request: CommandRequest, text: str) -> None:
    """One short answer to a writer's command, edited in place on a re-run."""
    await reply(client, request.issue.number, str(request.comment_id), request.commenter, text)
