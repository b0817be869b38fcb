"""The upload selection, the baseline commit and the patch, against a real sandbox."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from frognano.errors import ConfigError
from frognano.run.workspace import (
    collect_patch,
    env_in_tree,
    make_baseline,
    repo_name,
    upload_excludes,
)
from frognano.sandbox.local import LocalSandbox


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("def f():\n    return 1\n")
    (root / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (root / "image.bin").write_bytes(bytes(range(256)))
    (root / ".gitignore").write_text("build/\n*.log\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    (root / "pkg" / "mod.py").write_text("def f():\n    return 2\n")
    git(root, "commit", "-qam", "a future commit the agent must not see")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_bytes(b"\0")
    (root / "debug.log").write_text("noise\n")
    (root / "untracked.py").write_text("x = 1\n")
    return root


def test_upload_excludes_history_and_ignored_files(repo: Path) -> None:
    assert sorted(upload_excludes(repo)) == [".git", "build", "debug.log"]


def test_a_folder_inside_a_checkout_is_uploaded_alone(repo: Path) -> None:
    (repo / "pkg" / "cache.log").write_text("x")
    assert upload_excludes(repo / "pkg") == ["cache.log"]


def test_the_repository_name_comes_from_the_checkout_itself(repo: Path, tmp_path: Path) -> None:
    git(repo, "remote", "add", "origin", "https://github.com/acme/widgets.git")
    assert repo_name(repo) == "acme/widgets"
    # A folder inside that checkout (FrogNano's own examples/calculator) is not acme/widgets.
    assert repo_name(repo / "pkg") == "local/pkg"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repo_name(plain) == "local/plain"


def test_a_directory_without_git_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not inside a git checkout"):
        upload_excludes(tmp_path)


async def test_baseline_has_one_commit_and_no_history(
    repo: Path, default_sandbox: LocalSandbox
) -> None:
    box = default_sandbox
    await box.upload_tree(repo, exclude=upload_excludes(repo))
    base = await make_baseline(box)
    log = await box.exec("git log --all --oneline; git remote; git tag; git status --short")
    assert log.ok, log.output
    assert log.output.strip() == f"{base[:7]} FrogNano baseline"
    files = await box.exec("git ls-files")
    expected = ".gitignore image.bin latin1.txt pkg/mod.py untracked.py".split()
    assert files.output.split() == expected
    # The same tree always gives the same commit.
    assert await make_baseline(box) == base


async def test_patch_is_binary_safe_and_skips_caches(
    repo: Path, default_sandbox: LocalSandbox
) -> None:
    box = default_sandbox
    await box.upload_tree(repo, exclude=upload_excludes(repo))
    base = await make_baseline(box)
    assert (await collect_patch(box, base)).empty
    script = (
        "printf 'caf\\xe9 cr\\xe8me\\n' > latin1.txt && "
        "printf '\\x00\\x01new' > image.bin && rm untracked.py && "
        "mkdir -p pkg/__pycache__ .pytest_cache && touch pkg/__pycache__/mod.pyc "
        ".pytest_cache/x && printf 'y = 2\\n' > added.py && "
        "sed -i 's/return 2/return 3/' pkg/mod.py"
    )
    assert (await box.exec(script)).ok
    patch = await collect_patch(box, base)
    assert patch.files == ("added.py", "image.bin", "latin1.txt", "pkg/mod.py", "untracked.py")
    assert (patch.insertions, patch.deletions) == (3, 3)
    assert "caf\xe9 cr\xe8me".encode("latin-1") in patch.diff
    assert b"GIT binary patch" in patch.diff
    # The patch applies to the base on the host and reproduces the sandbox's files exactly.
    git(repo, "checkout", "-q", "HEAD~0")
    (repo / "patch.diff").write_bytes(patch.diff)
    git(repo, "apply", "--check", "patch.diff")
    git(repo, "apply", "patch.diff")
    assert (repo / "latin1.txt").read_bytes() == "caf\xe9 cr\xe8me\n".encode("latin-1")
    assert (repo / "image.bin").read_bytes() == b"\x00\x01new"
    assert not (repo / "untracked.py").exists()


async def test_the_mounted_environment_is_left_out_of_an_upload_only_when_in_the_tree(
    default_sandbox: LocalSandbox, tmp_path: Path
) -> None:
    prefix = default_sandbox.python_env.prefix
    # A checkout holding the environment (a CI .venv): the environment's folder is skipped.
    assert env_in_tree(default_sandbox, prefix.parent) == [prefix.name]
    assert env_in_tree(default_sandbox, prefix.parent.parent) == [
        f"{prefix.parent.name}/{prefix.name}"
    ]
    # A checkout elsewhere uploads everything.
    assert env_in_tree(default_sandbox, tmp_path) == []
