"""The worker end to end: a queued run against the fake GitHub, real Redis, a scripted model
and the local sandbox, then the human-review gate."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import inspect
import itertools
import json
import logging
import os
import subprocess
import sys
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from redis.asyncio import Redis

from frognano.app.command_job import run_command
from frognano.app.events.decisions import (
    CancelRequest,
    CommandRequest,
    IssueRef,
    ReviewGateCheck,
    RunRequest,
)
from frognano.app.intake import (
    COMMAND_JOB,
    DROP_TOKENS_JOB,
    FOLLOWUP_JOB,
    REVIEW_JOB,
    RUN_JOB,
    IntakeQueue,
)
from frognano.app.review import HUMAN_REVIEW_CHECK, VERIFICATION_CHECK
from frognano.app.run_issue import run_issue
from frognano.app.status import status_marker
from frognano.app.status_comment import reply_marker
from frognano.app.web.receiver import create_app
from frognano.app.worker import FrogNanoWorker, WorkerDeps, build_worker, functions
from frognano.github.client import RepoClient
from frognano.github.models import FileChange
from frognano.github.retry import RetryPolicy, Transport
from frognano.settings import Settings
from tests.app.web.conftest import REDIS_URL, serving
from tests.app.webhooks import payloads
from tests.conftest import processes_with
from tests.fakes.github import FakeGitHub
from tests.fakes.model_server import ScriptedModelServer, Turn

REPO = "acme/calc"
CALC = b"def mean(xs):\n    return sum(xs) / len(xs)\n"
TESTS = (
    b"import pytest\n\nfrom calc import mean\n\n\n"
    b"def test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
    b"def test_empty():\n    with pytest.raises(ValueError):\n        mean([])\n"
)
FILES = {"calc.py": CALC, "tests/test_calc.py": TESTS,
         "pytest.ini": b"[pytest]\naddopts = -p no:cacheprovider\n"}  # fmt: skip
GUARD = "    if not xs:\n        raise ValueError('mean() of an empty list')\n"
FIX = [
    Turn(calls=[("Read", {"file_path": "/workspace/calc.py"})]),
    Turn(calls=[("Edit", {"file_path": "/workspace/calc.py", "old_string": "    return sum",
                          "new_string": GUARD + "    return sum"})]),
    Turn(content="mean([]) now raises ValueError."),
]  # fmt: skip
COMMENT_IDS = itertools.count(5_000)


@dataclass
class World:
    fake: FakeGitHub
    worker: FrogNanoWorker
    queue_name: str
    repo_id: int
    job_ids: list[str]

    @property
    def deps(self) -> WorkerDeps:
        return self.worker.deps

    @property
    def redis(self) -> Redis:
        return self.deps.queue.redis

    async def submit(
        self, decision: RunRequest | ReviewGateCheck | CancelRequest | CommandRequest
    ) -> str:
        submission = await self.deps.queue.submit(decision)
        if submission.job_id:
            self.job_ids.append(submission.job_id)
        return submission.status

    def request(self, labeller: str = "alice") -> RunRequest:
        issue = IssueRef(installation_id=100, repo=REPO, repo_id=self.repo_id, number=7)
        return RunRequest(issue, f"d-{uuid.uuid4()}", labeller, "frognano", "mean([]) crashes",
                          "It should raise ValueError.")  # fmt: skip

    def command(self, text: str, commenter: str = "alice") -> CommandRequest:
        """`commenter`'s comment `/frognano <text>` on the issue, as the receiver queues it."""
        issue = IssueRef(installation_id=100, repo=REPO, repo_id=self.repo_id, number=7)
        comment_id = next(COMMENT_IDS)
        return CommandRequest(issue, f"c-{uuid.uuid4()}", commenter, None, comment_id,
                              tuple(text.split()), "frognano", "mean([]) crashes",
                              "It should raise ValueError.")  # fmt: skip

    async def done(self, job_id: str, within: float = 60) -> None:
        """Wait until arq has finished the job `job_id`."""
        for _ in range(int(within / 0.05)):
            if await self.redis.exists(f"arq:result:{job_id}"):
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"{job_id} did not finish")

    def receiver(self) -> FastAPI:
        """`frognano serve`'s app on this world's queue and policies."""
        return create_app(
            self.deps.settings,
            policies=self.deps.policies,
            registry=CollectorRegistry(),
            queue_for=lambda redis: IntakeQueue(
                redis, key_prefix=self.deps.queue.key_prefix, queue_name=self.queue_name
            ),
        )

    async def work(self) -> None:
        with warnings.catch_warnings():
            # arq 0.28 closes its pool with redis-py's deprecated close().
            warnings.filterwarnings("ignore", "Call to deprecated close", DeprecationWarning)
            await self.worker.run(burst=True)


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        server.add_repo(REPO, files=FILES, installation_id=100)
        for login, permission in (("alice", "write"), ("bob", "write"), ("eve", "read")):
            server.add_collaborator(REPO, login, permission)
        server.add_issue(REPO, 7, "mean([]) crashes", "It should raise ValueError.")
        yield server
        assert server.validation_errors == []
        server.assert_clean()


