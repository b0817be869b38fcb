"""read_file, write_file and upload_tree against a real sandbox, including hostile layouts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from frognano.errors import UnsafePathError
from frognano.sandbox.local import LocalSandbox

ALL_BYTES = bytes(range(256)) * 4


async def test_write_then_read_binary_with_mode(sandbox: LocalSandbox) -> None:
    await sandbox.write_file("/workspace/deep/dir/data.bin", ALL_BYTES, mode=0o600)
    assert await sandbox.read_file("/workspace/deep/dir/data.bin") == ALL_BYTES
    info = await sandbox.exec("stat -c '%a %s' /workspace/deep/dir/data.bin")
    assert info.output.strip() == f"600 {len(ALL_BYTES)}"
    await sandbox.write_file("/workspace/deep/dir/data.bin", b"short", mode=0o755)
    assert await sandbox.read_file("/workspace/deep/dir/data.bin") == b"short"
    assert (await sandbox.exec("stat -c %a /workspace/deep/dir/data.bin")).output.strip() == "755"


async def test_empty_file_and_home_and_tmp(sandbox: LocalSandbox) -> None:
    for path in ("/workspace/empty", "/tmp/t.txt", "/home/sandbox/.config/x"):
        await sandbox.write_file(path, b"")
        assert await sandbox.read_file(path) == b""


async def test_read_errors(sandbox: LocalSandbox) -> None:
    with pytest.raises(FileNotFoundError):
        await sandbox.read_file("/workspace/missing.txt")
    with pytest.raises(IsADirectoryError):
        await sandbox.read_file("/workspace")
    await sandbox.exec("echo secret > /workspace/locked && chmod 000 /workspace/locked")
    with pytest.raises(PermissionError):
        await sandbox.read_file("/workspace/locked")
    await sandbox.write_file("/workspace/big", b"x" * 1000)
    with pytest.raises(OSError, match="over the 100-byte limit"):
        await sandbox.read_file("/workspace/big", max_bytes=100)
    with pytest.raises(OSError, match="Not a regular file"):
        await sandbox.read_file("/dev/zero")


async def test_paths_must_be_absolute(sandbox: LocalSandbox) -> None:
    with pytest.raises(UnsafePathError):
        await sandbox.read_file("workspace/x")
    with pytest.raises(UnsafePathError):
        await sandbox.write_file("../etc/passwd", b"")
    with pytest.raises(UnsafePathError):
        await sandbox.write_file("/workspace/a\0b", b"")


async def test_write_errors_and_host_untouched(sandbox: LocalSandbox) -> None:
    with pytest.raises(OSError, match="Read-only file system"):
        await sandbox.write_file("/etc/frognano-test", b"x")
    with pytest.raises(OSError, match=r"Read-only file system|Permission denied"):
        await sandbox.write_file("/usr/lib/frognano-test", b"x")
    with pytest.raises(IsADirectoryError):
        await sandbox.write_file("/workspace", b"x")
    assert not Path("/etc/frognano-test").exists()


async def test_symlink_planted_by_agent_cannot_reach_host(sandbox: LocalSandbox) -> None:
    # File operations resolve paths inside the sandbox: a link to /etc is the sandbox's /etc.
    await sandbox.exec("ln -s /etc /workspace/etc-link && ln -s /root /workspace/root-link")
    with pytest.raises(OSError, match="Read-only file system"):
        await sandbox.write_file("/workspace/etc-link/frognano-planted", b"x")
    assert not Path("/etc/frognano-planted").exists()
    passwd = await sandbox.read_file("/workspace/etc-link/passwd")
    assert b"sandbox:x:" in passwd  # the sandbox's own generated passwd, not the host's
    # The sandbox's /root is empty or absent: the host's /root is not behind the link.
    with pytest.raises(OSError, match=r"No such file|Permission denied"):
        await sandbox.read_file("/workspace/root-link/.bash_history")


def _make_tree(root: Path) -> None:
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "empty-dir").mkdir()
    (root / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (root / "run.sh").chmod(0o755)
    (root / "private.txt").write_text("p")
    (root / "private.txt").chmod(0o600)
    (root / "pkg" / "mod.py").write_text("X = 1\n")
    (root / "pkg" / "sub" / "data.bin").write_bytes(ALL_BYTES)
    os.symlink("pkg/mod.py", root / "link-to-file")
    os.symlink("pkg", root / "link-to-dir")
    os.symlink("../mod.py", root / "pkg" / "sub" / "up-one")
    os.symlink("missing-target", root / "dangling")
    (root / "setuid-bin").write_text("x")
    (root / "setuid-bin").chmod(0o4755)


async def test_upload_preserves_modes_and_symlinks(sandbox: LocalSandbox, tmp_path: Path) -> None:
    _make_tree(tmp_path)
    await sandbox.upload_tree(tmp_path, "/workspace")
    listing = await sandbox.exec(
        "cd /workspace && find . -mindepth 1 | sort | while read -r p; do "
        'printf \'%s %s %s\\n\' "$p" "$(stat -c \'%a %F\' "$p")" "$(readlink "$p")"; done'
    )
    lines = {
        line.split(" ", 1)[0]: line.split(" ", 1)[1].strip() for line in listing.output.splitlines()
    }
    assert lines["./run.sh"] == "755 regular file"
    assert lines["./private.txt"] == "600 regular file"
    assert lines["./empty-dir"] == "755 directory"
    assert lines["./link-to-file"].endswith("symbolic link pkg/mod.py")
    assert lines["./link-to-dir"].endswith("symbolic link pkg")
    assert lines["./pkg/sub/up-one"].endswith("symbolic link ../mod.py")
    assert lines["./dangling"].endswith("symbolic link missing-target")
    assert lines["./setuid-bin"] == "755 regular file"  # setuid never travels
    ran = await sandbox.exec("./run.sh && cat link-to-dir/mod.py")
    assert ran.output == "ran\nX = 1\n"
    assert await sandbox.read_file("/workspace/pkg/sub/data.bin") == ALL_BYTES
    owner = await sandbox.exec("stat -c %u /workspace/pkg/mod.py; id -u")
    uid_file, uid_me = owner.output.split()
    assert uid_file == uid_me  # the sandbox user owns, and can edit, its copy


@pytest.mark.parametrize("target", ["/etc/passwd", "../outside", "pkg/../../outside"])
async def test_upload_refuses_escaping_symlink(
    sandbox: LocalSandbox, tmp_path: Path, target: str
) -> None:
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "ok.txt").write_text("ok")
    os.symlink(target, tree / "evil")
    with pytest.raises(UnsafePathError, match="evil"):
        await sandbox.upload_tree(tree)
    # Nothing was copied: the tree is checked whole before any byte moves.
    assert (await sandbox.exec("ls -A /workspace")).output == ""


async def test_upload_refuses_special_files(sandbox: LocalSandbox, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(UnsafePathError, match="special file"):
        await sandbox.upload_tree(tmp_path)


async def test_upload_into_subdirectory_with_exclude(sandbox: LocalSandbox, tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("k")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").write_text("")
    await sandbox.upload_tree(tmp_path, "/tmp/copy", exclude=[".venv"])
    assert (await sandbox.exec("ls -A /tmp/copy")).output == "keep.txt\n"


async def test_upload_to_read_only_place_fails_clearly(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(OSError, match=r"Read-only file system|Permission denied"):
        await sandbox.upload_tree(tmp_path, "/usr/share/frognano-test")
