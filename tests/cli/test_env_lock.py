"""uv.lock installs exactly what it locks: a lock made by the real uv against the test index,
then a newer release published, and `frognano env build` installs the locked version with its
hashes; a lock whose hash no longer matches the index's file fails the build."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.cli import test_solve_environment
from tests.cli.test_solve_environment import env_for, make_repo
from tests.packageindex import WHEEL_CACHE, PackageIndex, build_wheel, download_wheels

index = test_solve_environment.index  # the module's fixture: the index with pytest on it
UV = ("uv==0.13.9",)
PLATFORM_ONLY = ("colorama==0.4.6",)  # pytest needs it on Windows: the lock names it
PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "fnlocked"
version = "0.1"
requires-python = ">=3.11"
dependencies = ["fn-lockdemo>=1.0", "fn-mathhelp==1.0"]

[project.optional-dependencies]
test = ["pytest==8.3.5"]

[tool.setuptools]
py-modules = ["calc"]
"""


@pytest.fixture(scope="module")
def uv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real uv binary, from its wheel on PyPI."""
    (wheel,) = download_wheels(WHEEL_CACHE, UV)
    folder = tmp_path_factory.mktemp("uv")
    with zipfile.ZipFile(wheel) as archive:
        member = next(n for n in archive.namelist() if n.endswith(".data/scripts/uv"))
        target = folder / "uv"
        target.write_bytes(archive.read(member))
    target.chmod(0o755)
    return target


def _lock(uv: Path, repo: Path, index: PackageIndex, tmp_path: Path) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "UV_NO_CONFIG": "1",
        "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
        "UV_PYTHON": sys.executable,
        "UV_PYTHON_DOWNLOADS": "never",
    }
    done = subprocess.run(
        [str(uv), "lock", "--default-index", index.url],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    subprocess.run(["git", "add", "uv.lock"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "lock"],
        cwd=repo,
        check=True,
    )


def _build(repo: Path, index: PackageIndex, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "frognano", "env", "build", str(repo), "--index-url", index.url],
        env=env_for(None, tmp_path, tmp_path / "envcache"),
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def test_the_lock_decides_the_versions_not_the_newest_release(
    uv: Path, index: PackageIndex, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"
    first = build_wheel(wheels, "fn-lockdemo", "1.0", modules={"lockdemo.py": "V = 1\n"})
    index.add_wheels([first, *download_wheels(WHEEL_CACHE, PLATFORM_ONLY)])
    repo = make_repo(tmp_path / "project", {"pyproject.toml": PYPROJECT})
    _lock(uv, repo, index, tmp_path)
    newer = build_wheel(wheels, "fn-lockdemo", "2.0", modules={"lockdemo.py": "V = 2\n"})
    index.add_wheels([newer])

    done = _build(repo, index, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--require-hashes -r /tmp/frognano/uv-lock.txt" in done.stdout
    assert "uv.lock: installing its" in done.stdout
    installed = {p.name for p in (tmp_path / "envcache").glob("*/lib/*/site-packages/*.dist-info")}
    assert "fn_lockdemo-1.0.dist-info" in installed, installed
    assert "fn_lockdemo-2.0.dist-info" not in installed
    assert "pytest-8.3.5.dist-info" in installed
    assert not any(name.startswith("colorama") for name in installed), "a win32-only pin"


def test_a_lock_whose_hash_the_index_does_not_match_fails_the_build(
    uv: Path, index: PackageIndex, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"
    only = build_wheel(wheels, "fn-lockhash", "1.0", modules={"lockhash.py": "V = 1\n"})
    index.add_wheels([only, *download_wheels(WHEEL_CACHE, PLATFORM_ONLY)])
    project = PYPROJECT.replace('"fn-lockdemo>=1.0"', '"fn-lockhash==1.0"')
    repo = make_repo(tmp_path / "project", {"pyproject.toml": project})
    _lock(uv, repo, index, tmp_path)
    lock = (repo / "uv.lock").read_text()
    start = lock.index('name = "fn-lockhash"')
    digest = lock.index("sha256:", start) + len("sha256:")
    forged = lock[:digest] + ("0" if lock[digest] != "0" else "1") + lock[digest + 1 :]
    (repo / "uv.lock").write_text(forged)

    done = _build(repo, index, tmp_path)
    assert done.returncode == 1, done.stdout
    assert "--require-hashes -r /tmp/frognano/uv-lock.txt" in done.stderr
    assert "DO NOT MATCH THE HASHES" in done.stderr
    assert not list((tmp_path / "envcache").glob("*.json")), "a build that failed was kept"


POETRY = "poetry==2.1.3"
POETRY_PROJECT = """\
[project]
name = "fnpoetry"
version = "0.1"
requires-python = ">=3.11"
dependencies = ["fn-poetrydemo>=1.0", "fn-mathhelp==1.0"]

[project.optional-dependencies]
test = ["pytest==8.3.5"]
docs = ["fn-poetrydocs==1.0"]

[tool.poetry]
packages = [{include = "calc.py"}]

[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[tool.setuptools]
py-modules = ["calc"]
"""
SOURCE = '\n[[tool.poetry.source]]\nname = "test"\nurl = "{url}"\npriority = "primary"\n'


@pytest.fixture(scope="module")
def poetry() -> Path:
    """The real Poetry, in an environment of its own made once from PyPI and kept."""
    home = WHEEL_CACHE.parent / POETRY.replace("==", "-")
    binary = home / "bin" / "poetry"
    if not binary.exists():
        subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
        subprocess.run(
            [str(home / "bin" / "python"), "-m", "pip", "install", "-q", "--index-url",
             "https://pypi.org/simple", POETRY],
            check=True, env={**os.environ, "PIP_CONFIG_FILE": os.devnull}, timeout=600,
        )  # fmt: skip
    return binary


def test_a_poetry_lock_decides_the_versions_groups_and_extras(
    poetry: Path, index: PackageIndex, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"
    first = build_wheel(wheels, "fn-poetrydemo", "1.0", modules={"poetrydemo.py": "V = 1\n"})
    docs = build_wheel(wheels, "fn-poetrydocs", "1.0", modules={"poetrydocs.py": "V = 1\n"})
    index.add_wheels([first, docs, *download_wheels(WHEEL_CACHE, PLATFORM_ONLY)])
    repo = make_repo(tmp_path / "project", {"pyproject.toml": POETRY_PROJECT})
    # Poetry is told the index by a source in pyproject.toml, as its users do; FrogNano would
    # refuse that section, so it goes again before the lock is committed.
    (repo / "pyproject.toml").write_text(POETRY_PROJECT + SOURCE.format(url=index.url))
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "POETRY_CACHE_DIR": str(tmp_path / "pc"),
    }
    done = subprocess.run(
        [str(poetry), "lock", "--no-interaction"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (repo / "pyproject.toml").write_text(POETRY_PROJECT)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "lock"],
                   cwd=repo, check=True)  # fmt: skip
    newer = build_wheel(wheels, "fn-poetrydemo", "2.0", modules={"poetrydemo.py": "V = 2\n"})
    index.add_wheels([newer])

    built = _build(repo, index, tmp_path)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "--require-hashes -r /tmp/frognano/poetry-lock.txt" in built.stdout
    installed = {p.name for p in (tmp_path / "envcache").glob("*/lib/*/site-packages/*.dist-info")}
    assert "fn_poetrydemo-1.0.dist-info" in installed, installed
    assert "pytest-8.3.5.dist-info" in installed  # the test extra
    assert not any(n.startswith(("fn_poetrydocs", "colorama")) for n in installed), installed
