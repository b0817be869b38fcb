"""Follow-ups end to end: a command on the App's pull request, real Redis, the worker, the
fake GitHub and a scripted model: one more verified commit on the branch, or one reply."""

from __future__ import annotations

import hashlib
import hmac
import uuid

import httpx

from frognano.app.events.decisions import ReviewGateCheck
from frognano.app.events.followups import FollowUpRequest
from frognano.app.followup_job import run_follow_up
from frognano.app.review import HUMAN_REVIEW_CHECK, VERIFICATION_CHECK, parse_review_marker
from frognano.app.status import status_marker
from frognano.app.status_comment import reply_marker
from tests.app import test_worker
from tests.app.test_worker import CALC, FIX, GUARD, REPO, World, checks
from tests.app.web.conftest import serving
from tests.app.webhooks import payloads
from tests.fakes.model_server import ScriptedModelServer, Turn

fake, world = test_worker.fake, test_worker.world  # the fixtures
BRANCH = "frognano/issue-7"
DOC = '    """The mean of xs."""\n'


def doc_turns(doc: str = DOC) -> list[Turn]:
    """The follow-up's agent: a docstring under `def mean(xs):`."""
    return [
        Turn(calls=[("Read", {"file_path": "/workspace/calc.py"})]),
        Turn(calls=[("Edit", {"file_path": "/workspace/calc.py", "old_string": "def mean(xs):\n",
                              "new_string": "def mean(xs):\n" + doc})]),
        Turn(content="Documented mean()."),
    ]  # fmt: skip


async def first_run(world: World) -> int:
    """The run that opens the pull request; its number."""
    assert await world.submit(world.request()) == "queued"
    await world.work()
    (pull,) = world.fake.repo(REPO).pulls.values()
    return int(pull["number"])


async def command(world: World, pull: int, text: str, commenter: str = "alice") -> FollowUpRequest:
    """`commenter`'s comment on the pull request, as the receiver queues it."""
    comment_id = world.fake.add_comment(REPO, pull, text, user=commenter)
    request = FollowUpRequest(100, REPO, world.repo_id, pull, f"f-{uuid.uuid4()}", commenter,
                              None, comment_id, text)  # fmt: skip
    submission = await world.deps.queue.submit(request)
    assert submission.status == "queued"
    assert submission.job_id is not None
    world.job_ids.append(submission.job_id)
    return request


def reactions(world: World, pull: int, comment_id: int) -> list[tuple[str, str]]:
    (comment,) = [c for c in world.fake.repo(REPO).comments(pull) if c["id"] == comment_id]
    return [(r["user"], r["content"]) for r in comment.get("reactions", [])]


def app_commits(world: World, head: str) -> list[str]:
    """The branch's commits from `head` down to the original base, newest first."""
    repo, out, sha = world.fake.repo(REPO), [], head
    base = world.fake.repo(REPO).branch_sha("main")
    while sha != base:
        out.append(sha)
        sha = repo.commits[sha]["parents"][0]
    return out


async def test_a_writers_command_adds_one_verified_commit_that_needs_review_again(
    world: World,
) -> None:
    gh, repo = world.fake, world.fake.repo(REPO)
    with ScriptedModelServer(FIX + doc_turns()) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        pull = await first_run(world)
        first = repo.branch_sha(BRANCH)
        assert first is not None
        gh.submit_review(REPO, pull, user="bob", state="approved", commit_id=first)
        asked = await command(world, pull, "/frognano please\n\nDocument mean().")
        await world.work()
    head = repo.branch_sha(BRANCH)
    assert head is not None
    assert head != first
    assert app_commits(world, head) == [head, first]  # exactly one new commit, on the old head
    fixed = (CALC[:14].decode() + GUARD).encode() + CALC[14:]
    assert gh.file_at(REPO, head, "calc.py") == fixed.replace(b":\n", b":\n" + DOC.encode(), 1)
    assert "Co-authored-by: alice" in repo.commits[head]["message"]
    found = checks(gh, head)
    assert found[VERIFICATION_CHECK]["conclusion"] == "success"
    assert found[HUMAN_REVIEW_CHECK]["conclusion"] == "action_required"  # bob's was of `first`
    assert reactions(world, pull, asked.comment_id) == [("frognano[bot]", "eyes")]
    (status,) = repo.comments(7)
    assert status["body"].startswith(status_marker(7))
    assert f"/pull/{pull}" in status["body"]
    assert f"check_run_id={found[VERIFICATION_CHECK]['id']}" in status["body"]
    assert "**FrogNano added a commit to its pull request** (https://" in status["body"]
    assert f"round 2, commit `{head[:12]}`, answering the review." in status["body"]
    assert "opened" not in status["body"]  # not the first run's words
    # The follow-up's first message held the comment and the earlier diff.
    first_message = model.requests[len(FIX)]["messages"][1]["content"]
    assert "Document mean()." in first_message
    assert "raise ValueError" in first_message


