"""Choosing the isolation mechanism, refusing clearly, and the unprivileged bwrap path."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pyseccomp
import pytest
import structlog

import frognano
from frognano.errors import SandboxUnavailable
from frognano.sandbox.isolation import choose_mechanism
from frognano.sandbox.local import LocalSandbox
from tests.conftest import STRICT, options_for, require_mechanism

NOBODY = 65534
SYSTEM_PYTHON = Path("/usr/bin/python3")


def test_unknown_mechanism_refused() -> None:
    with pytest.raises(SandboxUnavailable, match="use auto, bwrap or unshare"):
        choose_mechanism("docker")


def test_root_prefers_unshare() -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can use the unshare mechanism")
    require_mechanism("unshare")
    assert choose_mechanism("auto") == "unshare"


async def test_bwrap_as_root_refuses_unreachable_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root drops privileges before bwrap")
    require_mechanism("bwrap")
    hidden = tmp_path / "private"
    (hidden / "env" / "bin").mkdir(parents=True)
    (hidden / "env" / "bin" / "python").symlink_to(SYSTEM_PYTHON)
    hidden.chmod(0o700)
    # A temporary folder of this test's own, so other tests' sandboxes (running at the same
    # time) cannot look like a host folder this failed creation left behind.
    own_tmp = Path(tempfile.mkdtemp(prefix="frognano-test-tmp-"))
    own_tmp.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    try:
        with pytest.raises(SandboxUnavailable, match=r"cannot reach .*private/env"):
            await LocalSandbox.create(options_for("bwrap", python_env=hidden / "env"))
        assert not list(own_tmp.glob("frognano-sandbox-*"))
    finally:
        monkeypatch.undo()
        shutil.rmtree(own_tmp, ignore_errors=True)


@pytest.fixture
def public_copy() -> Iterator[Path]:
    """FrogNano, structlog and pyseccomp copied where any user can read them (this checkout
    may not be)."""
    root = Path(tempfile.mkdtemp(prefix="frognano-public-"))
    try:
        root.chmod(0o755)
        shutil.copytree(Path(frognano.__file__).parent, root / "frognano")
        shutil.copytree(Path(structlog.__file__).parent, root / "structlog")
        shutil.copy(pyseccomp.__file__, root / "pyseccomp.py")
        for path in root.rglob("*"):
            path.chmod(path.stat().st_mode | stat.S_IROTH | (stat.S_IXOTH if path.is_dir() else 0))
        yield root
    finally:
        shutil.rmtree(root)


def _as_nobody(
    code: str, pythonpath: Path, path_env: str, groups: tuple[int, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Run Python `code` as nobody, as a laptop user would run FrogNano; `groups` are
    supplementary groups that user keeps."""
    if os.geteuid() != 0 or not SYSTEM_PYTHON.exists():
        msg = "needs root (to become nobody) and the system's /usr/bin/python3"
        if STRICT:
            pytest.fail(msg)
        pytest.skip(msg)
    return subprocess.run(
        [
            shutil.which("setpriv") or "/usr/bin/setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            f"--groups={','.join(map(str, groups))}" if groups else "--clear-groups",
            "--",
            str(SYSTEM_PYTHON),
            "-c",
            textwrap.dedent(code),
        ],
        capture_output=True,
        text=True,
        cwd="/",
        env={
            "PATH": path_env,
            "HOME": "/nonexistent",
            "PYTHONPATH": str(pythonpath),
            "TMPDIR": "/tmp",
        },
        timeout=120,
        check=False,
    )


def test_unprivileged_user_gets_bwrap_sandbox(public_copy: Path) -> None:
    """What a laptop user gets: no root, bwrap over unprivileged user namespaces."""
    done = _as_nobody(
        """
        import asyncio, os
        from frognano.sandbox import SandboxLimits, SandboxOptions, create_sandbox

        async def main():
            opts = SandboxOptions(limits=SandboxLimits(processes=32))
            async with await create_sandbox("local", opts) as box:
                print("host-uid", os.getuid(), box.mechanism)
                r = await box.exec(
                    "id -u; head -c1 /etc/shadow 2>&1;"
                    "cat /proc/net/dev | tail -n +3 | cut -d: -f1;"
                    "(exec 3<>/dev/tcp/1.1.1.1/443) 2>&1; grep NoNewPrivs /proc/self/status;"
                    # bash gives up on a failed fork by leaving the subshell; the sleeps
                    # it did start live on, and a glob (no fork needed) counts them.
                    "( for i in $(seq 100); do sleep 5 & done ) 2>/dev/null;"
                    "procs=(/proc/[0-9]*); echo processes=${#procs[@]}"
                , timeout=60)
                print(r.output)
                await box.write_file("/workspace/f", b"data")
                print("read", await box.read_file("/workspace/f"))
        asyncio.run(main())
        """,
        public_copy,
        "/usr/sbin:/usr/bin:/sbin:/bin",
    )
    assert done.returncode == 0, done.stderr
    assert f"host-uid {NOBODY} bwrap" in done.stdout
    assert "\n10001\n" in done.stdout
    assert "Permission denied" in done.stdout
    assert "Network is unreachable" in done.stdout
    assert "NoNewPrivs:\t1" in done.stdout
    running = int(done.stdout.split("processes=")[1].split()[0])
    assert 10 <= running <= 32  # processes=32 held, counted inside this sandbox only
    assert "read b'data'" in done.stdout


def test_unprivileged_user_without_bwrap_is_told_what_to_do(public_copy: Path) -> None:
    empty = Path(tempfile.mkdtemp(prefix="frognano-empty-path-"))
    try:
        empty.chmod(0o755)
        done = _as_nobody(
            """
            from frognano.errors import SandboxUnavailable
            from frognano.sandbox.isolation import choose_mechanism
            try:
                choose_mechanism("auto")
            except SandboxUnavailable as exc:
                print(exc)
            """,
            public_copy,
            str(empty),
        )
    finally:
        empty.rmdir()
    assert done.returncode == 0, done.stderr
    message = done.stdout.strip()
    assert "bwrap is not installed" in message
    assert "apt-get install bubblewrap" in message
    assert "user namespaces" in message
    assert message.count("\n") == 0  # one sentence, one line
