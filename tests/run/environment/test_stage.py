"""The install a run plans: detected, or the policy's, with only the notes that still hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from frognano.errors import EnvironmentBuildError
from frognano.policy.models import EnvironmentPolicy
from frognano.run.environment.stage import plan_install

INDEX = "http://index.internal/simple/"
PYPROJECT = '[project]\nname = "x"\nversion = "1"\n[project.optional-dependencies]\ntest = ["a"]\n'


def test_the_policys_install_replaces_detection_and_its_notes(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "poetry.lock").write_text("")
    policy = EnvironmentPolicy(index_url=INDEX, install=["make deps"])
    plan = plan_install(tmp_path, policy)
    assert plan.commands == ("make deps",)
    assert not plan.detected
    assert plan.key_files == ("poetry.lock", "pyproject.toml")
    assert not any("installing" in note for note in plan.notes), plan.notes
    assert any(note.startswith("poetry.lock:") for note in plan.notes), plan.notes


def test_detection_says_what_it_installs(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    plan = plan_install(tmp_path, EnvironmentPolicy(index_url=INDEX))
    assert plan.commands == ("python -m pip install -e '.[test]'",)
    assert plan.detected
    assert plan.notes == ("pyproject.toml: installing the project editable with extras test",)


def test_a_redirect_refuses_even_under_the_policys_install(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("--extra-index-url http://elsewhere/simple/\n")
    policy = EnvironmentPolicy(index_url=INDEX, install=["python -m pip install -r x.txt"])
    with pytest.raises(EnvironmentBuildError, match=r"requirements\.txt:1: --extra-index-url"):
        plan_install(tmp_path, policy)