@pytest.fixture
async def world(fake: FakeGitHub, tmp_path: Path) -> AsyncIterator[World]:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "00-default.yaml").write_text("version: 1\n")
    prefix = f"fntest-{uuid.uuid4().hex[:8]}:"
    settings = Settings(
        webhook_secret=SecretStr("s"),
        redis_url=REDIS_URL,
        github_app_id=fake.app_id,
        github_private_key=SecretStr(fake.app_private_key.decode()),
        github_api_url=fake.base_url,
        policy_dir=policies,
        trajectory_dir=tmp_path / "trajectories",
    )
    transport = Transport(
        base_url=fake.base_url, seconds_between_requests=0, seconds_between_writes=0, timeout=10,
        retry=RetryPolicy(attempts=3, initial_delay=0.01, budget_seconds=10),
    )  # fmt: skip
    queue_name = f"{prefix}queue"
    worker = build_worker(
        settings,
        transport=transport,
        registry=CollectorRegistry(),
        key_prefix=prefix,
        queue_name=queue_name,
        poll_delay=0.05,
        watch_policies=False,
    )
    world = World(fake, worker, queue_name, int(fake.repo(REPO).id), [])
    async with worker:
        try:
            yield world
        finally:
            redis = world.redis
            keys = [key async for key in redis.scan_iter(match=f"{prefix}*")]
            for job_id in world.job_ids:
                keys += [
                    f"arq:{kind}:{job_id}" for kind in ("job", "result", "in-progress", "retry")
                ]
            if keys:
                await redis.delete(*keys)


def checks(fake: FakeGitHub, sha: str) -> dict[str, dict[str, Any]]:
    runs = fake.repo(REPO).check_runs.values()
    return {run["name"]: run for run in runs if run["head_sha"] == sha}


