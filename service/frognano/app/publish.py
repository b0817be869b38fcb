"""Publish a verified, gated patch: signed commit, branch, draft pull request, checks."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from frognano.agent.story import Story
from frognano.app.bestof import BestOf
from frognano.app.bestof_texts import attempt_lines, write_attempt_checks
from frognano.app.commit import co_author_trailer, commit_message
from frognano.app.ledger import issue_digest
from frognano.app.review import (
    HUMAN_REVIEW_CHECK,
    LABELLED,
    VERIFICATION_CHECK,
    Excluded,
    evaluate,
    review_marker,
)
from frognano.app.review_gate import complete_review_check
from frognano.app.texts import (
    pull_request_body,
    pull_request_title,
    verification_check,
)
from frognano.github.client import RepoClient
from frognano.github.errors import BranchConflict
from frognano.github.models import FileChange, PullInfo
from frognano.log import get_logger
from frognano.policy.models import PublishPolicy
from frognano.run.report import RunReport

__all__ = ["PublishRequest", "Published", "branch_name", "publish", "write_verification_check"]

log = get_logger(__name__)

# The order of the steps, and why each is idempotent (a re-run after a crash at any point
# converges on one branch, one pull request and one check run of each name):
#
# 1. commit: blobs and trees are content-addressed. The commit itself is not (its date
#    differs), so when the branch already points at the app's commit with the same parent,
#    tree and message, that commit is kept and the new one is left unreferenced (inert):
#    the head, its check runs and any approval of it survive a re-run.
# 2. branch `<prefix>issue-<N>` (`<prefix><base>/issue-<N>` on a base a writer picked, so
#    runs on different bases never share one): `upsert_branch` creates it, leaves it, or
#    moves it only over the app's own commits since the base (a human's push on it raises
#    BranchConflict). A retry (`/frognano retry`, `fresh_branch`) goes on to `...issue-<N>-2`,
#    `-3`, ... instead, the first that is free or holds only the app's commits, so a re-run
#    finds the same one.
# 3. `FrogNano / verification` on the head, then its `external_id` (the review marker, which
#    only this App can write), then `FrogNano / human review` as `action_required`. Both come
#    before the pull request exists, so nobody can see or review the pull request while the
#    gate lacks the record of who must not approve. A completed human-review check already
#    on the head is left alone: the review gate owns it from then on (a re-run must not
#    turn an approval back into `action_required`). A best-of-N run's attempts not chosen
#    get `FrogNano / attempt N` (neutral) first, so the verification check can link them.
# 4. pull request: `find_or_create_pull(draft=True)` finds the open one for the branch (and
#    updates its body) or opens it; a repository without drafts gets a normal one, whose
#    body then says so.
# 5. labels (GitHub keeps a set), then reviewers: policy reviewers minus the labeller and
#    the app, minus those already requested or who already reviewed (re-requesting would
#    notify them again).
#
# The commit sends no author or committer, so GitHub signs it as the app ("Verified"); the
# labeller is credited with a `Co-authored-by:` trailer.


@dataclass(frozen=True)
class Published:
    """What `publish` made (or found, on a re-run)."""

    pull: PullInfo
    commit_sha: str
    branch: str
    verification_check_id: int
    review_check_id: int
    branch_action: Literal["created", "moved", "unchanged"] = "created"
    refused_reviewers: tuple[str, ...] = ()
    """Reviewers GitHub refused (not collaborators, for instance); the rest were requested."""

    @property
    def verification_url(self) -> str:
        """The verification check (the run's story) on the pull request's checks page."""
        return f"{self.pull.html_url}/checks?check_run_id={self.verification_check_id}"


MAX_RETRY_BRANCHES = 20
"""How many branches a retry tries (`issue-N`, `issue-N-2`, ...) before it gives up."""


def branch_name(
    policy: PublishPolicy, issue_number: int, attempt: int = 1, base: str | None = None
) -> str:
    """`<branch_prefix>issue-<N>`, e.g. `frognano/issue-7`; `frognano/issue-7-2` for the
    second branch a retry tries; `frognano/release/1.2/issue-7` on a picked base branch."""
    suffix = "" if attempt == 1 else f"-{int(attempt)}"
    on = "" if base is None else f"{base}/"
    return f"{policy.branch_prefix}{on}issue-{int(issue_number)}{suffix}"


async def write_verification_check(
    client: RepoClient,
    sha: str,
    report: RunReport,
    *,
    story: Story | None,
    marker: str,
    attempts: Sequence[str] = (),
) -> int:
    """`FrogNano / verification` on `sha` (the run's evidence and story), then its
    `external_id`: the review marker, FrogNano's record of the round, which only this App
    can write. A first run's commit and a follow-up's both get it this way."""
    conclusion, title, summary, text = verification_check(report, story=story, attempts=attempts)
    check_id = await client.upsert_check_run(
        sha,
        VERIFICATION_CHECK,
        status="completed",
        conclusion=conclusion,
        title=title,
        summary=summary,
        text=text,
    )
    await client.set_check_run_external_id(check_id, marker)
    return check_id


def _publishable(report: RunReport) -> None:
    """Invariant 5: nothing is published unless the gate passed and verification held."""
    gate, verification = report["gate"], report["verification"]
    gated = gate is not None and gate["passed"]
    verified = verification is not None and verification["held"]
    if not (report["outcome"]["patch_ready"] and gated and verified):
        raise ValueError(
            "refusing to publish: the report's patch is not ready (the gate must pass and "
            "verification must hold)"
        )


# -- reads RepoClient does not offer publicly ------------------------------------------------
# These go through RepoClient's own request plumbing (retries, token refresh); they belong in
# client.py as public methods (`branch_sha`, `git_commit`, `open_pull`).


async def _branch_head(client: RepoClient, branch: str) -> str | None:
    return await client._branch_sha(branch)


async def _git_commit(client: RepoClient, sha: str) -> dict[str, Any]:
    data = await client._data(
        "GET", f"/git/commits/{urllib.parse.quote(sha, safe='')}", f"read commit {sha}"
    )
    return dict(data)


async def _open_pull(client: RepoClient, branch: str, base: str) -> dict[str, Any] | None:
    return await client._find_pull(branch, base)


def _same_content(existing: Mapping[str, Any], new: Mapping[str, Any], app_login: str) -> bool:
    parents = [parent["sha"] for parent in existing.get("parents") or ()]
    return (
        parents == [parent["sha"] for parent in new.get("parents") or ()]
        and existing["tree"]["sha"] == new["tree"]["sha"]
        and existing.get("message") == new.get("message")
        and (existing.get("author") or {}).get("name") == app_login
    )


async def _commit(
    client: RepoClient,
    *,
    branch: str,
    base_sha: str,
    changes: Sequence[FileChange],
    message: str,
    co_author: str,
    app_login: str,
) -> str:
    current = await _branch_head(client, branch)
    sha = await client.create_commit(base_sha, changes, message, co_author=co_author)
    if current is None or current == sha:
        return sha
    existing, new = await _git_commit(client, current), await _git_commit(client, sha)
    if _same_content(existing, new, app_login):
        log.info("publish.branch_kept", branch=branch, sha=current)
        return current
    return sha


async def _human_review_check(
    client: RepoClient, head_sha: str, *, labeller: str, app_login: str
) -> int:
    existing = [
        run
        for run in await client.check_runs(head_sha, HUMAN_REVIEW_CHECK)
        if client.app_id is None or run.app_id == client.app_id
    ]
    if existing and existing[0].status == "completed":
        return existing[0].id
    # No review yet: the same verdict, and so the same texts, the review gate would write.
    excluded = [Excluded(labeller, LABELLED)]
    verdict = evaluate(
        [], head_sha=head_sha, excluded=excluded, app_login=app_login, permissions={}
    )
    return await complete_review_check(client, head_sha, verdict)


async def _reviewers(
    client: RepoClient,
    pull_number: int,
    previous: Mapping[str, Any] | None,
    *,
    policy: PublishPolicy,
    labeller: str,
    app_login: str,
) -> tuple[str, ...]:
    skip = {labeller.casefold(), app_login.casefold()}
    teams_skip: set[str] = set()
    if previous is not None:
        skip |= {
            str(user.get("login", "")).casefold()
            for user in previous.get("requested_reviewers") or ()
        }
        teams_skip = {
            str(team.get("slug", "")).casefold() for team in previous.get("requested_teams") or ()
        }
        skip |= {review.user.casefold() for review in await client.reviews(pull_number)}
    reviewers = [name for name in policy.reviewers if name.casefold() not in skip]
    teams = [name for name in policy.team_reviewers if name.casefold() not in teams_skip]
    refused = await client.request_reviewers(pull_number, reviewers, teams)
    return tuple(refused)


@dataclass(frozen=True)
class PublishRequest:
    """What one run asks `publish` to put on GitHub: its verified files and report, the
    base they go on, and the issue as labelled with who labelled it."""

    report: RunReport
    changes: Sequence[FileChange]
    """The run's verified files, exactly the tree the patch's tests ran in."""
    base_sha: str
    base_branch: str
    issue_number: int
    issue_title: str
    issue_body: str
    """The issue as labelled: the check's marker keeps their digest."""
    labeller: str
    labeller_id: int | None
    """The webhook's `sender.id`: the co-author trailer survives a rename; None uses the
    login only."""
    run_id: str
    trajectory_location: str
    story: Story | None
    """The run's trajectory condensed for the verification check (None: none kept)."""
    fresh_branch: bool = False
    """A retry: a branch a human pushed to is passed over for the next free one instead of
    raising BranchConflict."""
    picked_base: bool = False
    """A base a writer chose, not the default branch: the branch is named after
    `base_branch` and compared with it."""
    best_of: BestOf | None = None
    """A best-of-N run's attempts (`report` and `changes` are its chosen one's): each gets a
    line in the verification check and the body, each one not chosen a check run."""


async def publish(
    client: RepoClient, request: PublishRequest, *, policy: PublishPolicy, app_login: str
) -> Published:
    """Publish the run's verified changes on the request's base as a draft pull request
    into its base branch (see the comment above for the steps). Idempotent: calling it
    again with the same request, after a crash or not, changes nothing more. Raises
    ValueError when the report is not publishable, BranchConflict when a human pushed to
    the branch, and GitHubError when GitHub fails beyond the retries."""
    report, changes, issue_number = request.report, request.changes, request.issue_number
    base_sha, base_branch, labeller = request.base_sha, request.base_branch, request.labeller
    labeller_id, run_id = request.labeller_id, request.run_id
    issue_title, picked_base = request.issue_title, request.picked_base
    _publishable(report)
    digest = issue_digest(issue_title, request.issue_body)
    marker = review_marker(run_id, labeller, issue_number, text=digest)  # validates the login

    message = commit_message(
        issue_number,
        issue_title,
        report["summary"],
        co_author_login=labeller,
        co_author_id=labeller_id,
    )
    co_author = co_author_trailer(labeller, labeller_id).removeprefix("Co-authored-by: ")
    attempts = MAX_RETRY_BRANCHES if request.fresh_branch else 1
    for attempt in range(1, attempts + 1):
        on = base_branch if picked_base else None
        branch = branch_name(policy, issue_number, attempt, on)
        head = await _commit(
            client,
            branch=branch,
            base_sha=base_sha,
            changes=changes,
            message=message,
            co_author=co_author,
            app_login=app_login,
        )
        try:
            action = await client.upsert_branch(branch, head, app_login=app_login, base=on)
        except BranchConflict:
            if attempt == attempts:
                raise
            log.info("publish.branch_taken", repo=client.full_name, branch=branch)
        else:
            break
    bound = log.bind(repo=client.full_name, issue=issue_number, run_id=run_id, branch=branch)

    lines: list[str] = []
    links: dict[int, str] = {}
    if request.best_of is not None:
        links = await write_attempt_checks(client, head, request.best_of)
        lines = attempt_lines(request.best_of, links)
    verification_id = await write_verification_check(
        client, head, report, story=request.story, marker=marker, attempts=lines
    )
    if request.best_of is not None:  # the body links the chosen attempt's story too
        links[request.best_of.choice.number] = client.check_run_url(verification_id)
        lines = attempt_lines(request.best_of, links)
    review_id = await _human_review_check(client, head, labeller=labeller, app_login=app_login)

    previous = await _open_pull(client, branch, base_branch)
    draft = True if previous is None else bool(previous.get("draft", False))

    def body(draft: bool) -> str:
        return pull_request_body(
            report,
            issue_number=issue_number,
            link=policy.link,
            run_id=run_id,
            trajectory_location=request.trajectory_location,
            draft=draft,
            attempts=lines,
        )

    pull_title = pull_request_title(issue_number, issue_title)
    pull = await client.find_or_create_pull(
        branch, base_branch, pull_title, body(draft), draft=True
    )
    if pull.draft != draft:  # drafts are not available here: say so in the body
        pull = await client.find_or_create_pull(
            branch, base_branch, pull_title, body(pull.draft), draft=True
        )
    await client.add_labels(pull.number, policy.labels)
    refused = await _reviewers(
        client, pull.number, previous, policy=policy, labeller=labeller, app_login=app_login
    )
    bound.info(
        "publish.published",
        pull=pull.number,
        draft=pull.draft,
        head=head,
        branch_action=action,
        refused_reviewers=list(refused),
    )
    return Published(
        pull=pull,
        commit_sha=head,
        branch=branch,
        verification_check_id=verification_id,
        review_check_id=review_id,
        branch_action=action,
        refused_reviewers=refused,
    )
