"""Each isolation property of the local sandbox, checked against a real sandbox."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from frognano.sandbox.local import LocalSandbox

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def host_server() -> Iterator[tuple[int, list[str], threading.Semaphore]]:
    """A TCP server on the host's 127.0.0.1 that records every connection it accepts, and
    releases the semaphore once per connection recorded."""
    accepted: list[str] = []
    recorded = threading.Semaphore(0)
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except TimeoutError:
                continue
            accepted.append(str(peer))
            recorded.release()
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], accepted, recorded
    finally:
        stop.set()
        thread.join()
        server.close()


def _connect(host: str, port: int) -> str:
    return f"timeout 5 bash -c 'exec 3<>/dev/tcp/{host}/{port}' && echo CONNECTED"


async def test_host_loopback_server_unreachable(
    sandbox: LocalSandbox, host_server: tuple[int, list[str], threading.Semaphore]
) -> None:
    port, accepted, recorded = host_server
    # The same probe from the host proves the server is up and the probe can succeed.
    probe = subprocess.run(
        ["bash", "-c", _connect("127.0.0.1", port)], capture_output=True, text=True, check=False
    )
    assert "CONNECTED" in probe.stdout
    # The kernel completes the handshake before the server's accept(): wait until the
    # host's own probe is recorded, or it could be recorded after the list is cleared.
    assert recorded.acquire(timeout=30)
    accepted.clear()

    result = await sandbox.exec(_connect("127.0.0.1", port))
    assert result.exit_code != 0
    assert "CONNECTED" not in result.output
    assert "refused" in result.output
    assert accepted == []


async def test_outside_addresses_unreachable(sandbox: LocalSandbox) -> None:
    for host, port in (("1.1.1.1", 443), ("8.8.8.8", 53), ("169.254.169.254", 80)):
        result = await sandbox.exec(_connect(host, port))
        assert result.exit_code != 0, host
        assert "Network is unreachable" in result.output, result.output


async def test_redis_port_on_host_unreachable(sandbox: LocalSandbox) -> None:
    # A real service the machine runs, when it runs one; the sandbox must not reach it.
    with socket.socket() as probe:
        probe.settimeout(1)
        if probe.connect_ex(("127.0.0.1", 6379)) != 0:
            pytest.skip("no Redis listening on the host's 127.0.0.1:6379")
    result = await sandbox.exec(_connect("127.0.0.1", 6379))
    assert result.exit_code != 0
    assert "CONNECTED" not in result.output


async def test_only_loopback_interface_and_no_dns(sandbox: LocalSandbox) -> None:
    links = await sandbox.exec("cat /proc/net/dev")
    names = [line.split(":")[0].strip() for line in links.output.splitlines()[2:]]
    assert names == ["lo"]
    dns = await sandbox.exec("getent hosts github.com")
    assert dns.exit_code != 0
    # Its own loopback works: a server started inside is reachable inside.
    own = await sandbox.exec(
        "python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 & "
        "for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8765) 2>/dev/null && "
        "echo UP && break; sleep 0.1; done"
    )
    assert "UP" in own.output


async def test_host_secret_not_visible(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cr3t-webhook-value-7f1c"
    monkeypatch.setenv("FROGNANO_WEBHOOK_SECRET", secret)
    result = await sandbox.exec(
        "env; cat /proc/self/environ /proc/1/environ 2>&1 | tr '\\0' '\\n'; "
        "for f in /proc/[0-9]*/environ; do cat $f 2>/dev/null | tr '\\0' '\\n'; done; "
        "grep -rs s3cr3t /proc/*/cmdline /tmp /home/sandbox; true"
    )
    assert secret not in result.output
    assert "FROGNANO" not in result.output
    env = await sandbox.exec("env -0 | sort -z | tr '\\0' '\\n' | cut -d= -f1")
    names = set(env.output.split())
    assert {"PATH", "HOME", "LANG", "TERM", "PAGER", "GIT_PAGER"} <= names
    assert names <= {
        "PATH",
        "HOME",
        "LANG",
        "TERM",
        "PAGER",
        "GIT_PAGER",
        "USER",
        "LOGNAME",
        "SHELL",
        "TMPDIR",
        "VIRTUAL_ENV",
        "PWD",
        "SHLVL",
        "_",
        "OLDPWD",
    }
    values = dict(line.split("=", 1) for line in (await sandbox.exec("env")).output.splitlines())
    assert values["TERM"] == "dumb"
    assert values["PAGER"] == values["GIT_PAGER"] == "cat"
    assert values["HOME"] == "/home/sandbox"


async def test_only_own_processes_visible(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec("ls -d /proc/[0-9]* | wc -l; cat /proc/1/cmdline | tr '\\0' ' '")
    count = int(result.output.split()[0])
    assert count < 10  # the init, the shell and ls: nothing of the host's
    assert "pytest" not in result.output


async def test_system_dirs_read_only(sandbox: LocalSandbox) -> None:
    for target in (
        "/etc/frognano-test",
        "/usr/frognano-test",
        "/usr/bin/frognano-test",
        "/frognano-test",
    ):
        result = await sandbox.exec(f"echo x > {target}")
        assert result.exit_code != 0, target
        assert "Read-only file system" in result.output, result.output
        assert not Path(target).exists()
    assert (await sandbox.exec("test -w /etc/passwd")).exit_code != 0
    assert (await sandbox.exec("echo x > /proc/sys/kernel/hostname")).exit_code != 0


async def test_host_checkout_home_and_root_not_visible(sandbox: LocalSandbox) -> None:
    # This test file lives in the project checkout on the host; the sandbox must not see it.
    here = await sandbox.exec(f"ls {Path(__file__).parent}; ls {REPO_ROOT}/pyproject.toml")
    assert "test_isolation.py" not in here.output
    assert here.exit_code != 0
    listing = await sandbox.exec("ls -A /root 2>/dev/null")
    inside_root = set(listing.output.split())
    # At most the path leading to a Python installation mounted from under /root (pyenv).
    mounted_tops = {
        path.relative_to("/root").parts[0]
        for path in sandbox.python_env.mounts
        if path.is_relative_to("/root")
    }
    assert inside_root <= mounted_tops
    host_home = Path.home()
    if host_home != Path("/root") and host_home.is_dir():
        assert (await sandbox.exec(f"ls -A {host_home}")).exit_code != 0


async def test_host_checkout_cannot_be_written(sandbox: LocalSandbox) -> None:
    target = REPO_ROOT / "README.md"
    before = target.read_bytes()
    result = await sandbox.exec(f"echo tampered >> {target}; echo x > {REPO_ROOT}/planted")
    assert result.exit_code != 0
    assert target.read_bytes() == before
    assert not (REPO_ROOT / "planted").exists()


async def test_writes_do_not_reach_host(sandbox: LocalSandbox, tmp_path: Path) -> None:
    source = tmp_path / "repo"
    source.mkdir()
    (source / "file.txt").write_text("original\n")
    await sandbox.upload_tree(source)
    result = await sandbox.exec(
        f"echo changed > /workspace/file.txt && cat /workspace/file.txt; echo x > {source}/file.txt"
    )
    assert "changed" in result.output
    assert (source / "file.txt").read_text() == "original\n"


async def test_non_root_without_capabilities(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec(
        "id -u; grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status"
    )
    lines = result.output.split("\n")
    assert int(lines[0]) != 0
    fields = dict(line.split(":\t") for line in lines[1:] if line)
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(fields[cap], 16) == 0, cap
    assert fields["NoNewPrivs"] == "1"
    shadow = await sandbox.exec("head -c 1 /etc/shadow")
    assert shadow.exit_code != 0
    assert "Permission denied" in shadow.output


async def test_toolchain_python_first_on_path(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec("command -v python3; python3 -c 'import sys; print(sys.prefix)'")
    env = sandbox.python_env
    assert result.output.split("\n")[0].startswith(str(env.bin_dir))
    assert result.output.split("\n")[1] == str(env.prefix)
    # The environment is read-only, so the model cannot install into it or corrupt it.
    write = await sandbox.exec(f"touch {env.prefix}/frognano-test")
    assert write.exit_code != 0