async def test_a_labelled_issue_becomes_a_draft_pr_a_human_must_approve(world: World) -> None:
    fake = world.fake
    with ScriptedModelServer(FIX) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(world.request()) == "queued"
        assert await world.submit(world.request(labeller="bob")) == "already_running"
        await world.work()
    repo = fake.repo(REPO)
    assert len(repo.pulls) == 1
    pull = next(iter(repo.pulls.values()))
    assert pull["draft"] is True
    assert pull["head"] == "frognano/issue-7"
    number = int(pull["number"])
    assert "Refs #7" in repo.issues[number]["body"]
    head = repo.branch_sha("frognano/issue-7")
    assert head is not None
    assert fake.file_at(REPO, head, "calc.py") == (CALC[:14].decode() + GUARD).encode() + CALC[14:]
    found = checks(fake, head)
    assert found[VERIFICATION_CHECK]["conclusion"] == "success"
    assert found[HUMAN_REVIEW_CHECK]["conclusion"] == "action_required"
    # The run's story, from the trajectory the worker kept under its run id, on the check.
    story = found[VERIFICATION_CHECK]["output"]["text"]
    assert "3 steps. Stopped: completed" in story
    assert "   1   Read   /workspace/calc.py  -> " in story
    assert "   2   Edit   /workspace/calc.py  -> The file /workspace/calc.py has been" in story
    assert "   3   answer -> mean([]) now raises ValueError." in story
    (kept,) = world.deps.settings.trajectory_dir.glob("*/attempt-1/trajectory.jsonl")
    assert kept.read_bytes().count(b"\n") > 3
    comments = repo.comments(7)
    assert len(comments) == 1
    assert comments[0]["body"].startswith(status_marker(7))
    assert f"/pull/{number}" in comments[0]["body"]
    link = f"/pull/{number}/checks?check_run_id={found[VERIFICATION_CHECK]['id']}"
    assert "step by step: [the verification check](" in comments[0]["body"]
    assert link in comments[0]["body"]
    assert "`bob` added the `frognano` label again" in comments[0]["body"]

    # The labeller's own approval does not count; another writer's does.
    for reviewer, expected in (("alice", "action_required"), ("bob", "success")):
        fake.submit_review(REPO, number, user=reviewer, state="APPROVED", commit_id=head)
        check = ReviewGateCheck(100, REPO, world.repo_id, number, head, f"r-{uuid.uuid4()}")
        assert await world.submit(check) == "queued"
        await world.work()
        assert checks(fake, head)[HUMAN_REVIEW_CHECK]["conclusion"] == expected


async def test_an_unauthorised_labeller_gets_no_run_and_no_comment(world: World) -> None:
    with ScriptedModelServer([]) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(world.request(labeller="eve")) == "queued"
        await world.work()
        assert model.requests == []
    repo = world.fake.repo(REPO)
    assert repo.pulls == {}
    assert repo.comments(7) == []
    assert world.deps.runs.labels(result="unauthorised")._value.get() == 1


