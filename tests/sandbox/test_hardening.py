"""Attacks on the sandbox from inside, one per hardening finding, for each mechanism here."""

from __future__ import annotations

import asyncio
import ctypes
import errno
import json
import os
import shutil
import socket
import tempfile
import threading
import zipfile
from pathlib import Path

import pytest

from frognano.sandbox import SandboxLimits
from frognano.sandbox.keyring import join_fresh_session_keyring
from frognano.sandbox.local import LocalSandbox
from frognano.sandbox.options import MiB
from frognano.sandbox.seccomp import denied_names
from tests.conftest import STRICT, MakeSandbox, options_for
from tests.sandbox.hardening_probes import (
    MOUNTS_PROBE,
    SYSCALL_PROBE,
    SYSCALLS,
    allow_all_program,
    syscall_table,
)
from tests.sandbox.test_mechanism import _as_nobody, public_copy

__all__ = ["public_copy"]  # the fixture, imported for this module's tests

# What the kernel answers without the filter differs from EPERM for these on any host: the
# call works, or fails on its bad arguments. The rest need privileges the sandbox lacks, so
# they fail with EPERM either way, and only the filter's own list says they are covered.
DIFFERS_UNFILTERED = {
    "keyctl", "add_key", "request_key", "perf_event_open", "name_to_handle_at", "iopl",
    "ioperm", "setns", "clone", "clone3", "ptrace", "ioctl", "fsconfig",
}  # fmt: skip


async def _syscalls(box: LocalSandbox) -> dict[str, list[int]]:
    await box.write_file("/tmp/probe.py", SYSCALL_PROBE.encode())
    result = await box.exec(f"python3 /tmp/probe.py '{syscall_table()}'", timeout=60)
    assert result.exit_code == 0, result.output
    answers: dict[str, list[int]] = {}
    for index, code in json.loads(result.output).items():
        answers.setdefault(SYSCALLS[int(index)][0], []).append(code)
    return answers


async def test_every_denied_syscall_fails_with_eperm(sandbox: LocalSandbox) -> None:
    status = await sandbox.exec("grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status")
    assert "Seccomp:\t2" in status.output
    assert "NoNewPrivs:\t1" in status.output
    filtered = await _syscalls(sandbox)
    expected = {name: errno.ENOSYS if name == "clone3" else errno.EPERM for name in filtered}
    assert {name: set(codes) for name, codes in filtered.items()} == {
        name: {code} for name, code in expected.items()
    }
    assert set(filtered) == set(denied_names()) - {"lookup_dcookie"}
    # Control: the same probes under a filter that allows everything answer otherwise, so
    # the EPERMs above are the filter's, not the kernel's.
    original = sandbox.layout.seccomp.read_bytes()
    sandbox.layout.seccomp.write_bytes(allow_all_program())
    try:
        unfiltered = await _syscalls(sandbox)
    finally:
        sandbox.layout.seccomp.write_bytes(original)
    differs = {name for name, codes in unfiltered.items() if set(codes) != {expected[name]}}
    assert differs >= DIFFERS_UNFILTERED, unfiltered


