"""The human-review gate: the pure decision, the marker, and the job against the fake GitHub."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from frognano.app.events.decisions import ReviewGateCheck
from frognano.app.ledger import LabelledIssue, Ledger
from frognano.app.review import (
    HUMAN_REVIEW_CHECK,
    LABELLED,
    VERIFICATION_CHECK,
    Excluded,
    ReviewOrigin,
    evaluate,
    parse_review_marker,
    permission_logins,
    review_marker,
)
from frognano.app.review_gate import review_gate
from frognano.github.auth import GitHubApp
from frognano.github.client import RepoClient
from frognano.github.errors import GitHubError, GitHubNotFound
from frognano.github.models import FileChange, Review
from frognano.github.retry import Transport
from tests.app.pushes import app_email, push
from tests.fakes.app_env import *  # noqa: F403 (the fixtures)
from tests.fakes.app_env import REPO
from tests.fakes.github import FakeGitHub
from tests.gfm import ATTACKS, live

HEAD = "a" * 40
OLD = "b" * 40
APP = "frognano[bot]"
LABELLER = "alice"
BRANCH = "frognano/issue-7"


def approve(user: str, commit: str | None = HEAD, *, kind: str = "User") -> Review:
    return Review(user=user, state="APPROVED", commit_id=commit, user_type=kind)


def review(user: str, state: str, commit: str = HEAD) -> Review:
    return Review(user=user, state=state, commit_id=commit, user_type="User")


STARTED = [Excluded(LABELLER, LABELLED)]


def decide(reviews: list[Review], **permissions: str) -> Any:
    return evaluate(
        reviews, head_sha=HEAD, excluded=STARTED, app_login=APP, permissions=permissions
    )


# -- evaluate: one rule at a time -----------------------------------------------------------


def test_no_review_names_what_is_missing() -> None:
    verdict = decide([])
    assert verdict.conclusion == "action_required"
    assert verdict.approver is None
    assert (
        "needs an approving review of aaaaaaa from someone with write access other than @alice"
        in verdict.summary
    )
    assert "did not count" not in verdict.summary


@pytest.mark.parametrize("role", ["write", "maintain", "admin"])
def test_writer_approval_of_the_head_passes(role: str) -> None:
    verdict = decide([approve("bob")], bob=role)
    assert (verdict.conclusion, verdict.approver) == ("success", "bob")
    assert verdict.title == "Approved by @bob"
    assert f"@bob ({role}) approved aaaaaaa" in verdict.summary


def test_labeller_cannot_approve_even_with_another_case() -> None:
    verdict = decide([approve("Alice")], Alice="admin")
    assert verdict.conclusion == "action_required"
    assert "@Alice applied the label that started the FrogNano run" in verdict.summary


def test_who_asked_for_a_round_or_pushed_is_excluded_too_and_named_with_why() -> None:
    excluded = [
        *STARTED,
        Excluded("Carol", "asked for round 2"),
        Excluded("dave", "pushed 1234567"),
    ]
    verdict = evaluate(
        [approve("carol"), approve("Dave")],
        head_sha=HEAD,
        excluded=excluded,
        app_login=APP,
        permissions={"carol": "write", "dave": "write"},
    )
    assert verdict.conclusion == "action_required"
    assert "other than @alice, @Carol and @dave" in verdict.summary
    assert "- @carol asked for round 2" in verdict.summary
    assert "- @Dave pushed 1234567" in verdict.summary
    assert "Who may not approve: whoever started or steered" in verdict.summary
    assert f"- @alice {LABELLED}\n- @Carol asked for round 2\n- @dave pushed 1234567" in (
        verdict.summary
    )


def test_one_person_excluded_twice_shows_both_reasons() -> None:
    excluded = [*STARTED, Excluded("alice", "asked for round 3"), Excluded("ALICE", LABELLED)]
    verdict = evaluate(
        [approve("alice")], head_sha=HEAD, excluded=excluded, app_login=APP, permissions={}
    )
    assert f"- @alice {LABELLED} and asked for round 3" in verdict.summary


def test_nobody_excluded_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="at least the labeller"):
        evaluate([], head_sha=HEAD, excluded=[], app_login=APP, permissions={})


@pytest.mark.parametrize(
    ("user", "kind"), [("helper[bot]", "User"), ("renovate", "Bot"), ("dependabot[bot]", "Bot")]
)
def test_bots_cannot_approve(user: str, kind: str) -> None:
    verdict = decide([approve(user, kind=kind)], **{user: "admin"})
    assert verdict.conclusion == "action_required"
    assert f"@{user} is a bot" in verdict.summary


def test_the_app_cannot_approve() -> None:
    verdict = decide([approve("FrogNano[bot]", kind="Bot")], **{"FrogNano[bot]": "admin"})
    assert verdict.conclusion == "action_required"
    assert "@FrogNano[bot] is this app" in verdict.summary


@pytest.mark.parametrize("role", ["read", "triage", "none", "release-manager"])
def test_approvers_without_write_do_not_count(role: str) -> None:
    verdict = decide([approve("rita")], rita=role)
    assert verdict.conclusion == "action_required"
    assert f"@rita has {role} access; write, maintain or admin is needed" in verdict.summary


def test_missing_permission_counts_as_none() -> None:
    assert "@rita has none access" in decide([approve("rita")]).summary


@pytest.mark.parametrize("commit", [OLD, None])
def test_approval_of_another_commit_does_not_count(commit: str | None) -> None:
    verdict = decide([approve("bob", commit)], bob="write")
    assert verdict.conclusion == "action_required"
    old = "bbbbbbb" if commit else "an unknown commit"
    assert f"@bob approved {old}, not the current head aaaaaaa" in verdict.summary


def test_later_changes_requested_withdraws_the_approval() -> None:
    verdict = decide([approve("bob"), review("bob", "CHANGES_REQUESTED")], bob="write")
    assert verdict.conclusion == "action_required"
    assert "@bob requested changes after approving" in verdict.summary


def test_dismissed_approval_does_not_count() -> None:
    # GitHub turns the dismissed review itself DISMISSED; the fake adds a new review.
    for reviews in ([review("bob", "DISMISSED")], [approve("bob"), review("bob", "DISMISSED")]):
        verdict = decide(reviews, bob="write")
        assert verdict.conclusion == "action_required"
        assert "@bob: their review was dismissed" in verdict.summary


def test_approving_again_after_changes_requested_counts() -> None:
    reviews = [approve("bob", OLD), review("bob", "CHANGES_REQUESTED"), approve("bob")]
    assert decide(reviews, bob="write").conclusion == "success"


def test_a_comment_review_leaves_the_approval_in_force() -> None:
    reviews = [approve("bob"), review("bob", "COMMENTED"), review("bob", "PENDING")]
    assert decide(reviews, bob="write").conclusion == "success"


def test_latest_review_is_per_user_case_insensitively() -> None:
    reviews = [approve("bob"), review("BOB", "CHANGES_REQUESTED"), approve("carol")]
    verdict = decide(reviews, bob="write", carol="write")
    assert verdict.approver == "carol"
    assert "@BOB requested changes after approving" in verdict.summary


def test_success_still_lists_approvals_that_did_not_count() -> None:
    verdict = decide([approve("alice"), approve("bob"), approve("dave")], bob="admin", dave="write")
    assert verdict.conclusion == "success"
    assert "@bob (admin), @dave (write) approved aaaaaaa" in verdict.summary
    assert "- @alice applied the label" in verdict.summary


def test_permission_logins_asks_only_about_candidates() -> None:
    reviews = [
        approve("bob"),
        approve("alice"),
        approve("helper[bot]"),
        approve(APP, kind="Bot"),
        approve("old", OLD),
        approve("gone"),
        review("gone", "DISMISSED"),
        review("cr", "CHANGES_REQUESTED"),
        review("chatty", "COMMENTED"),
        approve("Carol"),
    ]
    logins = permission_logins(reviews, head_sha=HEAD, excluded=STARTED, app_login=APP)
    assert logins == ["bob", "Carol"]


# -- the marker -----------------------------------------------------------------------------


DIGEST = "d" * 64


def test_marker_round_trip_and_format() -> None:
    marker = review_marker("20250101-120000-abc123", "alice", 7, text=DIGEST)
    assert marker == (
        '{"run":"20250101-120000-abc123","labeller":"alice","issue":7,"round":1,'
        f'"asked":["alice"],"answers":null,"text":"{DIGEST}"}}'
    )
    assert parse_review_marker(marker) == ReviewOrigin(
        "20250101-120000-abc123", "alice", 7, 1, ("alice",), None, DIGEST
    )
    followup = review_marker("r", "alice", 7, round=3, asked=["bob", "carol", "bob"],
                             answers="review-55")  # fmt: skip
    assert parse_review_marker(followup) == ReviewOrigin(
        "r", "alice", 7, 3, ("bob", "carol"), "review-55", None
    )


def test_a_marker_of_the_older_form_reads_as_a_round_of_unknown_asker() -> None:
    old = '{"run":"20250101-120000-abc123","labeller":"alice","issue":7}'
    assert parse_review_marker(old) == ReviewOrigin(
        "20250101-120000-abc123", "alice", 7, None, (), None, None
    )


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "alice",
        "[]",
        '{"run":"r","labeller":"alice"}',
        '{"run":"r","labeller":"alice","issue":7,"extra":1}',
        '{"run":"","labeller":"alice","issue":7}',
        '{"run":"r","labeller":"helper[bot]","issue":7}',
        '{"run":"r","labeller":"@alice","issue":7}',
        '{"run":"r","labeller":"alice","issue":true}',
        '{"run":"r","labeller":"alice","issue":0}',
        '{"run":"r","labeller":"alice","issue":"7"}',
        '{"run":"r","labeller":"alice","issue":7' + " " * 1500 + "}",
        '{"run":"r","labeller":"alice","issue":7,"round":1,"asked":[],"answers":null,"text":null}',
        '{"run":"r","labeller":"alice","issue":7,"round":0,"asked":["a"],"answers":null,"text":null}',
        '{"run":"r","labeller":"alice","issue":7,"round":2,"asked":["@a"],"answers":null,"text":null}',
        '{"run":"r","labeller":"alice","issue":7,"round":2,"asked":["a"],"answers":"x y",'
        '"text":null}',
        '{"run":"r","labeller":"alice","issue":7,"round":2,"asked":["a"],"answers":null,"text":"ab"}',
        '{"run":"r","labeller":"alice","issue":7,"round":2,"asked":["a"],"answers":null}',
    ],
)
def test_parse_rejects_anything_else(text: str | None) -> None:
    assert parse_review_marker(text) is None


@pytest.mark.parametrize(
    ("run_id", "labeller", "issue"),
    [("", "alice", 1), ("r", "x[bot]", 1), ("r", "alice", 0), ("r\n", "alice", 1)],
)
def test_marker_refuses_bad_values(run_id: str, labeller: str, issue: int) -> None:
    with pytest.raises(ValueError, match="is not"):
        review_marker(run_id, labeller, issue)


@pytest.mark.parametrize(
    "extra",
    [
        {"round": 0},
        {"asked": ["x[bot]"]},
        {"answers": "a b"},
        {"text": "abc"},
        {"asked": [f"u{n}" for n in range(30)]},
    ],
)
def test_marker_refuses_bad_round_values(extra: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"is not|at most"):
        review_marker("r", "alice", 1, **extra)


# -- the job against the fake GitHub --------------------------------------------------------


@dataclass
class Pull:
    number: int
    head: str


async def publish(
    fake: FakeGitHub, client: RepoClient, *, marker: str | None, content: bytes = b"fixed\n"
) -> Pull:
    """What the worker does: a commit by the app, its branch, the draft PR, the verification
    check run holding the marker."""
    fake.add_collaborator(REPO, LABELLER, "write")
    _, base = await client.default_branch()
    sha = await client.create_commit(base, [FileChange("src/app.py", "100644", content)], "Fix")
    await client.upsert_branch(BRANCH, sha)
    pull = await client.find_or_create_pull(BRANCH, "main", "Fix #7", "Refs #7")
    await verify(client, sha, marker)
    return Pull(pull.number, sha)


async def verify(client: RepoClient, sha: str, marker: str | None) -> None:
    run = await client.upsert_check_run(
        sha,
        VERIFICATION_CHECK,
        status="completed",
        conclusion="success",
        title="Tests pass",
        summary="3 passed",
    )
    if marker is not None:
        await client.set_check_run_external_id(run, marker)


async def gate(
    fake: FakeGitHub, app: GitHubApp, pull: Pull, ledger: Ledger, pusher: str | None = None
) -> str:
    """The review gate on `pull`; `pusher`: as for a synchronize delivery `pusher` sent."""
    repo = fake.repo(REPO)
    check = ReviewGateCheck(
        repo.installation_id, REPO, repo.id, pull.number, pull.head, "d-1", pusher
    )
    return await review_gate(app, check, ledger)


def human_check(fake: FakeGitHub, sha: str) -> dict[str, Any]:
    runs = [
        run
        for run in fake.repo(REPO).check_runs.values()
        if run["name"] == HUMAN_REVIEW_CHECK and run["head_sha"] == sha
    ]
    assert len(runs) == 1, runs
    assert runs[0]["status"] == "completed"
    return runs[0]


MARKER = review_marker("run-1", LABELLER, 7)


async def test_writer_approval_passes_and_permissions_are_read_from_the_api(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, ledger: Ledger
) -> None:
    pull = await publish(fake, client, marker=MARKER)
    fake.add_collaborator(REPO, "bob", "write")
    assert await gate(fake, app, pull, ledger) == "action_required"  # nobody has reviewed yet
    fake.submit_review(REPO, pull.number, user="bob", state="approved")
    assert await gate(fake, app, pull, ledger) == "success"
    check = human_check(fake, pull.head)  # edited in place, not a second run
    assert (check["conclusion"], check["output"]["title"]) == ("success", "Approved by @bob")

    fake.add_collaborator(REPO, "bob", "read")  # demoted: the next evaluation sees it
    assert await gate(fake, app, pull, ledger) == "action_required"
    assert "@bob has read access" in human_check(fake, pull.head)["output"]["summary"]
    asked = fake.requests_to("GET", r"/collaborators/.*/permission$")
    assert {r.path.rsplit("/", 2)[-2] for r in asked} == {"bob"}


@pytest.mark.parametrize(
    ("user", "setup", "why"),
    [
        (LABELLER, None, "@alice applied the label that started the FrogNano run"),
        ("helper[bot]", "bot", "@helper[bot] is a bot"),
        ("rita", "read", "@rita has read access; write, maintain or admin is needed"),
    ],
)
async def test_approvals_that_do_not_count(
    fake: FakeGitHub,
    app: GitHubApp,
    client: RepoClient,
    ledger: Ledger,
    *,
    user: str,
    setup: str | None,
    why: str,
) -> None:
    pull = await publish(fake, client, marker=MARKER)
    if setup == "bot":
        fake.add_collaborator(REPO, user, "write", bot=True)
    elif setup is not None:
        fake.add_collaborator(REPO, user, setup)
    fake.submit_review(REPO, pull.number, user=user, state="approved")
    assert await gate(fake, app, pull, ledger) == "action_required"
    summary = human_check(fake, pull.head)["output"]["summary"]
    assert f"needs an approving review of {pull.head[:7]} from someone with write" in summary
    assert "other than @alice" in summary
    assert f"- {why}" in summary


async def test_a_new_push_needs_a_new_approval(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, ledger: Ledger
) -> None:
    first = await publish(fake, client, marker=MARKER)
    fake.add_collaborator(REPO, "bob", "write")
    fake.submit_review(REPO, first.number, user="bob", state="approved")
    assert await gate(fake, app, first, ledger) == "success"
    # A new run of the same issue moves the branch to a new commit of the app's.
    second = await publish(fake, client, marker=review_marker("run-2", "carol", 7), content=b"2")
    assert (second.number, second.head != first.head) == (first.number, True)
    stale = Pull(first.number, first.head)  # the delivery names the old head: it is re-read
    assert await gate(fake, app, stale, ledger) == "action_required"
    summary = human_check(fake, second.head)["output"]["summary"]
    assert f"@bob approved {first.head[:7]}, not the current head {second.head[:7]}" in summary
    assert "other than @carol" in summary  # the new run's labeller
    assert human_check(fake, first.head)["conclusion"] == "success"  # no longer the head


@pytest.mark.parametrize("later", ["changes_requested", "dismissed"])
async def test_a_later_review_withdraws_the_approval(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, ledger: Ledger, later: str
) -> None:
    pull = await publish(fake, client, marker=MARKER)
    fake.add_collaborator(REPO, "bob", "write")
    fake.submit_review(REPO, pull.number, user="bob", state="approved")
    assert await gate(fake, app, pull, ledger) == "success"
    fake.submit_review(REPO, pull.number, user="bob", state=later)
    assert await gate(fake, app, pull, ledger) == "action_required"
    assert human_check(fake, pull.head)["conclusion"] == "action_required"


@pytest.mark.parametrize("marker", [None, "not json", '{"run":"r","labeller":"@x","issue":7}'])
async def test_without_a_marker_the_gate_explains_it_cannot_verify(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, ledger: Ledger, marker: str | None
) -> None:
    pull = await publish(fake, client, marker=marker)
    fake.add_collaborator(REPO, "bob", "write")
    fake.submit_review(REPO, pull.number, user="bob", state="approved")
    assert await gate(fake, app, pull, ledger) == "action_required"
    check = human_check(fake, pull.head)
    assert check["output"]["title"] == "Not a FrogNano run the gate can verify"
    assert "not opened by a FrogNano run it can verify" in check["output"]["summary"]


async def test_a_pull_request_a_human_opened_is_not_verified(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, ledger: Ledger, transport: Transport
) -> None:
    pull = await publish(fake, client, marker=MARKER)
    fake.add_collaborator(REPO, "bob", "write")
    bob = RepoClient(REPO, fake.add_user_token("bob"), transport=transport)
    try:  # bob re-opens the app's commit (marker and all) as his own pull request
        await bob.upsert_branch("bob/copy", pull.head, app_login="bob")
        mine = await bob.find_or_create_pull("bob/copy", "main", "Copy", "")
    finally:
        bob.close()
    fake.submit_review(REPO, mine.number, user="carol", state="approved")
    fake.add_collaborator(REPO, "carol", "write")
    assert await gate(fake, app, Pull(mine.number, pull.head), ledger) == "action_required"
    runs = [r for r in fake.repo(REPO).check_runs.values() if r["name"] == HUMAN_REVIEW_CHECK]
    assert "opened by @bob, not by this app" in runs[0]["output"]["summary"]


async def test_a_failure_blocks_the_check_and_raises(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, ledger: Ledger
) -> None:
    pull = await publish(fake, client, marker=MARKER)
    fake.add_collaborator(REPO, "bob", "write")
    fake.submit_review(REPO, pull.number, user="bob", state="approved")
    assert await gate(fake, app, pull, ledger) == "success"
    fake.fail_next("GET", r"/reviews$", status=404, body={"message": "Not Found"})
    with pytest.raises(GitHubNotFound):
        await gate(fake, app, pull, ledger)
    check = human_check(fake, pull.head)
    assert (check["conclusion"], check["output"]["title"]) == (
        "action_required",
        "The review gate could not decide",
    )


async def test_a_human_push_on_top_keeps_the_labeller_and_the_pusher_from_approving(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, ledger: Ledger, transport: Transport
) -> None:
    pull = await publish(fake, client, marker=MARKER)
    fake.add_collaborator(REPO, "bob", "write")
    pushed = await push(fake, REPO, BRANCH, pull.head, user="bob")
    fake.add_collaborator(REPO, "carol", "write")
    # The synchronize delivery bob's push sends records him as its pusher; his own approval
    # of what he pushed is not independent (this counted before the pusher was recorded).
    head = Pull(pull.number, pushed)
    assert await gate(fake, app, head, ledger, pusher="bob") == "action_required"
    fake.submit_review(REPO, pull.number, user=LABELLER, state="approved", commit_id=pushed)
    fake.submit_review(REPO, pull.number, user="bob", state="approved", commit_id=pushed)
    assert await gate(fake, app, head, ledger) == "action_required"
    summary = human_check(fake, pushed)["output"]["summary"]
    assert f"- @bob pushed {pushed[:7]}" in summary
    assert f"- @alice {LABELLED}" in summary
    fake.submit_review(REPO, pull.number, user="carol", state="approved", commit_id=pushed)
    assert await gate(fake, app, head, ledger) == "success"
    assert "@carol (write) approved" in human_check(fake, pushed)["output"]["summary"]


async def test_a_head_nobody_is_recorded_to_have_pushed_counts_no_approval(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, ledger: Ledger, transport: Transport
) -> None:
    pull = await publish(fake, client, marker=MARKER)
    fake.add_collaborator(REPO, "bob", "write")
    fake.add_collaborator(REPO, "carol", "write")
    pushed = await push(fake, REPO, BRANCH, pull.head, user="bob")
    # No synchronize delivery reached FrogNano: it cannot tell whether carol pushed it.
    fake.submit_review(REPO, pull.number, user="carol", state="approved", commit_id=pushed)
    assert await gate(fake, app, Pull(pull.number, pushed), ledger) == "action_required"
    check = human_check(fake, pushed)
    assert check["output"]["title"] == f"No record of who must not approve {pushed[:7]}"
    assert "has no record of who pushed it" in check["output"]["summary"]


async def test_a_commit_authored_as_the_app_is_not_frognanos(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, ledger: Ledger, transport: Transport
) -> None:
    """Bob gives his commit the App's e-mail address: GitHub links it to the App's account,
    but it carries none of FrogNano's records, so it is his push (and his approval of it does
    not count)."""
    pull = await publish(fake, client, marker=MARKER)
    fake.add_collaborator(REPO, "bob", "write")
    bot = fake.bot_login
    pushed = await push(fake, REPO, BRANCH, pull.head, user="bob", author_email=app_email(fake))
    commits = await client.pull_commits(pull.number)
    assert [c.author for c in commits] == [bot, bot]  # GitHub's link says: the App's
    fake.submit_review(REPO, pull.number, user="bob", state="approved", commit_id=pushed)
    assert await gate(fake, app, Pull(pull.number, pushed), ledger, "bob") == "action_required"
    assert f"- @bob pushed {pushed[:7]}" in human_check(fake, pushed)["output"]["summary"]


async def test_a_kept_issue_text_that_is_not_one_reads_as_none(ledger: Ledger) -> None:
    """FrogNano's own record, but read defensively: anything malformed trusts no text."""
    issue = LabelledIssue(7, "Title", "Body", "alice")
    await ledger.keep_issue("run-1", issue)
    await ledger.keep_issue("run-1", LabelledIssue(7, "Other", "Text", "eve"))  # first wins
    assert await ledger.labelled_issue("run-1") == issue
    assert await ledger.labelled_issue("run-2") is None
    for raw in (
        "not json",
        "[]",
        '{"issue": 7}',
        '{"issue":"7","title":"","body":"","labeller":""}',
    ):
        await ledger.redis.set(ledger.labelled_key("bad"), raw)
        assert await ledger.labelled_issue("bad") is None


async def test_a_failures_message_on_the_check_is_inert(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, ledger: Ledger
) -> None:
    # GitHub's own message is quoted in the check's summary; it must render nothing live.
    pull = await publish(fake, client, marker=MARKER)
    hostile = " ".join(ATTACKS.values())
    fake.fail_next("GET", r"/reviews$", status=422, body={"message": hostile})
    with pytest.raises(GitHubError):
        await gate(fake, app, pull, ledger)
    summary = human_check(fake, pull.head)["output"]["summary"]
    assert "evil.example" in summary
    assert live(summary) == []
