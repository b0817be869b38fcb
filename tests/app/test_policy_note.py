"""A run on the last good policy says so on the issue: which file fails and why, inert."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from frognano.app.policy_note import policy_note
from frognano.app.status import status_marker
from frognano.policy.issues import PolicyIssue
from frognano.policy.loader import load_policies
from frognano.policy.store import InForce
from tests.app import test_worker
from tests.app.test_followup_job import command, doc_turns, first_run
from tests.app.test_worker import FIX, REPO, World
from tests.fakes.model_server import ScriptedModelServer
from tests.gfm import live

fake, world = test_worker.fake, test_worker.world  # the fixtures

HOSTILE = "@admin [x](https://evil.example/p) closes #1"
BROKEN = f'version: 1\ndefaults:\n  agent: {{max_steps: "{HOSTILE}"}}\n'


def _status_versions(world: World) -> list[str]:
    """Every text the status comment of issue 7 had, in order."""
    sent = world.fake.requests_to("POST", r"/issues/7/comments$")
    sent += world.fake.requests_to("PATCH", r"/issues/comments/\d+$")
    bodies = [str(record.json["body"]) for record in sent]
    return [body for body in bodies if body.startswith(status_marker(7))]


async def test_a_run_on_the_last_good_policy_says_so_in_its_status_comment(world: World) -> None:
    directory = world.deps.settings.policy_dir
    (directory / "50-team.yaml").write_text(BROKEN)
    store = world.deps.policies
    assert store.reload() is False
    when = store.loaded_at.strftime("%Y-%m-%d %H:%M UTC")
    with ScriptedModelServer(FIX) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(world.request()) == "queued"
        await world.work()
    assert len(world.fake.repo(REPO).pulls) == 1  # the last good policy ran it
    versions = _status_versions(world)
    assert len(versions) >= 3  # queued, working, published
    for body in versions:
        notes = [part for part in body.split("\n\n") if part.startswith("**Note: the policy")]
        assert len(notes) == 1, body
        (note,) = notes
        assert note.startswith(
            "**Note: the policy files currently fail to load** (`50-team.yaml:3:"
        )
        assert "defaults.agent.max_steps: input should be a valid integer" in note
        assert f"so this run uses the last policy that loaded, in force since {when}" in note
        assert "(policy generation 1)" in note
        assert str(directory) not in note  # the file by name, never the host's path
        assert "evil.example/p" in note  # the admin's text is there, readable...
        assert live(note) == []  # ...and nothing of it live
    assert "opened a draft pull request" in versions[-1]


async def test_a_run_on_a_policy_that_loads_has_no_note(world: World) -> None:
    with ScriptedModelServer(FIX) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(world.request()) == "queued"
        await world.work()
    versions = _status_versions(world)
    assert versions
    assert not any("policy files currently fail" in body for body in versions)


async def test_a_follow_up_on_the_last_good_policy_says_so_too(world: World) -> None:
    with ScriptedModelServer(FIX + doc_turns()) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        pull = await first_run(world)
        (world.deps.settings.policy_dir / "50-team.yaml").write_text(BROKEN)
        assert world.deps.policies.reload() is False
        await command(world, pull, "/frognano please document mean()")
        await world.work()
    (status,) = world.fake.repo(REPO).comments(7)
    assert "**FrogNano added a commit to its pull request**" in status["body"]
    assert "**Note: the policy files currently fail to load** (`50-team.yaml:3:" in status["body"]


def _standing(directory: Path, *errors: PolicyIssue) -> InForce:
    return InForce(load_policies(directory), 3, datetime(2026, 12, 4, 19, 5, tzinfo=UTC), errors)


def test_the_note_names_the_first_problem_and_counts_the_rest(tmp_path: Path) -> None:
    (tmp_path / "00-default.yaml").write_text("version: 1\n")
    assert policy_note(_standing(tmp_path)) is None
    first = PolicyIssue(tmp_path / "60-x.yaml", 4, "(yaml)", "mapping values\nare not allowed")
    second = PolicyIssue(tmp_path / "70-y.yaml", 1, "(file)", "the file is empty")
    note = policy_note(_standing(tmp_path, first, second))
    assert note is not None
    assert "(`60-x.yaml:4: (yaml): mapping values are not allowed` and 1 more problem)" in note
    assert "in force since 2026-12-04 19:05 UTC (policy generation 3)" in note
    gone = PolicyIssue(tmp_path, None, "(directory)", f"the policy directory {tmp_path} is gone")
    note = policy_note(_standing(tmp_path, gone))
    assert note is not None
    assert f"`the policy directory: (directory): the policy directory {tmp_path.name} is gone`" in (
        note
    )
    assert str(tmp_path) not in note
