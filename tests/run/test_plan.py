"""Sorting a patch's files into the fix, the agent's new tests and what goes back to base."""

from __future__ import annotations

import pytest

from frognano.policy.models import EffectivePolicy, VerifyPolicy
from frognano.run.apply import AppliedFile, MemoryTree
from frognano.run.gatecheck import plan_findings
from frognano.run.plan import Plan, make_plan

FILES = {
    "calc.py": ("100644", b"x = 1\n"),
    "tests/test_calc.py": ("100644", b"def test(): pass\n"),
    "tests/data/expected.txt": ("100644", b"3\n"),
    "pkg/tests/test_deep.py": ("100644", b"def test(): pass\n"),
    "pyproject.toml": ("100644", b'[tool.pytest.ini_options]\naddopts = "-q"\n'),
    "Makefile": ("100644", b"test:\n\tpytest\n"),
}
BASE = MemoryTree(FILES)
PATHS = frozenset(FILES)


def file(path: str, content: bytes | None = b"new\n", mode: str = "100644") -> AppliedFile:
    return AppliedFile(path, "" if content is None else mode, content)


def plan(*applied: AppliedFile, command: str = "python -m pytest -q") -> Plan:
    return make_plan(applied, BASE, PATHS, VerifyPolicy(command=command))


def test_the_fix_and_new_tests() -> None:
    sorted_out = plan(file("calc.py"), file("tests/test_new.py"), file("tests/data/new.json"))
    assert [c.path for c in sorted_out.source] == ["calc.py"]
    assert [c.path for c in sorted_out.new_tests] == ["tests/data/new.json", "tests/test_new.py"]
    assert sorted_out.restored == ()
    assert sorted_out.new_test_files == ("tests/data/new.json", "tests/test_new.py")
    assert [c.path for c in sorted_out.published] == [
        "calc.py",
        "tests/data/new.json",
        "tests/test_new.py",
    ]
    assert sorted_out.patched.paths == ("calc.py",)
    assert sorted_out.new_tests_only.paths == ("tests/data/new.json", "tests/test_new.py")


@pytest.mark.parametrize(
    "path",
    ["tests/test_calc.py", "tests/data/expected.txt", "pkg/tests/test_deep.py"],
)
@pytest.mark.parametrize("content", [b"changed\n", None])
def test_changed_or_deleted_protected_files_are_restored(path: str, content: bytes | None) -> None:
    sorted_out = plan(file("calc.py"), file(path, content))
    assert [r.path for r in sorted_out.restored] == [path]
    assert not sorted_out.restored[0].harness
    assert "protected test file" in sorted_out.restored[0].why
    assert [c.path for c in sorted_out.published] == ["calc.py"]


@pytest.mark.parametrize(
    ("path", "content", "command"),
    [
        ("conftest.py", b"x = 1\n", "python -m pytest"),
        ("tests/__init__.py", b"", "python -m pytest"),
        ("pyproject.toml", b'[tool.pytest.ini_options]\naddopts = "-p evil"\n', "pytest"),
        ("evil-1.0.dist-info/entry_points.txt", b"[pytest11]\ne = evil\n", "pytest"),
        ("Makefile", b"test:\n\tpytest -p evil\n", "make test"),
        ("tests/test_helper.py", b"pytest_plugins = ['evil']\n", "pytest"),
    ],
)
def test_harness_files_are_restored_whatever_their_name(
    path: str, content: bytes, command: str
) -> None:
    sorted_out = plan(file("calc.py"), file(path, content), command=command)
    assert [r.path for r in sorted_out.restored] == [path]
    assert sorted_out.restored[0].harness
    assert [c.path for c in sorted_out.published] == ["calc.py"]


def test_a_pyproject_change_outside_pytests_section_is_the_fix() -> None:
    changed = b'[tool.pytest.ini_options]\naddopts = "-q"\n\n[project]\nname = "x"\n'
    sorted_out = plan(file("pyproject.toml", changed))
    assert [c.path for c in sorted_out.source] == ["pyproject.toml"]


def test_findings_for_restored_files() -> None:
    sorted_out = plan(file("calc.py"), file("tests/test_calc.py"), file("conftest.py"))
    warned = plan_findings(sorted_out, EffectivePolicy())
    assert [(f.severity, f.kind, f.path) for f in warned] == [
        ("warn", "protected_change", "conftest.py"),
        ("warn", "protected_change", "tests/test_calc.py"),
    ]
    assert "left out of the pull request" in warned[1].reason
    blocking = plan_findings(
        sorted_out, EffectivePolicy(verify=VerifyPolicy(on_protected_change="block"))
    )
    assert {f.severity for f in blocking} == {"block"}
    assert "may not take from the agent" in blocking[0].reason