async def test_a_run_that_starts_on_a_broken_policy_says_it_uses_the_last_good_one(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    policy = world.deps.settings.policy_dir / "00-default.yaml"
    policy.write_text("version: 1\nbogus: 1\n")
    assert world.deps.policies.reload() is False
    with ScriptedModelServer([]) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(world.request(labeller="eve")) == "queued"
        await world.work()
    # The last good policy decided (eve is below its `min_permission`), and the log says so.
    assert world.deps.runs.labels(result="unauthorised")._value.get() == 1
    (line,) = [
        r.getMessage() for r in caplog.records if "policy.last_good_in_force" in r.getMessage()
    ]
    assert f"{policy}:2: bogus: " in line
    assert "generation=1" in line


async def test_an_outsiders_queued_label_does_not_block_a_writers(world: World) -> None:
    """The attack: an outsider labels first, so a writer's label lands as `already_running`
    behind a run that will be refused; it must still get its run."""
    with ScriptedModelServer(FIX) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(world.request(labeller="eve")) == "queued"
        assert await world.submit(world.request(labeller="eve")) == "already_running"
        assert await world.submit(world.request(labeller="alice")) == "already_running"
        await world.work()
    world.job_ids += [
        key.decode().removeprefix("arq:result:")
        async for key in world.redis.scan_iter(match=f"arq:result:run:{world.repo_id}:7:*")
    ]
    repo = world.fake.repo(REPO)
    assert len(repo.pulls) == 1
    assert world.deps.runs.labels(result="unauthorised")._value.get() == 1
    assert world.deps.runs.labels(result="published")._value.get() == 1
    comments = repo.comments(7)
    assert len(comments) == 1
    assert "/pull/" in comments[0]["body"]
    assert "`eve`" not in comments[0]["body"]  # the outsider's label is not mentioned


async def test_unlabelling_cancels_a_running_job(world: World) -> None:
    marker = "sleep 63.4567"
    script = [Turn(calls=[("Bash", {"command": marker, "timeout": 600000})])]
    with ScriptedModelServer(script) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        request = world.request()
        assert await world.submit(request) == "queued"
        working = asyncio.create_task(world.work())
        assert await until(lambda: bool(processes_with(marker)), within=60)
        cancel = CancelRequest(
            request.issue, f"c-{uuid.uuid4()}", "the label was removed by @alice"
        )
        assert await world.submit(cancel) == "cancelled"
        await asyncio.wait_for(working, timeout=60)
    assert not processes_with(marker)
    repo = world.fake.repo(REPO)
    assert repo.pulls == {}
    (comment,) = repo.comments(7)
    assert "the label was removed by" in comment["body"]
    # The issue is free again: a new label starts a new run.
    assert await world.deps.queue.current_run(world.repo_id, 7) is None


async def test_a_writers_stop_cancels_the_run_and_a_readers_cancels_nothing(world: World) -> None:
    marker = "sleep 62.3456"
    script = [Turn(calls=[("Bash", {"command": marker, "timeout": 600000})])]
    with ScriptedModelServer(script) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(world.request()) == "queued"
        working = asyncio.create_task(world.work())
        assert await until(lambda: bool(processes_with(marker)), within=60)
        # eve may read, not write: her stop is checked and dropped, and the run goes on.
        assert await world.submit(world.command("stop", commenter="eve")) == "queued"
        await world.done(world.job_ids[-1])
        assert processes_with(marker)
        assert await world.submit(world.command("STOP")) == "queued"
        await asyncio.wait_for(working, timeout=60)
    assert not processes_with(marker)
    repo = world.fake.repo(REPO)
    assert repo.pulls == {}
    (comment,) = repo.comments(7)  # the status comment only: no reply to anyone
    assert "the run was cancelled** (@\u200dalice commented `/frognano stop`)" in comment["body"]
    assert world.deps.runs.labels(result="cancelled")._value.get() == 1
    assert await world.deps.queue.current_run(world.repo_id, 7) is None


async def test_retry_starts_a_new_run_on_the_same_branch_or_a_new_one(world: World) -> None:
    fake, repo = world.fake, world.fake.repo(REPO)
    with ScriptedModelServer(FIX * 3) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(world.request()) == "queued"
        await world.work()
        first = repo.branch_sha("frognano/issue-7")
        # The retry is a new run that publishes to the branch it finds holding only its commits.
        assert await world.submit(world.command("retry", commenter="bob")) == "queued"
        await world.work()
        assert world.deps.runs.labels(result="published")._value.get() == 2
        assert len(repo.pulls) == 1
        assert repo.branch_sha("frognano/issue-7") not in (None, first)
        # A human pushes to the branch: the next retry leaves it alone and opens a new one.
        transport = Transport(base_url=fake.base_url, seconds_between_requests=0,
                              seconds_between_writes=0, timeout=10)  # fmt: skip
        human = RepoClient(REPO, fake.add_user_token("bob"), transport=transport)
        theirs = await human.create_commit(
            repo.branch_sha("frognano/issue-7") or "", [FileChange("b.txt", "100644", b"b")], "mine"
        )
        await human.upsert_branch("frognano/issue-7", theirs, app_login="frognano[bot]")
        human.close()
        assert await world.submit(world.command("retry")) == "queued"
        await world.work()
    assert repo.branch_sha("frognano/issue-7") == theirs
    assert repo.branch_sha("frognano/issue-7-2") is not None
    assert sorted(pull["head"] for pull in repo.pulls.values()) == [
        "frognano/issue-7",
        "frognano/issue-7-2",
    ]
    assert world.deps.runs.labels(result="published")._value.get() == 3
    (comment,) = repo.comments(7)
    assert "/pull/" in comment["body"]


async def test_a_writer_whose_command_cannot_be_served_gets_one_reply(world: World) -> None:
    with ScriptedModelServer(FIX) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(world.request()) == "queued"
        busy, unknown = world.command("retry", commenter="bob"), world.command("frobnicate @eve")
        outsider = world.command("retry", commenter="eve")
        for command in (busy, unknown, outsider):
            assert await world.submit(command) == "queued"
        await world.work()
        # The job run again, as arq does after a crash: the reply is edited, not repeated.
        assert await run_command(world.deps, busy) == "retry:already_running"
        nothing = world.command("stop")
        assert await world.submit(nothing) == "queued"
        await world.work()
    repo = world.fake.repo(REPO)
    assert len(repo.pulls) == 1
    assert world.deps.runs.labels(result="published")._value.get() == 1
    (status,) = [c for c in repo.comments(7) if c["body"].startswith(status_marker(7))]
    assert "/pull/" in status["body"]
    # The command jobs run concurrently, so their replies come in any order: read them by
    # the marker that names the comment each answers (one each, none for the outsider).
    replies = {c["body"].split("\n", 1)[0]: c["body"] for c in repo.comments(7) if c is not status}
    assert len(replies) == len(repo.comments(7)) - 1 == 3
    busy_reply, unknown_reply, nothing_reply = (
        replies[reply_marker(str(command.comment_id))] for command in (busy, unknown, nothing)
    )
    assert "@bob A run is already queued or running on this issue" in busy_reply
    assert "`/frognano stop`, before asking for another." in busy_reply
    assert "knows `/frognano stop`" in unknown_reply
    assert "@eve" not in unknown_reply  # the comment's words are not echoed
    assert "no queued or running run here to stop" in nothing_reply


async def on_a_release_branch(world: World) -> str:
    """A human's `release/1.2` (main plus a RELEASE file), and a policy that allows
    `release/*` as a base; returns the branch's head."""
    fake = world.fake
    policy = world.deps.settings.policy_dir / "00-default.yaml"
    policy.write_text("version: 1\ndefaults:\n  publish: {base_branches: ['release/*']}\n")
    assert world.deps.policies.reload()
    transport = Transport(base_url=fake.base_url, seconds_between_requests=0,
                          seconds_between_writes=0, timeout=10)  # fmt: skip
    human = RepoClient(REPO, fake.add_user_token("bob"), transport=transport)
    _main, main = await human.default_branch()
    head = await human.create_commit(main, [FileChange("RELEASE", "100644", b"1.2\n")], "1.2")
    await human.upsert_branch("release/1.2", head, app_login="bob")
    human.close()
    return head


async def test_a_writer_picks_the_base_with_a_label_or_the_command(world: World) -> None:
    fake, repo = world.fake, world.fake.repo(REPO)
    release = await on_a_release_branch(world)
    with ScriptedModelServer(FIX * 2) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        labelled = dataclasses.replace(world.request(), label="frognano:release/1.2",
                                       base="release/1.2")  # fmt: skip
        assert await world.submit(labelled) == "queued"
        await world.work()
        branch = "frognano/release/1.2/issue-7"
        first = repo.branch_sha(branch)
        assert first is not None
        assert repo.commits[first]["parents"] == [release]  # the agent worked on the release
        assert fake.file_at(REPO, first, "RELEASE") == b"1.2\n"
        (pull,) = repo.pulls.values()
        assert (pull["head"], pull["base"]) == (branch, "release/1.2")
        # The command form: a new run on the same base, converging on the same pull request.
        assert await world.submit(world.command("base=release/1.2", commenter="bob")) == "queued"
        await world.work()
    assert world.deps.runs.labels(result="published")._value.get() == 2
    assert len(repo.pulls) == 1
    assert repo.branch_sha("frognano/issue-7") is None  # main's branch is left alone
    (comment,) = repo.comments(7)
    assert "/pull/" in comment["body"]


async def test_a_base_outside_the_policy_or_missing_is_refused_with_one_line(
    world: World,
) -> None:
    repo = world.fake.repo(REPO)
    await on_a_release_branch(world)
    repo.refs["refs/heads/hotfix/1"] = repo.refs["refs/heads/release/1.2"]
    with ScriptedModelServer([]) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        outside = dataclasses.replace(world.request(), label="frognano:hotfix/1", base="hotfix/1")
        assert await world.submit(outside) == "queued"
        await world.work()
        missing = world.command("retry base=release/9.9")
        assert await world.submit(missing) == "queued"
        await world.work()
        # An outsider's pick is not even answered.
        sneaky = dataclasses.replace(world.request("eve"), base="hotfix/1")
        assert await world.submit(sneaky) == "queued"
        await world.work()
        assert model.requests == []
    assert repo.pulls == {}
    assert world.deps.runs.labels(result="refused")._value.get() == 2
    assert world.deps.runs.labels(result="unauthorised")._value.get() == 1
    first, second = (c["body"] for c in repo.comments(7))
    assert first == (
        f"{reply_marker(outside.delivery_id)}\n@alice FrogNano did not start a run on"
        " `hotfix/1`: the policy's `publish.base_branches` does not list it."
    )
    assert second.endswith("on `release/9.9`: the repository has no such branch.")


async def until(predicate: Callable[[], bool], within: float) -> bool:
    for _ in range(int(within / 0.1)):
        if predicate():
            return True
        await asyncio.sleep(0.1)
    return False


def labeled_delivery(world: World, sender: str = "alice") -> tuple[bytes, dict[str, str]]:
    """A signed `issues.labeled` delivery with GitHub's own payload shape."""
    repo = payloads.repository(REPO, id=world.repo_id)
    the_issue = payloads.issue(7, title="mean([]) crashes", body="It should raise ValueError.",
                               repo=REPO)  # fmt: skip
    payload = payloads.issues_labeled(sender=payloads.user(sender), the_issue=the_issue, repo=repo)
    payload["installation"] = payloads.installation_ref(100)
    payloads.validate("issues", payload)
    body = payloads.encode(payload)
    headers = {
        "X-GitHub-Event": "issues",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": "sha256=" + hmac.new(b"s", body, hashlib.sha256).hexdigest(),
        "Content-Type": "application/json",
    }
    return body, headers


async def test_a_signed_delivery_through_the_receiver_ends_in_one_draft_pr(world: World) -> None:
    fake = world.fake
    app = world.receiver()
    # PR creation fails twice on the way (a 502, then a secondary rate limit): still one PR.
    fake.fail_next("POST", r"/repos/acme/calc/pulls$", status=502)
    fake.fail_next("POST", r"/repos/acme/calc/pulls$", status=403, headers={"Retry-After": "0"},
                   body={"message": "You have exceeded a secondary rate limit."})  # fmt: skip
    with ScriptedModelServer(FIX) as model, serving(app) as url:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        body, headers = labeled_delivery(world)
        async with httpx.AsyncClient(base_url=url) as http:
            answer = await http.post("/webhooks/github", content=body, headers=headers)
            again = await http.post("/webhooks/github", content=body, headers=headers)
        assert answer.status_code == 202, answer.text
        assert answer.json()["status"] == "queued"
        assert again.json()["status"] == "duplicate"
        world.job_ids.append(answer.json()["job_id"])
        await world.work()
        # The same job run again, as arq does after a crash: nothing is duplicated.
        job_id = answer.json()["job_id"]
        run_id = answer.json()["run_id"]
        request = world.request()
        await world.deps.queue.redis.hset(  # type: ignore[misc]
            world.deps.queue.run_key(world.repo_id, 7), mapping={"run_id": run_id, "job_id": job_id}
        )
        with ScriptedModelServer(FIX) as second:
            world.deps.settings = world.deps.settings.model_copy(
                update={"model_base_url": second.base_url}
            )
            rerun = dataclasses.replace(request, labeller_id=payloads.user("alice")["id"])
            assert await run_issue(world.deps, rerun, run_id=run_id, attempt=2) == "published"
    repo = fake.repo(REPO)
    assert len(repo.pulls) == 1
    assert len(repo.comments(7)) == 1
    assert len([r for r in repo.check_runs.values() if r["name"] == HUMAN_REVIEW_CHECK]) == 1
    creates = [r.status for r in fake.requests if r.method == "POST" and r.path.endswith("/pulls")]
    assert creates == [502, 403, 201]
    head = repo.branch_sha("frognano/issue-7")
    assert head is not None
    alice_id = payloads.user("alice")["id"]
    trailer = f"Co-authored-by: alice <{alice_id}+alice@users.noreply.github.com>"
    assert repo.commits[head]["message"].rstrip("\n").endswith(trailer)
    assert repo.commits[head]["verified"] is True


def worker_process_env(
    world: World, model_base_url: str, trajectory_dir: Path, **extra: str
) -> dict[str, str]:
    """The environment of a `tests.app.worker_process` worker on `world`'s queue, beating fast."""
    config = {
        "redis_url": REDIS_URL, "app_id": world.fake.app_id,
        "private_key": world.fake.app_private_key.decode(), "api_url": world.fake.base_url,
        "model_base_url": model_base_url, "policy_dir": str(world.deps.settings.policy_dir),
        "trajectory_dir": str(trajectory_dir), "prefix": world.deps.queue.key_prefix,
        "queue_name": world.queue_name, "heartbeat_seconds": 0.2, "heartbeat_ttl": 1.0, **extra,
    }  # fmt: skip
    return {**os.environ, "FNTEST_WORKER": json.dumps(config)}


async def test_a_killed_worker_is_replaced_and_nothing_is_duplicated(
    world: World, tmp_path: Path
) -> None:
    """SIGKILL the worker in the middle of a run: its sandbox dies with it, another worker
    notices the missing heartbeat, runs the job again, and publishes one PR and one comment."""
    marker = "sleep 64.5678"
    slow = [Turn(calls=[("Bash", {"command": marker, "timeout": 600000})])]
    settings = world.deps.settings
    with ScriptedModelServer(slow) as first:
        env = worker_process_env(world, first.base_url, tmp_path / "killed")
        assert await world.submit(world.request()) == "queued"
        proc = subprocess.Popen([sys.executable, "-m", "tests.app.worker_process"], env=env)  # noqa: ASYNC220
        try:
            assert await until(lambda: bool(processes_with(marker)), within=60)
        finally:
            proc.kill()
            proc.wait(timeout=30)
    assert await until(lambda: not processes_with(marker), within=15)
    world.deps.heartbeat_seconds, world.deps.heartbeat_ttl = 0.2, 1.0
    await asyncio.sleep(1.5)  # the dead worker's last heartbeat expires
    with ScriptedModelServer(FIX) as second:
        world.deps.settings = settings.model_copy(update={"model_base_url": second.base_url})
        await world.work()  # its start-up sweep releases the orphan, then runs it
    repo = world.fake.repo(REPO)
    assert len(repo.pulls) == 1
    (comment,) = repo.comments(7)
    assert "/pull/" in comment["body"]
    assert not processes_with(marker)


def test_each_job_takes_exactly_what_the_queue_enqueues() -> None:
    keyword = inspect.Parameter.KEYWORD_ONLY
    taken = {
        job.name: [
            (p.name, p.kind) for p in list(inspect.signature(job.coroutine).parameters.values())[1:]
        ]
        for job in functions()
    }
    assert taken == {
        RUN_JOB: [("run_id", keyword), ("request", keyword)],
        COMMAND_JOB: [("request", keyword)],
        FOLLOWUP_JOB: [("request", keyword)],
        REVIEW_JOB: [("request", keyword)],
        DROP_TOKENS_JOB: [("request", keyword)],
    }


def test_the_worker_command_refuses_to_start_without_the_app_settings(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    env["FROGNANO_POLICY_DIR"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "frognano", "worker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "FROGNANO_GITHUB_APP_ID" in done.stderr