async def test_a_second_command_during_a_follow_up_runs_after_it(world: World) -> None:
    repo = world.fake.repo(REPO)
    world.deps.busy_retry_seconds = 0.2
    second_doc = '    """The arithmetic mean of xs."""\n'
    turns = FIX + doc_turns() + doc_turns(second_doc)
    with ScriptedModelServer(turns) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        pull = await first_run(world)
        first = repo.branch_sha(BRANCH)
        await command(world, pull, "/frognano document it")
        await command(world, pull, "/frognano and say arithmetic", commenter="bob")
        await world.work()
    head = repo.branch_sha(BRANCH)
    assert head is not None
    commits = app_commits(world, head)
    assert len(commits) == 3
    assert commits[-1] == first
    calc = world.fake.file_at(REPO, head, "calc.py") or b""
    assert DOC.encode() in calc
    assert second_doc.encode() in calc
    assert checks(world.fake, head)[HUMAN_REVIEW_CHECK]["conclusion"] == "action_required"


async def test_a_readers_command_and_the_cap_reached(world: World) -> None:
    repo = world.fake.repo(REPO)
    policy = world.deps.settings.policy_dir / "00-default.yaml"
    policy.write_text("version: 1\ndefaults:\n  publish: {max_followups: 1}\n")
    world.deps.policies.reload()
    with ScriptedModelServer(FIX + doc_turns()) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        pull = await first_run(world)
        first = repo.branch_sha(BRANCH)
        outsider = await command(world, pull, "/frognano delete everything", commenter="eve")
        await world.work()
        assert repo.branch_sha(BRANCH) == first
        assert reactions(world, pull, outsider.comment_id) == []
        assert len(repo.comments(pull)) == 1  # the command itself: no reply to a reader
        await command(world, pull, "/frognano document it")
        await world.work()
        second = repo.branch_sha(BRANCH)
        assert second != first
        capped = await command(world, pull, "/frognano once more", commenter="bob")
        await world.work()
    assert repo.branch_sha(BRANCH) == second
    (answer,) = [c for c in repo.comments(pull) if c["user"] == "frognano[bot]"]
    assert answer["body"].startswith(reply_marker(str(capped.comment_id)))
    assert "@bob This pull request has had its 1 follow-up commit" in answer["body"]
    assert reactions(world, pull, capped.comment_id) == []


async def test_a_signed_pull_request_comment_through_the_receiver_adds_a_commit(
    world: World,
) -> None:
    repo = world.fake.repo(REPO)
    app = world.receiver()
    with ScriptedModelServer(FIX + doc_turns()) as model, serving(app) as url:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        pull = await first_run(world)
        first = repo.branch_sha(BRANCH)
        text = "/frognano document mean()"
        comment_id = world.fake.add_comment(REPO, pull, text, user="alice")
        the_pull = payloads.issue(pull, title="Fix #7", body="Refs #7", repo=REPO,
                                  pull_request=True)  # fmt: skip
        payload = payloads.issue_comment(
            text,
            sender=payloads.user("alice"),
            the_issue=the_pull,
            repo=payloads.repository(REPO, id=world.repo_id),
            comment_id=comment_id,
        )
        payload["installation"] = payloads.installation_ref(100)
        payloads.validate("issue_comment", payload)
        body = payloads.encode(payload)
        headers = {
            "X-GitHub-Event": "issue_comment",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": "sha256=" + hmac.new(b"s", body, hashlib.sha256).hexdigest(),
            "Content-Type": "application/json",
        }
        async with httpx.AsyncClient(base_url=url) as http:
            answer = await http.post("/webhooks/github", content=body, headers=headers)
        assert answer.status_code == 202, answer.text
        assert answer.json()["status"] == "queued"
        world.job_ids.append(answer.json()["job_id"])
        await world.work()
    head = repo.branch_sha(BRANCH)
    assert head is not None
    assert app_commits(world, head) == [head, first]
    assert reactions(world, pull, comment_id) == [("frognano[bot]", "eyes")]