def _wheel(folder: Path) -> Path:
    """A minimal real wheel (one module), as pip builds them."""
    path = folder / "frognano_probe-1.0-py3-none-any.whl"
    info = "frognano_probe-1.0.dist-info"
    files = {
        "frognano_probe.py": "VALUE = 42\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: frognano-probe\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
        wheel.writestr(f"{info}/RECORD", record)
    return path


EXTENSION = r"""
#include <Python.h>
static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(42); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, NULL}, {NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "probe_ext", NULL, -1, methods};
PyMODINIT_FUNC PyInit_probe_ext(void) { return PyModule_Create(&module); }
"""

WORKLOAD = r"""
set -e
cd /workspace
git init -q repo && cd repo
git -c user.name=t -c user.email=t@e commit -q --allow-empty -m first
git log --oneline | wc -l
cd /workspace
python3 -m pip install -q --no-index --no-cache-dir --disable-pip-version-check \
  --target /tmp/site /tmp/frognano_probe-1.0-py3-none-any.whl
PYTHONPATH=/tmp/site python3 -c 'import frognano_probe; print("wheel", frognano_probe.VALUE)'
inc=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
printf 'probe_ext.so: ext.c\n\tcc -shared -fPIC -I%s -o $@ $<\n' "$inc" > Makefile
make -s
python3 -c 'import probe_ext; print("extension", probe_ext.answer())'
mkdir t && printf 'def test_one():\n    assert 1\n' > t/test_x.py
python3 -m pytest -q -p no:cacheprovider t | tail -1
"""


async def test_ordinary_build_and_test_workload_still_works(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    wheel = _wheel(tmp_path)
    await sandbox.write_file(f"/tmp/{wheel.name}", wheel.read_bytes())
    await sandbox.write_file("/workspace/ext.c", EXTENSION.encode())
    has_pytest = await sandbox.exec("python3 -c 'import pytest'")
    script = WORKLOAD if has_pytest.ok else WORKLOAD.rsplit("mkdir t", 1)[0]
    result = await sandbox.exec(script, timeout=300)
    assert result.exit_code == 0, result.output
    lines = result.output.split("\n")
    assert "1" in lines
    assert "wheel 42" in lines
    assert "extension 42" in lines
    if has_pytest.ok:
        assert "1 passed" in result.output


async def test_nested_user_namespaces_refused(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec("unshare -U true; echo $?; unshare -r id -u; echo $?")
    codes = [line for line in result.output.split() if line.isdigit()]
    assert codes == ["1", "1"], result.output
    assert "unshare failed" in result.output


async def test_shm_is_capped_and_fresh_for_every_command(make_sandbox: MakeSandbox) -> None:
    async with await make_sandbox(SandboxLimits(shm_bytes=4 * MiB)) as box:
        sizes = await box.exec("df --output=size -k /dev/shm | tail -1; stat -c %a /dev/shm")
        full = await box.exec("head -c 6000000 /dev/zero > /dev/shm/big; echo $?")
        gone = await box.exec("ls -A /dev/shm | wc -l")
    assert sizes.output.split() == ["4096", "1777"]
    assert "No space left on device" in full.output
    assert full.output.split()[-1] == "1"
    assert gone.output.strip() == "0"


# Every mount point a sandbox may have, besides the Python environment's folders.
INVENTORY = {
    "/", "/usr", "/etc", "/etc/passwd", "/etc/group", "/workspace", "/tmp", "/home/sandbox",
    "/opt/frognano", "/proc", "/proc/keys", "/proc/key-users", "/dev", "/dev/null",
    "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/pts",
    "/dev/shm",
    # bwrap's --proc covers these with read-only binds of themselves
    "/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs",
}  # fmt: skip
HOST_FOLDERS = ("/usr", "/etc", "/opt/frognano")


async def test_every_mount_is_in_the_inventory_and_holds_no_socket(
    sandbox: LocalSandbox,
) -> None:
    await sandbox.write_file("/tmp/mounts.py", MOUNTS_PROBE.encode())
    result = await sandbox.exec("python3 /tmp/mounts.py")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    env = {str(path) for path in sandbox.python_env.mounts}
    points = {row["point"] for row in rows}
    assert points - INVENTORY - env == set(), rows
    assert {"/", "/usr", "/etc", "/workspace", "/tmp", "/proc", "/dev/shm"} <= points
    read_only = {"/", "/usr", "/etc", "/etc/passwd", "/etc/group", "/opt/frognano", *env}
    for row in rows:
        if row["point"] in read_only or row["point"].startswith("/proc/"):
            assert "ro" in row["options"].split(","), row
    folders = " ".join([*HOST_FOLDERS, *sorted(env)])
    sockets = await sandbox.exec(f"find {folders} -xdev -type s 2>/dev/null | head -5")
    assert sockets.output.strip() == ""


async def test_a_committed_venv_cannot_mount_a_host_folder(
    make_sandbox: MakeSandbox, tmp_path: Path
) -> None:
    """The attack: .venv/pyvenv.cfg names a host folder as the interpreter's home."""
    secret = tmp_path / "secrets"
    (secret / "bin").mkdir(parents=True)
    (secret / "token").write_text("s3cret\n")
    (secret / "token").chmod(0o644)
    os.chmod(tmp_path, 0o755)  # noqa: S103 - the sandbox's uid must reach `secrets`
    repo = tmp_path / "repo"
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").write_text("#!/bin/sh\n")
    (repo / ".venv" / "pyvenv.cfg").write_text(f"home = {secret}/bin\n")
    async with await make_sandbox() as box:  # what solve and the worker build: no repo_venv
        await box.upload_tree(repo)
        result = await box.exec(f"cat {secret}/token; ls /workspace/.venv")
        mounts = {str(path) for path in box.python_env.mounts}
    assert "s3cret" not in result.output
    assert "No such file or directory" in result.output
    assert str(secret) not in mounts


GROUP = 4242  # a group no user here has


def _group_secret() -> Path:
    """An environment folder every user can search, holding a file only GROUP may read."""
    env = Path(tempfile.mkdtemp(prefix="frognano-groups-"))
    env.chmod(0o755)
    (env / "bin").mkdir(mode=0o755)
    (env / "bin" / "python").symlink_to("/usr/bin/python3")
    secret = env / "secret"
    secret.write_text("group-only\n")
    os.chown(secret, 0, GROUP)
    secret.chmod(0o640)
    return env


async def test_supplementary_groups_are_cleared_when_root_launches(mechanism: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give itself a supplementary group")
    env = _group_secret()
    saved = os.getgroups()
    try:
        os.setgroups([*saved, GROUP])
        async with await LocalSandbox.create(options_for(mechanism, python_env=env)) as box:
            result = await box.exec(f"cat {env}/secret; grep ^Groups: /proc/self/status")
            kept = box.kept_groups
    finally:
        os.setgroups(saved)
        shutil.rmtree(env)
    assert "group-only" not in result.output
    assert "Permission denied" in result.output
    assert kept == ()


def test_an_ordinary_user_is_warned_of_kept_groups_and_hardened(public_copy: Path) -> None:
    """bwrap as a laptop user: the filter, the caps and the masks hold the same; extra groups
    cannot be dropped, and FrogNano says so."""
    env = _group_secret()
    try:
        done = _as_nobody(
            f"""
            import asyncio, sys
            from pathlib import Path
            from frognano.log import configure_logging
            configure_logging("json", "WARNING", stream=sys.stdout)
            from frognano.sandbox import SandboxLimits, SandboxOptions, create_sandbox

            async def main():
                opts = SandboxOptions(
                    python_env=Path({str(env)!r}), limits=SandboxLimits(shm_bytes=4 << 20)
                )
                async with await create_sandbox("local", opts) as box:
                    print("mechanism", box.mechanism, "kept", list(box.kept_groups))
                    await box.write_file("/tmp/probe.py", {SYSCALL_PROBE!r}.encode())
                    calls = await box.exec("python3 /tmp/probe.py " + {repr(syscall_table())!r})
                    print("calls", calls.output.strip())
                    r = await box.exec(
                        "cat {env}/secret; df --output=size -k /dev/shm | tail -1;"
                        "unshare -U true || echo nested-refused; wc -c < /proc/keys;"
                        "grep ^Seccomp: /proc/self/status"
                    )
                    print(r.output)
            asyncio.run(main())
            """,
            public_copy,
            "/usr/sbin:/usr/bin:/sbin:/bin",
            groups=(GROUP,),
        )
    finally:
        shutil.rmtree(env)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"mechanism bwrap kept [{GROUP}]" in out
    assert "sandbox.groups_kept" in out
    assert "supplementary groups" in out
    assert "group-only" in out  # the documented limit: those groups' files stay readable
    codes = json.loads(out.split("calls ", 1)[1].split("\n", 1)[0])
    names = [name for name, _ in SYSCALLS]
    assert {names[int(i)]: c for i, c in codes.items()} == {
        name: errno.ENOSYS if name == "clone3" else errno.EPERM for name in names
    }
    assert "4096" in out.split(), out
    assert "nested-refused" in out
    assert "Seccomp:\t2" in out
    assert "/proc/keys: Permission denied" in out


UEVENT_PROBE = r"""
import socket, sys
s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15)  # NETLINK_KOBJECT_UEVENT
try:
    s.bind((0, 1))
except OSError as exc:
    print("bind refused", exc.errno)
    sys.exit(0)
print("listening", flush=True)
s.settimeout(float(sys.argv[1]))
try:
    print("received", s.recv(65536)[:60])
except (TimeoutError, socket.timeout):
    print("nothing")
"""
UEVENT = Path("/sys/devices/virtual/mem/null/uevent")  # a `change` for /dev/null: harmless


def _host_sees_uevents() -> bool:
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15) as host:
        host.bind((0, 1))
        host.settimeout(2)
        UEVENT.write_text("change")
        try:
            return b"change@" in host.recv(65536)
        except TimeoutError:
            return False


async def test_host_device_events_do_not_reach_the_sandbox(sandbox: LocalSandbox) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can make the kernel announce a device event")
    assert _host_sees_uevents(), "the control failed: the host itself saw no uevent"
    await sandbox.write_file("/tmp/uevent.py", UEVENT_PROBE.encode())

    async def announce() -> None:
        for _ in range(20):
            await asyncio.sleep(0.1)
            UEVENT.write_text("change")

    result, _ = await asyncio.gather(
        sandbox.exec("python3 /tmp/uevent.py 3", timeout=30), announce()
    )
    assert result.exit_code == 0, result.output
    assert "received" not in result.output
    assert "nothing" in result.output or "bind refused" in result.output


def _keyctl(*args: int | str) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    real = [ctypes.c_char_p(a.encode()) if isinstance(a, str) else ctypes.c_long(a) for a in args]
    return int(libc.syscall(*real))


SYS_ADD_KEY, SYS_KEYCTL, KEYCTL_SEARCH, SESSION = 248, 250, 10, -3


def test_launchers_inherit_a_fresh_keyring_without_the_callers_keys() -> None:
    """The attack read a secret from the launching session's keyring: a key added before a
    command is launched is not in the keyring that command inherits."""
    if os.uname().machine != "x86_64":
        pytest.skip("syscall numbers here are x86_64's")
    found: list[int] = []

    def in_thread() -> None:
        key = _keyctl(SYS_ADD_KEY, "user", "frognano-test-secret", "s3cret", 6, SESSION)
        assert key > 0
        assert _keyctl(SYS_KEYCTL, KEYCTL_SEARCH, SESSION, "user", "frognano-test-secret", 0) == key
        assert join_fresh_session_keyring()
        found.append(_keyctl(SYS_KEYCTL, KEYCTL_SEARCH, SESSION, "user", "frognano-test-secret", 0))
        found.append(ctypes.get_errno())

    worker = threading.Thread(target=in_thread)
    worker.start()
    worker.join()
    assert found == [-1, errno.ENOKEY]


async def test_keys_are_out_of_reach_inside(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec("cat /proc/keys /proc/key-users 2>&1 | grep -v 'Permission denied'")
    assert result.output.strip() == ""


async def test_memory_of_the_whole_sandbox_is_capped_where_a_cgroup_can_be_made(
    make_sandbox: MakeSandbox,
) -> None:
    """tmpfs pages (/dev/shm) escape the per-process address-space limit; the sandbox's
    memory cgroup does not let them."""
    limits = SandboxLimits(memory_bytes=96 * MiB, shm_bytes=512 * MiB)
    async with await make_sandbox(limits) as box:
        cgroup = box.memory_cgroup
        if cgroup is None:
            if os.geteuid() == 0 and STRICT:
                pytest.fail("root could not make a memory cgroup here")
            pytest.skip("no cgroup this process may create (no v2 delegation, no v1 memory)")
        result = await box.exec("head -c 300000000 /dev/zero > /dev/shm/fill; echo done")
        small = await box.exec("head -c 20000000 /dev/zero > /dev/shm/fill; echo fits")
        path = cgroup.path
        assert path.is_dir()
    assert result.exit_code == 137, result.output  # the kernel's OOM killer, inside only
    assert "done" not in result.output
    assert small.output.strip() == "fits"
    assert not path.exists()  # removed with the sandbox


async def test_folders_above_an_environment_in_tmp_are_not_the_sandboxs(mechanism: str) -> None:
    """A CI checkout's .venv under /tmp is mounted inside the sandbox's own /tmp; the folders
    leading to it must not become the sandbox's to write (as they would, made by bwrap)."""
    if os.geteuid() != 0:
        pytest.skip("an ordinary user's sandbox runs as that user, who owns them anyway")
    top = Path(tempfile.mkdtemp(prefix="frognano-checkout-"))
    top.chmod(0o755)
    env = top / "checkout" / ".venv"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").symlink_to("/usr/bin/python3")
    try:
        async with await LocalSandbox.create(options_for(mechanism, python_env=env)) as box:
            result = await box.exec(
                f"touch {top}/x; touch {top}/checkout/y; echo > {env}/planted; ls -ld {top}"
            )
    finally:
        shutil.rmtree(top)
    assert result.output.count("Permission denied") == 2, result.output
    assert result.output.count("Read-only file system") == 1, result.output
    assert " nobody " in result.output  # host root, unmapped inside: not the sandbox user
