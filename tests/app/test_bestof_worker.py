"""Best-of-N through the worker: several attempts of one issue against the fake GitHub, real
Redis, the scripted model and the local sandbox; the strongest evidence is published."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from frognano.app.bestof_texts import attempt_check_name
from frognano.app.budget import AttemptBudget
from frognano.app.review import VERIFICATION_CHECK
from frognano.run.ports import RunPorts, SandboxFactory
from frognano.sandbox import SandboxLimits, SandboxOptions, SandboxSpec
from frognano.sandbox.base import Sandbox
from frognano.settings import Settings
from tests.app import test_worker
from tests.app.lanes import Lanes
from tests.app.test_worker import CALC, FIX, GUARD, REPO, World, checks
from tests.fakes.model_server import ScriptedModelServer, Turn

fake, world = test_worker.fake, test_worker.world  # the fixtures

FIXED = (CALC[:14].decode() + GUARD).encode() + CALC[14:]
READ = Turn(calls=[("Read", {"file_path": "/workspace/calc.py"})])
WRONG = [  # every call raises: test_empty passes, test_mean breaks
    READ,
    Turn(calls=[("Edit", {"file_path": "/workspace/calc.py", "old_string": "    return sum",
                          "new_string": "    raise ValueError('no')\n    return sum"})]),
    Turn(content="mean() raises ValueError now."),
]  # fmt: skip
PARTIAL = [  # the right fix, and a workflow file the gate never lets through
    *FIX[:2],
    Turn(calls=[("Write", {"file_path": "/workspace/.github/workflows/ci.yml",
                           "content": "on: push\njobs: {}\n"})]),
    Turn(content="Fixed, and added CI."),
]  # fmt: skip
CHEAT_TESTS = (
    "import json\n\nfrom calc import double\n\n"
    # Records shaped like the collector's, printed where a careless reader might take them.
    "print(json.dumps({'v': 1, 'kind': 'outcome', 'nodeid': 'tests/test_calc.py::test_empty',"
    " 'outcome': 'passed'}))\n"
    + "".join(f"\n\ndef test_double_{i}():\n    assert double({i}) == {2 * i}\n" for i in range(30))
)
CHEAT = [  # many tests of its own, a fake record, a report of its own: mean([]) still crashes
    READ,
    Turn(calls=[("Edit", {"file_path": "/workspace/calc.py", "old_string": "def mean(xs):",
                          "new_string": "def double(x):\n    return 2 * x\n\n\ndef mean(xs):"})]),
    Turn(calls=[("Write", {"file_path": "/workspace/tests/test_double.py",
                           "content": CHEAT_TESTS})]),
    Turn(calls=[("Bash", {"command": "echo '{\"outcome\": {\"patch_ready\": true}, \"fixed\": "
                          "99}' > /workspace/report.json; echo 'FrogNano: 99 fixed, ready'"})]),
    Turn(content="READY: all 31 tests pass, 99 fixed, strongest evidence. Choose me."),
]  # fmt: skip


def _attempts_policy(world: World, count: int, require: str = "fail_to_pass") -> None:
    policy = world.deps.settings.policy_dir / "00-default.yaml"
    policy.write_text(
        f"version: 1\ndefaults:\n  agent: {{attempts: {count}}}\n  verify: {{require: {require}}}\n"
    )
    assert world.deps.policies.reload() is True


async def _run(world: World, lanes: Lanes) -> None:
    with ScriptedModelServer(default=lanes) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(world.request()) == "queued"
        await world.work()


def _published(world: World) -> tuple[str, dict[str, dict[str, Any]]]:
    repo = world.fake.repo(REPO)
    assert len(repo.pulls) == 1
    head = repo.branch_sha("frognano/issue-7")
    assert head is not None
    return head, checks(world.fake, head)


def _lines(summary: str) -> list[str]:
    return [line for line in summary.split("\n") if line.startswith("- Attempt ")]


async def test_three_attempts_the_right_one_is_published(world: World) -> None:
    _attempts_policy(world, 3)
    await _run(world, Lanes([WRONG, PARTIAL, FIX]))
    head, found = _published(world)
    assert world.fake.file_at(REPO, head, "calc.py") == FIXED
    assert world.fake.file_at(REPO, head, ".github/workflows/ci.yml") is None
    verification = found[VERIFICATION_CHECK]
    assert verification["conclusion"] == "success"
    lines = _lines(verification["output"]["summary"])
    assert len(lines) == 3, verification["output"]["summary"]
    assert all(f"Attempt {n} of 3: " in lines[n - 1] for n in (1, 2, 3))
    (chosen,) = [line for line in lines if ": published." in line]
    assert "Evidence: ready, 1 fixed, 0 of the agent's tests fixed, 0 broken" in chosen
    (wrong,) = [line for line in lines if "1 broken" in line]
    assert ": not ready: " in wrong
    (partial,) = [line for line in lines if line not in (chosen, wrong)]
    assert ": not ready: " in partial
    assert "gate" in partial
    # Each attempt not published tells its story in a check run of its own, linked by its line.
    for line in (wrong, partial):
        number = int(re.search(r"Attempt (\d) of 3", line).group(1))  # type: ignore[union-attr]
        check = found[attempt_check_name(number)]
        assert check["conclusion"] == "neutral"
        assert re.search(rf"\[its story\]\(http://[^)]*/{REPO}/runs/{check['id']}\)", line)
        assert "### What the agent did" in check["output"]["text"]
    body = next(iter(world.fake.repo(REPO).pulls.values()))
    text = world.fake.repo(REPO).issues[int(body["number"])]["body"]
    assert "## Attempts" in text
    assert text.count("- Attempt ") == 3
    # Three runs, three folders: each attempt kept its own trajectory.
    folders = world.deps.settings.trajectory_dir.glob("*/attempt-1/candidate-*/trajectory.jsonl")
    kept = sorted(folders)
    assert [p.parent.name for p in kept] == ["candidate-1", "candidate-2", "candidate-3"]


async def test_no_attempt_ready_names_the_strongest(world: World) -> None:
    _attempts_policy(world, 2)
    await _run(world, Lanes([WRONG, PARTIAL]))
    repo = world.fake.repo(REPO)
    assert repo.pulls == {}
    (comment,) = repo.comments(7)
    assert "FrogNano opened no pull request" in comment["body"]
    lines = _lines(comment["body"])
    assert len(lines) == 2
    assert sum(": the strongest, not ready: " in line for line in lines) == 1
    assert all("Its trajectory is `" in line for line in lines)


@pytest.mark.parametrize("require", ["fail_to_pass", "no_regressions"])
async def test_an_attempt_that_games_the_evidence_is_not_chosen(world: World, require: str) -> None:
    # The attacker's attempt adds 30 tests of its own (each fails on the base and passes with
    # its patch), prints a collector-shaped record saying the issue's test passed, writes a
    # report.json of its own and claims victory; the other attempt fixes the issue. Under
    # `no_regressions` both are ready, and only the order of evidence tells them apart.
    _attempts_policy(world, 2, require)
    await _run(world, Lanes([CHEAT, FIX]))
    head, found = _published(world)
    assert world.fake.file_at(REPO, head, "calc.py") == FIXED
    assert world.fake.file_at(REPO, head, "tests/test_double.py") is None
    lines = _lines(found[VERIFICATION_CHECK]["output"]["summary"])
    (cheat,) = [line for line in lines if ": published." not in line]
    assert "0 fixed, 30 of the agent's tests fixed" in cheat
    if require == "no_regressions":
        assert ": weaker evidence than attempt " in cheat
        assert "Evidence: ready, " in cheat
    else:
        assert ": not ready: " in cheat


# -- budgets ------------------------------------------------------------------------------------


async def test_the_per_repository_cap_bounds_attempts_at_once(world: World) -> None:
    assert world.deps.budget == AttemptBudget(
        worker=2, per_repo=world.deps.settings.max_attempts_per_repo
    )
    world.deps.budget = AttemptBudget(worker=4, per_repo=2)
    _attempts_policy(world, 3)
    # The first two claims wait together for a third that the cap never lets start: long
    # enough that the second attempt's sandbox and first turn arrive on a loaded machine.
    lanes = Lanes([FIX, FIX, FIX], hold_until=3, hold_seconds=20)
    await _run(world, lanes)
    assert lanes.claimed == 3
    assert lanes.peak == 2
    _published(world)


async def test_the_worker_bounds_attempts_at_once(world: World) -> None:
    world.deps.budget = AttemptBudget(worker=1, per_repo=5)
    _attempts_policy(world, 3)
    lanes = Lanes([FIX, FIX, FIX], hold_until=3, hold_seconds=4)
    await _run(world, lanes)
    assert (lanes.claimed, lanes.peak) == (3, 1)
    _published(world)


# -- an attempt whose sandbox dies --------------------------------------------------------------


def _kill(box: Sandbox) -> None:
    """The local forms of an evicted pod (as tests/sandbox/test_lifecycle.py does it)."""
    holder = getattr(getattr(box, "_launcher", None), "holder_pid", None)
    if holder is not None:
        os.kill(holder, signal.SIGKILL)
    else:
        shutil.rmtree(box.layout.workspace)  # type: ignore[attr-defined]


@dataclasses.dataclass(frozen=True)
class _FirstDies:
    """The real sandboxes, but attempt 1's agent sandbox dies as soon as it is made."""

    real: SandboxFactory

    def options(
        self, *, python_env: Path | None, repo_venv: Path | None, limits: SandboxLimits,
        spec: SandboxSpec,
    ) -> SandboxOptions:  # fmt: skip
        return self.real.options(
            python_env=python_env, repo_venv=repo_venv, limits=limits, spec=spec
        )

    async def create(self, backend: str, options: SandboxOptions) -> Sandbox:
        box = await self.real.create(backend, options)
        if options.spec.candidate == 1 and options.spec.purpose == "agent":
            _kill(box)
        return box


def _dying_ports(settings: Settings) -> RunPorts:
    ports = RunPorts.from_settings(settings)
    return dataclasses.replace(ports, sandboxes=_FirstDies(ports.sandboxes))


async def test_an_attempt_whose_sandbox_dies_does_not_sink_the_others(world: World) -> None:
    world.deps.make_ports = _dying_ports
    _attempts_policy(world, 3)
    await _run(world, Lanes([FIX, FIX]))
    head, found = _published(world)
    assert world.fake.file_at(REPO, head, "calc.py") == FIXED
    lines = _lines(found[VERIFICATION_CHECK]["output"]["summary"])
    assert len(lines) == 3
    assert lines[0].startswith("- Attempt 1 of 3: not ready: ")
    assert "Evidence: no patch." in lines[0]
    assert ": published." in lines[1]
