"""Pure pieces of the sandbox: output capture, tree scanning, Python environment resolution."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from frognano.errors import ConfigError, UnsafePathError
from frognano.sandbox.base import sandbox_path
from frognano.sandbox.output import HeadTail
from frognano.sandbox.pyenv import resolve_python_env
from frognano.sandbox.tree import scan_tree


def test_head_tail_keeps_both_ends() -> None:
    buffer = HeadTail(10)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"qrst"):
        buffer.write(chunk)
    assert buffer.truncated
    assert buffer.dropped == 20 - 10
    value = buffer.getvalue()
    assert value.startswith(b"abcde")
    assert value.endswith(b"pqrst")
    assert b"10 bytes of output omitted" in value


def test_head_tail_exact_fit_is_untouched() -> None:
    buffer = HeadTail(8)
    buffer.write(b"12345678")
    assert not buffer.truncated
    assert buffer.getvalue() == b"12345678"
    with pytest.raises(ValueError, match="at least 2"):
        HeadTail(1)


def test_sandbox_path_normalises_and_refuses() -> None:
    assert sandbox_path("/workspace/a/../b//c/") == "/workspace/b/c"
    for bad in ("relative", "", "./x"):
        with pytest.raises(UnsafePathError):
            sandbox_path(bad)


def test_scan_tree_lists_sorted_with_kinds(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.py").write_text("x")
    (tmp_path / "a.txt").write_text("a")
    os.symlink("b/x.py", tmp_path / "link")
    entries = scan_tree(tmp_path)
    assert [(e.relpath, e.kind) for e in entries] == [
        ("a.txt", "file"),
        ("b", "dir"),
        ("link", "symlink"),
        ("b/x.py", "file"),
    ]
    assert entries[2].target == "b/x.py"


def test_scan_tree_refuses_escapes_and_non_directories(tmp_path: Path) -> None:
    (tmp_path / "deep" / "er").mkdir(parents=True)
    os.symlink("../../../etc", tmp_path / "deep" / "er" / "up")
    with pytest.raises(UnsafePathError, match=r"deep/er/up is a symlink to \.\./\.\./\.\./etc"):
        scan_tree(tmp_path)
    with pytest.raises(UnsafePathError, match="not a directory"):
        scan_tree(tmp_path / "missing")


def test_python_env_defaults_to_running_interpreter() -> None:
    env = resolve_python_env(None, None)
    assert env.prefix == Path(sys.prefix)
    assert env.bin_dir == Path(sys.prefix) / "bin"
    real_home = Path(sys.executable).resolve().parent.parent
    if not str(real_home).startswith(("/usr/", "/etc/")) and real_home != Path("/usr"):
        assert any(real_home == m or real_home.is_relative_to(m) for m in env.mounts)


def test_python_env_ignores_a_repositorys_venv_unless_asked(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / ".venv")], check=True
    )
    assert resolve_python_env(None, None).prefix == Path(sys.prefix)
    env = resolve_python_env(None, tmp_path / ".venv")
    assert env.prefix == tmp_path / ".venv"
    assert env.is_venv
    assert env.source == "the repository's .venv"
    # The venv itself, and the Python it was made from, which FrogNano's own environment
    # mounts anyway; nothing else.
    own = resolve_python_env(None, None).mounts
    assert env.mounts[0] == tmp_path / ".venv"
    assert set(env.mounts[1:]) <= set(own)


def _fake_venv(root: Path, home: str, python: Path = Path("/usr/bin/python3")) -> Path:
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").symlink_to(python)
    (root / ".venv" / "pyvenv.cfg").write_text(f"home = {home}\nversion = 3.11.2\n")
    return root / ".venv"


def test_repository_venv_cannot_name_a_host_directory(tmp_path: Path) -> None:
    """The attack: a committed pyvenv.cfg whose `home` is a host folder to read."""
    secret = tmp_path / "secrets"
    (secret / "bin").mkdir(parents=True)
    venv = _fake_venv(tmp_path / "repo", f"{secret}/bin")
    with pytest.raises(ConfigError, match=r"points outside itself, at .*secrets"):
        resolve_python_env(None, venv)


def test_repository_venv_cannot_link_its_python_outside(tmp_path: Path) -> None:
    outside = tmp_path / "host" / "bin"
    outside.mkdir(parents=True)
    (outside / "python3").symlink_to("/usr/bin/python3")
    venv = _fake_venv(tmp_path / "repo", "/usr/bin", python=outside / "python3")
    # The link's target resolves into /usr, but the folder it names is mounted for it.
    (tmp_path / "repo" / ".venv" / "bin" / "python").unlink()
    (tmp_path / "repo" / ".venv" / "bin" / "python").symlink_to(tmp_path / "host")
    with pytest.raises(ConfigError, match="points outside itself"):
        resolve_python_env(None, venv)


def test_repository_venv_holding_a_socket_is_refused(tmp_path: Path) -> None:
    import socket

    venv = _fake_venv(tmp_path / "repo", "/usr/bin")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(venv / "s"))
        with pytest.raises(ConfigError, match=r"holds a socket \(.*/s\)"):
            resolve_python_env(None, venv)


def test_repository_venv_inside_system_dirs_is_accepted(tmp_path: Path) -> None:
    venv = _fake_venv(tmp_path / "repo", "/usr/bin")
    env = resolve_python_env(None, venv)
    assert env.mounts == (venv,)


def test_python_env_explicit_must_hold_python(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="has no bin/python"):
        resolve_python_env(tmp_path, None)
    system = resolve_python_env(Path("/usr"), None)
    assert system.mounts == ()  # /usr is mounted anyway
