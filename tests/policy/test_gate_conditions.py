"""The gate's size fallback, new-harness-file and executable conditions, one edge each."""

from __future__ import annotations

from pathlib import Path

import pytest

from frognano.policy.gate.check import Finding, TreeFacts, run_gate
from frognano.policy.models import GatePolicy
from tests.policy.gitrepo import GitRepo

SMALL = GatePolicy(max_file_bytes=100)


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path)
    repo.write("src/app.py", "x = 1\n")
    repo.write("data/big.txt", "x" * 500 + "\n")
    repo.write("pytest.ini", "[pytest]\n")
    repo.write("sitecustomize.py", "x = 1\n")
    repo.write("usercustomize.py", "x = 1\n")
    repo.write("tests/conftest.py", "x = 1\n")
    repo.write("run.sh", "#!/bin/sh\necho hi\n", executable=True)
    repo.commit_base()
    return repo


def kinds(findings: list[Finding]) -> list[tuple[str, str | None]]:
    return [(finding.kind, finding.path) for finding in findings]


def test_a_deleted_file_is_never_too_large(repo: GitRepo) -> None:
    repo.path("data/big.txt").unlink()
    # Even with a size at hand (a stale one): the size is of the tree after the patch.
    facts = TreeFacts({"data/big.txt": 501}, base_paths=repo.facts().base_paths)

    assert kinds(run_gate(repo.diff(), facts, SMALL)) == []


def test_a_submodule_has_no_size_to_judge(repo: GitRepo) -> None:
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{repo.base},vendor/lib")
    facts = TreeFacts({"vendor/lib": 10**6}, contents={"vendor/lib": b"x" * 10**6})

    findings = run_gate(repo.diff(stage=False), facts, GatePolicy(max_file_bytes=1))

    assert kinds(findings) == [("submodule", "vendor/lib")]


def test_the_measured_size_wins_over_the_contents(repo: GitRepo) -> None:
    repo.write("src/app.py", "x = 2\n")
    facts = TreeFacts({"src/app.py": 5000}, contents={"src/app.py": b"x = 2\n"})

    (finding,) = run_gate(repo.diff(), facts, SMALL)

    assert finding.kind == "large_file"
    assert "is 5000 bytes" in finding.reason


def test_without_a_size_the_contents_give_it(repo: GitRepo) -> None:
    repo.write("src/app.py", "x = 2\n")
    facts = TreeFacts({}, contents={"src/app.py": b"y" * 150})

    (finding,) = run_gate(repo.diff(), facts, SMALL)

    assert "150 bytes" in finding.reason


def test_the_lower_bound_counts_the_newlines_between_added_lines(repo: GitRepo) -> None:
    repo.write("data/new.txt", "a" * 50 + "\n" + "b" * 50 + "\n")

    (finding,) = run_gate(repo.diff(), TreeFacts({}), SMALL)

    assert "is 101 bytes" in finding.reason  # 50 + 1 + 50: the last newline is not counted
    assert run_gate(repo.diff(), TreeFacts({}), GatePolicy(max_file_bytes=101)) == []


def test_a_file_the_base_has_is_not_new_even_when_the_diff_adds_it(repo: GitRepo) -> None:
    repo.write("src/conftest.py", "x = 1\n")
    facts = TreeFacts({}, base_paths=frozenset({"src/conftest.py"}))

    assert run_gate(repo.diff(), facts, GatePolicy()) == []


def test_a_type_change_re_adds_no_new_conftest(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path)
    repo.write("conftest.py", "x = 1\n")
    repo.path("tests").mkdir()
    repo.path("tests/conftest.py").symlink_to("../conftest.py")
    repo.commit_base()
    repo.path("tests/conftest.py").unlink()
    repo.write("tests/conftest.py", "x = 1\n")

    # The diff deletes the symlink and adds the file; without the base's paths at hand the
    # deletion alone says the path is not new.
    assert kinds(run_gate(repo.diff(), TreeFacts({}), GatePolicy())) == []


@pytest.mark.parametrize(
    "path", ["tests/conftest.py", "pytest.ini", "sitecustomize.py", "usercustomize.py"]
)
def test_a_changed_harness_file_is_not_new_by_status(repo: GitRepo, path: str) -> None:
    repo.write(path, "[pytest]\nmarkers = slow\n" if path.endswith(".ini") else "x = 2\n")

    assert run_gate(repo.diff(), repo.facts(), GatePolicy()) == []
    # The diff's status decides on its own when the base's paths are not known.
    assert run_gate(repo.diff(), TreeFacts({}), GatePolicy()) == []


@pytest.mark.parametrize(
    "path", ["sub/.pytest.ini", "sub/pytest.ini", "sub/sitecustomize.py", "sub/usercustomize.py"]
)
def test_each_new_start_up_or_ini_file_is_suspicious(repo: GitRepo, path: str) -> None:
    repo.write(path, "[pytest]\n" if path.endswith(".ini") else "x = 1\n")

    assert kinds(run_gate(repo.diff(), repo.facts(), GatePolicy())) == [("suspicious", path)]


def test_a_file_that_stays_executable_is_not_reported(repo: GitRepo) -> None:
    repo.write("run.sh", "#!/bin/sh\necho bye\n", executable=True)

    assert run_gate(repo.diff(), repo.facts(), GatePolicy()) == []
