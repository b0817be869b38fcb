"""Choosing the isolation mechanism, refusing clearly, and the unprivileged bwrap path."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pyseccomp
import pytest
import structlog

import frognano
from frognano.errors import SandboxUnavailable
from frognano.sandbox.egress import Destination, EgressProxy
from frognano.sandbox.isolation import choose_mechanism
from frognano.sandbox.local import LocalSandbox
from frognano.sandbox.options import SandboxLimits
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


async def test_bwrap_as_root_reaches_a_python_only_root_can_read(tmp_path: Path) -> None:
    """bwrap started by root runs in the same held namespace as unshare: the holder, as root,
    binds the Python environment, so a pyenv under a 0700 folder works; inside, the sandbox's
    uid is 10001 and the disk is the capped filesystem."""
    if os.geteuid() != 0:
        pytest.skip("only root launches sandboxes as another uid")
    require_mechanism("bwrap")
    hidden = tmp_path / "private"
    (hidden / "env" / "bin").mkdir(parents=True)
    (hidden / "env" / "bin" / "python").symlink_to(SYSTEM_PYTHON)
    hidden.chmod(0o700)
    limits = SandboxLimits(disk_bytes=64 << 20)
    options = options_for("bwrap", python_env=hidden / "env", limits=limits)
    async with await LocalSandbox.create(options) as box:
        result = await box.exec(
            f"{hidden}/env/bin/python -c 'import os; print(os.getuid())';"
            "df -k --output=size /workspace | tail -1; grep ^Groups: /proc/self/status"
        )
    assert box.mechanism == "bwrap"
    assert result.ok, result.output
    uid, size, groups = result.output.splitlines()
    assert uid == "10001"
    assert 0 < int(size) <= 64 << 10
    assert groups.split() == ["Groups:"]


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
    code: str,
    pythonpath: Path,
    path_env: str,
    groups: tuple[int, ...] = (),
    *,
    uid: int = NOBODY,
    gid: int = NOBODY,
) -> subprocess.CompletedProcess[str]:
    """Run Python `code` as nobody (or `uid`), as a laptop user would run FrogNano; `groups`
    are supplementary groups that user keeps."""
    if os.geteuid() != 0 or not SYSTEM_PYTHON.exists():
        msg = "needs root (to become nobody) and the system's /usr/bin/python3"
        if STRICT:
            pytest.fail(msg)
        pytest.skip(msg)
    return subprocess.run(
        [
            shutil.which("setpriv") or "/usr/bin/setpriv",
            f"--reuid={uid}",
            f"--regid={gid}",
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


async def test_an_ordinary_users_build_sandbox_reaches_the_index_through_the_socket_alone(
    public_copy: Path,
) -> None:
    """The environment phase's sandbox as a laptop user gets it (bwrap, no root): the proxy's
    socket is its one way out, to the approved host only; /environment is writable there."""
    index = HTTPServer(("127.0.0.1", 0), _Hello)
    other = HTTPServer(("127.0.0.1", 0), _Hello)
    for server in (index, other):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    egress = Path(tempfile.mkdtemp(prefix="fn-egress-", dir="/tmp"))
    built = Path(tempfile.mkdtemp(prefix="fn-env-", dir="/tmp"))
    try:
        egress.chmod(0o755)
        os.chown(built, NOBODY, NOBODY)
        fetch = (
            "import sys, urllib.request as u\n"
            "proxy = u.ProxyHandler({'http': 'http://127.0.0.1:3128'})\n"
            "for url in sys.argv[1:]:\n"
            "    try:\n"
            "        print(url, u.build_opener(proxy).open(url, timeout=10).read().decode())\n"
            "    except Exception as exc:\n"
            "        print(url, 'failed', getattr(exc, 'code', type(exc).__name__))\n"
        )
        urls = [f"http://127.0.0.1:{s.server_port}/" for s in (index, other)]
        command = (
            "exec 3< <(python3 /opt/frognano/egress_relay.py 3128 /run/frognano-egress/proxy.sock);"
            f"read -r ready <&3; echo $ready; python3 -c {shlex.quote(fetch)} {' '.join(urls)};"
            f"(exec 4<>/dev/tcp/127.0.0.1/{index.server_port}) 2>&1 | tail -1;"
            "echo built > /environment/marker && id -u"
        )
        code = f"""
            import asyncio
            from pathlib import Path
            import frognano.sandbox
            from frognano.sandbox import SandboxOptions, create_sandbox

            relay = Path(frognano.sandbox.__file__).parent / "egress_relay.py"

            async def main():
                opts = SandboxOptions(
                    environment=Path({str(built)!r}), environment_writable=True,
                    egress=Path({str(egress)!r}),
                    tool_files=(("egress_relay.py", relay.read_bytes()),),
                )
                async with await create_sandbox("local", opts) as box:
                    print("mechanism", box.mechanism)
                    print((await box.exec({command!r}, timeout=60)).output)
            asyncio.run(main())
        """
        allowed = [Destination("127.0.0.1", index.server_port)]
        async with EgressProxy(egress / "proxy.sock", allowed) as proxy:
            done = await asyncio.to_thread(
                _as_nobody, code, public_copy, "/usr/sbin:/usr/bin:/sbin:/bin"
            )
        assert done.returncode == 0, done.stderr
        assert "mechanism bwrap" in done.stdout
        assert "ready 3128" in done.stdout
        assert f"{urls[0]} hello" in done.stdout, done.stdout
        assert f"{urls[1]} failed 403" in done.stdout, done.stdout
        assert "Connection refused" in done.stdout  # its own loopback, not the host's
        assert (built / "marker").read_text() == "built\n"
        assert [(a.host, a.port) for a in proxy.refused] == [("127.0.0.1", other.server_port)]
    finally:
        for server in (index, other):
            server.shutdown()
            server.server_close()
        shutil.rmtree(egress, ignore_errors=True)
        shutil.rmtree(built, ignore_errors=True)


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: object) -> None:
        del args