async def test_a_writers_review_with_the_command_is_one_follow_up_with_all_its_comments(
    world: World,
) -> None:
    gh, repo = world.fake, world.fake.repo(REPO)
    line_comments = [
        ("calc.py", 1, "@@ -1,2 +1,4 @@\n def mean(xs):", "Document this function."),
        ("calc.py", 3, "@@ -1,2 +1,4 @@\n+        raise", "And say why it raises."),
    ]
    with ScriptedModelServer(FIX + doc_turns()) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        pull = await first_run(world)
        first = repo.branch_sha(BRANCH)
        body = "/frognano fix these"
        review = gh.submit_review(
            REPO, pull, user="bob", state="commented", body=body, comments=line_comments
        )
        request = FollowUpRequest(100, REPO, world.repo_id, pull, f"r-{uuid.uuid4()}", "bob",
                                  None, int(review["id"]), body, "review")  # fmt: skip
        submission = await world.deps.queue.submit(request)
        assert submission.job_id is not None
        world.job_ids.append(submission.job_id)
        await world.work()
        head = repo.branch_sha(BRANCH)
        assert head is not None
        assert app_commits(world, head) == [head, first]
        assert len(model.requests) == len(FIX) + len(doc_turns())  # one follow-up, not two
        first_message = model.requests[len(FIX)]["messages"][1]["content"]
        assert "Document this function." in first_message
        assert "And say why it raises." in first_message
        assert "+        raise" in first_message
        # A review without the command only re-evaluates the gate. Bob asked for this round:
        # his approval of it is not independent (it counted before rounds recorded who
        # asked); carol's is.
        gh.add_collaborator(REPO, "carol", "write")
        for reviewer, expected in (("bob", "action_required"), ("carol", "success")):
            gh.submit_review(REPO, pull, user=reviewer, state="approved", commit_id=head)
            check = ReviewGateCheck(100, REPO, world.repo_id, pull, head, f"r-{uuid.uuid4()}")
            assert await world.submit(check) == "queued"
            await world.work()
            assert checks(gh, head)[HUMAN_REVIEW_CHECK]["conclusion"] == expected
    assert repo.branch_sha(BRANCH) == head
    summary = checks(gh, head)[HUMAN_REVIEW_CHECK]["output"]["summary"]
    assert "- @bob asked for round 2" in summary
    assert len(model.requests) == len(FIX) + len(doc_turns())


async def test_one_review_comment_with_the_command_is_a_follow_up_for_that_comment(
    world: World,
) -> None:
    gh, repo = world.fake, world.fake.repo(REPO)
    with ScriptedModelServer(FIX + doc_turns()) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        pull = await first_run(world)
        first = repo.branch_sha(BRANCH)
        text = "/frognano document this function"
        hunk = "@@ -1,2 +1,4 @@\n def mean(xs):"
        review = gh.submit_review(
            REPO, pull, user="bob", state="commented", comments=[("calc.py", 1, hunk, text)]
        )
        comment_id = int(review["id"]) + 1  # the fake numbers the comment after its review
        request = FollowUpRequest(100, REPO, world.repo_id, pull, f"rc-{uuid.uuid4()}", "bob",
                                  None, comment_id, text, "review_comment")  # fmt: skip
        submission = await world.deps.queue.submit(request)
        assert submission.job_id is not None
        world.job_ids.append(submission.job_id)
        await world.work()
    head = repo.branch_sha(BRANCH)
    assert head is not None
    assert app_commits(world, head) == [head, first]
    first_message = model.requests[len(FIX)]["messages"][1]["content"]
    assert "document this function" in first_message
    assert "def mean(xs):" in first_message
    assert "calc.py" in first_message
    (line_comment,) = repo.reviews[pull][-1]["comments"]
    assert [(r["user"], r["content"]) for r in line_comment["reactions"]] == [
        ("frognano[bot]", "eyes")
    ]


async def test_the_job_run_again_after_its_commit_adds_nothing(world: World) -> None:
    repo = world.fake.repo(REPO)
    with ScriptedModelServer(FIX + doc_turns()) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        pull = await first_run(world)
        asked = await command(world, pull, "/frognano document it")
        await world.work()
        head = repo.branch_sha(BRANCH)
        # As arq runs a job again after a crash: the round's record on its commit (the App's
        # own check run) names the request, so it is done.
        again = await run_follow_up(world.deps, asked, job_id="followup:again", attempt=2)
    assert again == "committed"
    assert repo.branch_sha(BRANCH) == head
    marker = parse_review_marker(checks(world.fake, head or "")[VERIFICATION_CHECK]["external_id"])
    assert marker is not None
    assert (marker.round, marker.asked, marker.answers) == (2, ("alice",), asked.reply_key)
    assert "FrogNano-Answers" not in repo.commits[head or ""]["message"]
    assert len(model.requests) == len(FIX) + len(doc_turns())
