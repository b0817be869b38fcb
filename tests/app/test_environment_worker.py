"""The environment phase through the worker: real Redis, the fake GitHub, a scripted model and
a real package index. A repository with real dependencies gets its draft pull request; one
whose requirements point elsewhere gets a readable refusal on the issue, and the model is never
asked."""

from __future__ import annotations

import uuid
from pathlib import Path

from frognano.app.events.decisions import IssueRef, RunRequest
from tests.app import test_worker
from tests.app.test_worker import World
from tests.cli import test_solve_environment
from tests.cli.test_solve import TESTS
from tests.cli.test_solve_environment import BUGGY, PYPROJECT
from tests.fakes.model_server import ScriptedModelServer, Turn
from tests.gfm import live
from tests.packageindex import PackageIndex

fake, world = test_worker.fake, test_worker.world  # the fixtures
index = test_solve_environment.index
ENV_REPO = "acme/envcalc"
FILES = {
    "calc.py": BUGGY.encode(),
    "tests/test_calc.py": TESTS.encode(),
    "pytest.ini": b"[pytest]\naddopts = -p no:cacheprovider\n",
    "pyproject.toml": PYPROJECT.encode(),
}
GUARD = "    if not xs:\n        raise ValueError('empty')\n"
FIX = [
    Turn(calls=[("Read", {"file_path": "/workspace/calc.py"})]),
    Turn(calls=[("Edit", {"file_path": "/workspace/calc.py", "old_string": "    return total",
                          "new_string": GUARD + "    return total"})]),
    Turn(content="mean([]) now raises ValueError."),
]  # fmt: skip


def _with_repo(world: World, tmp_path: Path, index: PackageIndex, files: dict[str, bytes]) -> int:
    gh = world.fake
    repo = gh.add_repo(ENV_REPO, files=files, installation_id=100)
    gh.add_collaborator(ENV_REPO, "alice", "write")
    gh.add_issue(ENV_REPO, 3, "mean([]) crashes", "It should raise ValueError.")
    policy = world.deps.settings.policy_dir / "00-default.yaml"
    policy.write_text(f"version: 1\ndefaults:\n  environment:\n    index_url: {index.url}\n")
    assert world.deps.policies.reload() is True
    world.deps.settings = world.deps.settings.model_copy(
        update={"environment_cache": str(tmp_path / "envcache")}
    )
    return int(repo.id)


def _request(repo_id: int) -> RunRequest:
    issue = IssueRef(installation_id=100, repo=ENV_REPO, repo_id=repo_id, number=3)
    return RunRequest(issue, f"d-{uuid.uuid4()}", "alice", "frognano", "mean([]) crashes",
                      "It should raise ValueError.")  # fmt: skip


async def test_a_repository_with_real_dependencies_gets_its_draft(
    world: World, tmp_path: Path, index: PackageIndex
) -> None:
    repo_id = _with_repo(world, tmp_path, index, FILES)
    with ScriptedModelServer(FIX) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(_request(repo_id)) == "queued"
        await world.work()
    gh = world.fake
    head = gh.repo(ENV_REPO).branch_sha("frognano/issue-3")
    assert head is not None, gh.repo(ENV_REPO).comments(3)
    assert b"raise ValueError" in (gh.file_at(ENV_REPO, head, "calc.py") or b"")
    assert list((tmp_path / "envcache").glob("*.json")), "no environment was built"


async def test_a_redirecting_requirements_file_is_refused_on_the_issue(
    world: World, tmp_path: Path, index: PackageIndex
) -> None:
    # The file name is the repository's: it tries a mention, a link and an image on GitHub.
    hostile = "requirements-@octocat-[x](https:evil.example)-![i](https:evil.example).txt"
    files = {
        **FILES,
        "requirements.txt": b"-i http://127.0.0.1:9/simple/\nfn-mathhelp==1.0\n",
        hostile: b"--extra-index-url https://evil.example/simple/\n",
    }
    repo_id = _with_repo(world, tmp_path, index, files)
    with ScriptedModelServer(FIX) as model:
        world.deps.settings = world.deps.settings.model_copy(
            update={"model_base_url": model.base_url}
        )
        assert await world.submit(_request(repo_id)) == "queued"
        await world.work()
        asked = list(model.requests)
    assert asked == [], "the model ran although the environment was refused"
    gh = world.fake
    assert gh.repo(ENV_REPO).branch_sha("frognano/issue-3") is None
    (status,) = gh.repo(ENV_REPO).comments(3)
    body = status["body"]
    assert "requirements.txt:1" in body, body
    assert "approved package index" in body
    assert "octocat" in body
    assert live(body, html=3) == [], body  # the marker and <sub> are its own
