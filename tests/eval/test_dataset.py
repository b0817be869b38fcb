"""The test dataset is what it claims: each base fails its FAIL_TO_PASS, gold patches fix it."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from frognano.eval.instances import Instance
from frognano.eval.repos import check_out, find_repository
from tests.eval.dataset import INSTANCE_IDS, Dataset, build_dataset

_OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S.*?)(?: - .*)?$")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return build_dataset(tmp_path_factory.mktemp("dataset"))


def _git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, check=False,
        # No repository above the tree is found: `git apply` then patches the tree itself.
        env={**os.environ, "GIT_CEILING_DIRECTORIES": str(cwd.parent)},
    )  # fmt: skip
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def _outcomes(instance: Instance, tree: Path) -> dict[str, str]:
    """Each FAIL_TO_PASS and PASS_TO_PASS test's outcome, running the instance's command."""
    ids = [*instance.fail_to_pass, *instance.pass_to_pass]
    assert instance.test_command is not None
    command = f"{instance.test_command} -rA {shlex.join(ids)}"
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "PYTEST_ADDOPTS"} and not key.startswith("PYTEST_XDIST")
    }
    env.update(
        # `python` in the command is this one: it has pytest.
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        # This environment's plugins (pytest-asyncio...) are not the project's: one warns at
        # start-up and toolz makes warnings errors. Its suites need pytest alone.
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    done = subprocess.run(
        ["bash", "-c", command], cwd=tree, env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    found = {}
    for line in done.stdout.splitlines():
        match = _OUTCOME.match(line)
        if match:
            found[match.group(2)] = match.group(1)
    assert set(found) == set(ids), f"not every test ran:\n{done.stdout}\n{done.stderr}"
    return found


def test_the_dataset_has_both_encodings_and_one_broken_instance(dataset: Dataset) -> None:
    rows = [json.loads(line) for line in dataset.instances_path.read_text().splitlines()]
    assert tuple(row["instance_id"] for row in rows) == INSTANCE_IDS
    assert tuple(i.instance_id for i in dataset.instances) == INSTANCE_IDS
    kinds = {type(row[key]) for row in rows for key in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    assert kinds == {str, list}
    assert len(dataset.broken) == 1
    assert dataset.gold_resolved | dataset.broken.keys() == set(INSTANCE_IDS)
    assert not dataset.gold_resolved & dataset.broken.keys()
    assert sorted(p.name for p in dataset.repos.iterdir()) == ["pypi__inflection", "pypi__toolz"]
    for instance in dataset.instances:
        assert len(instance.fail_to_pass) == 1
        assert 2 <= len(instance.pass_to_pass) <= 5
        assert instance.patch.startswith("diff --git a/")
        assert "test" not in instance.patch.split("\n", 1)[0]  # the gold patch: source only


@pytest.mark.parametrize("instance_id", INSTANCE_IDS)
def test_the_base_fails_and_the_gold_patch_resolves(
    dataset: Dataset, instance_id: str, tmp_path: Path
) -> None:
    (instance,) = (i for i in dataset.instances if i.instance_id == instance_id)
    gitdir = find_repository(dataset.repos, instance.repo)
    assert (gitdir / "HEAD").is_file()
    assert not (gitdir / ".git").exists()  # a bare mirror
    tree = tmp_path / "tree"
    check_out(gitdir, instance.base_commit, tree)
    assert not (tree / ".git").exists()

    # The mirror holds the fix in a later commit, as upstream would; the tree has none of it.
    (fix,) = _git(gitdir, "rev-list", "--reverse", "--ancestry-path", "--max-count=1",
                  f"{instance.base_commit}..HEAD").split()  # fmt: skip
    test_file, _, test_name = instance.fail_to_pass[0].partition("::")
    assert f"def {test_name}(" in _git(gitdir, "show", f"{fix}:{test_file}")
    assert f"def {test_name}(" not in (tree / test_file).read_text()
    for path in _git(gitdir, "diff", "--name-only", instance.base_commit, fix).split():
        assert (tree / path).read_text() == _git(gitdir, "show", f"{instance.base_commit}:{path}")
        assert (tree / path).read_text() != _git(gitdir, "show", f"{fix}:{path}")

    _git(tree, "apply", "-", stdin=instance.test_patch)
    base = _outcomes(instance, tree)
    assert [base[t] for t in instance.fail_to_pass] == ["FAILED"]
    assert {base[t] for t in instance.pass_to_pass} == {"PASSED"}

    _git(tree, "apply", "-", stdin=instance.patch)
    gold = _outcomes(instance, tree)
    expected = "FAILED" if instance_id in dataset.broken else "PASSED"
    assert [gold[t] for t in instance.fail_to_pass] == [expected]
    assert {gold[t] for t in instance.pass_to_pass} == {"PASSED"}
    assert (instance_id in dataset.gold_resolved) == (expected == "PASSED")
