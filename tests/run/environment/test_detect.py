"""The default install commands detected from a repository checkout."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from frognano.run.environment.detect import Detected, detect

from .scanning import write

PIP = "python -m pip install"
LOCK_NOTE = (
    ": found, but lock files are not translated yet; the dependencies come from the requirements "
    "the project declares, not the lock's pins, unless the policy's environment.install says "
    "how to install"
)


def detected(repo: Path, files: dict[str, str | bytes]) -> Detected:
    write(repo, files)
    return detect(repo)


def test_nothing_to_install_says_so(tmp_path: Path) -> None:
    assert detected(tmp_path, {"README.md": "hi\n"}) == Detected(
        (),
        (),
        ("found no requirements file, pyproject.toml, setup.py or setup.cfg: nothing to install",),
    )


def test_each_requirements_file_is_installed_in_order_with_its_includes_as_key_files(
    tmp_path: Path,
) -> None:
    files: dict[str, str | bytes] = {
        "requirements.txt": "-r requirements/base.txt\n",
        "requirements-dev.txt": "-c constraints/pins.txt\npytest\n",
        "requirements/base.txt": "attrs\n",
        "requirements/docs.txt": "sphinx\n",
        "requirements/notes.md": "not a requirements file\n",
        "constraints/pins.txt": "attrs<30\n",
        "docs/requirements.txt": "not at the root\n",
    }
    result = detected(tmp_path, files)
    assert result.commands == (
        f"{PIP} -r requirements-dev.txt",
        f"{PIP} -r requirements.txt",
        f"{PIP} -r requirements/base.txt",
        f"{PIP} -r requirements/docs.txt",
    )
    assert result.key_files == (
        "constraints/pins.txt",
        "requirements-dev.txt",
        "requirements.txt",
        "requirements/base.txt",
        "requirements/docs.txt",
    )


HOSTILE_NAMES = [
    "requirements-$(touch pwned).txt",
    "requirements-`touch pwned`.txt",
    "requirements-'; touch pwned; '.txt",
    "requirements-\n touch pwned\n.txt",
    'requirements-" && touch pwned ".txt',
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_hostile_file_name_stays_one_shell_word(tmp_path: Path, name: str) -> None:
    repo = tmp_path / "repo"
    [command] = detected(repo, {name: "attrs\n"}).commands
    assert shlex.split(command) == ["python", "-m", "pip", "install", "-r", name]
    # the shell itself sees one argument, and runs nothing the name spells
    echo = command.replace(PIP, "printf '%s\\0'", 1)
    shown = subprocess.run(
        ["sh", "-c", echo], cwd=tmp_path, capture_output=True, check=True, text=True
    )
    assert shown.stdout == f"-r\0{name}\0"
    assert not (tmp_path / "pwned").exists()


def test_pyproject_installs_the_project_editable_with_its_test_extras(tmp_path: Path) -> None:
    text = (
        '[project]\nname = "x"\nversion = "1"\n[project.optional-dependencies]\n'
        'Testing = ["pytest"]\ndev = ["ruff"]\ndocs = ["sphinx"]\n"test$(id)" = ["x"]\n'
    )
    result = detected(tmp_path, {"pyproject.toml": text, "setup.py": ""})
    assert result.commands == (f"{PIP} -e '.[Testing,dev]'",)
    assert result.key_files == ("pyproject.toml", "setup.py")
    assert result.notes == (
        "pyproject.toml: installing the project editable with extras Testing, dev",
    )


def test_pyproject_without_test_extras_installs_the_project_alone(tmp_path: Path) -> None:
    result = detected(tmp_path, {"pyproject.toml": '[project]\nname = "x"\n'})
    assert result.commands == (f"{PIP} -e .",)
    assert result.notes == ("pyproject.toml: installing the project editable",)


def test_dependency_groups_are_resolved_and_installed_quoted(tmp_path: Path) -> None:
    text = (
        '[project]\nname = "x"\n[dependency-groups]\n'
        'test = ["pytest>=8", {include-group = "typing"}]\n'
        "typing = ['mypy', 'tomli; python_version < \"3.11\"']\n"
        'dev = ["ruff", {include-group = "test"}, "--index-url=http://e.example"]\n'
        'docs = ["sphinx"]\n'
    )
    result = detected(tmp_path, {"pyproject.toml": text})
    assert result.commands == (
        f"{PIP} -e .",
        f"{PIP} ruff 'pytest>=8' mypy 'tomli; python_version < \"3.11\"'",
    )
    assert shlex.split(result.commands[1])[4:] == [
        "ruff",
        "pytest>=8",
        "mypy",
        'tomli; python_version < "3.11"',
    ]
    assert result.notes == (
        "pyproject.toml: installing the project editable",
        "pyproject.toml: dependency group dev: '--index-url=http://e.example' skipped, it is "
        "not a plain requirement",
        "pyproject.toml: installing dependency group dev",
        "pyproject.toml: installing dependency group test",
    )


def test_a_dependency_group_cycle_installs_nothing_from_the_groups(tmp_path: Path) -> None:
    text = (
        '[dependency-groups]\ntest = [{include-group = "dev"}]\ndev = [{include-group = "test"}]\n'
    )
    result = detected(tmp_path, {"pyproject.toml": text})
    assert result.commands == ()
    assert result.notes == (
        "pyproject.toml: dependency group dev not installed: dependency groups include each "
        "other in a cycle: dev -> test -> dev",
        "pyproject.toml: dependency group test not installed: dependency groups include each "
        "other in a cycle: test -> dev -> test",
    )


def test_setup_files_install_the_project_with_setup_cfg_test_extras(tmp_path: Path) -> None:
    cfg = "[metadata]\nname = x\n[options.extras_require]\ntests = pytest\nspeed = uvloop\n"
    result = detected(tmp_path, {"setup.cfg": cfg})
    assert result.commands == (f"{PIP} -e '.[tests]'",)
    assert result.notes == ("setup.cfg: installing the project editable with extras tests",)
    assert detected(tmp_path / "py", {"setup.py": ""}).commands == (f"{PIP} -e .",)


def test_pyproject_without_project_table_defers_to_setup_or_build_backend(tmp_path: Path) -> None:
    build = (
        '[build-system]\nrequires = ["poetry-core"]\nbuild-backend = "poetry.core.masonry.api"\n'
    )
    with_setup = detected(tmp_path / "a", {"pyproject.toml": build, "setup.py": ""})
    assert with_setup.commands == (f"{PIP} -e .",)
    assert with_setup.notes == ("setup.py: installing the project editable",)
    alone = detected(tmp_path / "b", {"pyproject.toml": build})
    assert alone.commands == (f"{PIP} -e .",)
    assert alone.notes == (
        "pyproject.toml: no [project] table; installing the project editable with the "
        "dependencies its build backend declares",
    )
    tools_only = detected(tmp_path / "c", {"pyproject.toml": "[tool.ruff]\nline-length = 99\n"})
    assert tools_only.commands == ()


def test_lock_files_are_key_files_with_a_note(tmp_path: Path) -> None:
    # A uv.lock with no project at its root cannot pin anything: the declared requirements
    # install instead (tests/run/environment/test_uvlock.py: a lock that can).
    files: dict[str, str | bytes] = {
        "pyproject.toml": '[project]\nname = "x"\n',
        "uv.lock": "version = 1\n",
        "poetry.lock": "",
        "pylock.toml": "",
    }
    result = detected(tmp_path, files)
    assert result.commands == (f"{PIP} -e .",)
    assert result.key_files == ("poetry.lock", "pylock.toml", "pyproject.toml", "uv.lock")
    assert result.notes == (
        "uv.lock: no single project at its root (a workspace?); not used",
        "poetry.lock: older than lock-version 2.1 (Poetry 2), which records groups and "
        "markers; not used",
        "pyproject.toml: installing the project editable",
        f"pylock.toml{LOCK_NOTE}",
    )


def test_a_malformed_pyproject_installs_nothing_and_says_why(tmp_path: Path) -> None:
    result = detected(tmp_path, {"pyproject.toml": "[project\n", "requirements.txt": "attrs\n"})
    assert result.commands == (f"{PIP} -r requirements.txt",)
    assert result.key_files == ("pyproject.toml", "requirements.txt")
    assert result.notes == (
        "requirements.txt: installing its requirements",
        "pyproject.toml: not valid TOML (line 1); nothing installed from it",
    )
