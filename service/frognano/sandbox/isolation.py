"""The two ways the local backend isolates a command: bubblewrap, or unshare + setpriv as root."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from frognano.errors import SandboxStartError, SandboxUnavailable
from frognano.sandbox.paths import HOME, TMP, TOOLS, WORKSPACE

# The uid commands see inside a bwrap sandbox (bwrap maps it onto the invoking host user).
INNER_UID = 10001
# Host uids handed to root-launched sandboxes: one per sandbox, so RLIMIT_NPROC (counted per
# real uid) is a per-sandbox limit. Kept below 2**21 so ustar-format tools still work.
HOST_UID_RANGE = (1_100_000, 2_000_000)
# Environment of the launcher processes themselves: nothing of the host's passes through.
LAUNCH_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
}
_ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")

# Runs as the sandbox user, inside every namespace, as the last step before the command.
# Limits are set here, after any user namespace exists, so they count this sandbox only.
# Writing to the status fd proves the sandbox started; a command's own failures come after.
# When it is pid 1 (unshare), it must not exec the command: pid 1 ignores signals it has no
# handler for, so `kill -9 $$` would not work; it runs the command as a child instead.
INIT_SCRIPT = r"""
fd=$1 nproc=$2 nofile=$3 fsize=$4 vmem=$5 cwd=$6 cmd=$7
shift 7
umask 022
ulimit -S -H -u "$nproc" -n "$nofile" -f "$fsize" -v "$vmem" || exit 125
printf 'started\n' >&"$fd" || exit 125
exec {fd}>&-
cd -- "$cwd" || exit 126
if [ "$$" -eq 1 ]; then
  /bin/bash -c -- "$cmd" bash "$@" <&0 &
  child=$!
  exec 2>/dev/null
  wait "$child"
  exit $?
fi
exec /bin/bash -c -- "$cmd" bash "$@"
"""


_INIT_COMMAND = ["/bin/bash", "--noprofile", "--norc", "-c", INIT_SCRIPT, "frognano-init"]


@dataclass(frozen=True)
class Layout:
    """Host paths of one sandbox and what it mounts."""

    base: Path
    workspace: Path
    tmp: Path
    home: Path
    passwd: Path
    group: Path
    rootfs: Path
    readonly: tuple[Path, ...]
    """Extra host paths bound read-only at the same path (the Python environment)."""
    tools: Path
    """Host directory bound read-only at TOOLS: FrogNano's own files, never the repository's."""
    env: dict[str, str]
    """The complete environment of commands inside."""


def _run_quiet(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, env=LAUNCH_ENV, timeout=30, check=False
    )


def _root_binds() -> list[str]:
    """bwrap arguments recreating /bin, /lib... as the host has them (symlinks on merged-/usr)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _ROOT_LINKS:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    return args


@functools.cache
def _bwrap_supports(flag: str) -> bool:
    path = shutil.which("bwrap")
    if path is None:
        return False
    return flag in _run_quiet([path, "--help"]).stdout


def _drop_privileges(uid: int) -> list[str]:
    # Become `uid` for good: no groups, no capabilities (bounding set too), no way to regain
    # privileges through setuid binaries, and die if FrogNano dies.
    return [
        "setpriv", f"--reuid={uid}", f"--regid={uid}",
        *"--clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all".split(),
        *"--pdeathsig KILL --".split(),
    ]  # fmt: skip


def _reachable_by_others(path: Path) -> bool:
    """Whether a uid that is neither owner nor group can list `path` (search every parent)."""
    try:
        if path.stat().st_mode & 0o005 != 0o005:
            return False
        return all(parent.stat().st_mode & 0o001 for parent in path.parents)
    except OSError:
        return False


@functools.cache
def bwrap_problem(as_uid: int | None) -> str | None:
    """None when bwrap can create an unprivileged sandbox here, else what went wrong."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap is not installed"
    argv = [
        bwrap, *"--unshare-all --unshare-user --die-with-parent".split(), *_root_binds(),
        *"--proc /proc --dev /dev".split(),
        "--uid", str(INNER_UID), "--gid", str(INNER_UID), "/bin/true",
    ]  # fmt: skip
    if as_uid is not None:
        argv = _drop_privileges(as_uid) + argv
    done = _run_quiet(argv)
    if done.returncode != 0:
        return (done.stderr or done.stdout).strip() or f"bwrap exited with {done.returncode}"
    return None


def unshare_problem() -> str | None:
    """None when the root-only unshare mechanism can work here, else what is missing."""
    if os.geteuid() != 0:
        return "the unshare mechanism needs root"
    missing = [
        t
        for t in ("unshare", "nsenter", "setpriv", "pivot_root", "mount", "ip")
        if shutil.which(t) is None
    ]
    if missing:
        return f"missing {', '.join(missing)} (Debian: apt-get install util-linux mount iproute2)"
    return None


def choose_mechanism(requested: str) -> str:
    """Pick `bwrap` or `unshare` for this host, or raise SandboxUnavailable saying how to fix it.

    As root, `auto` picks unshare: bwrap run by root maps the sandbox user onto host root,
    which can read root-owned files such as /etc/shadow; unshare + setpriv runs commands as a
    fresh unprivileged host uid instead. Otherwise `auto` picks bwrap.
    """
    if requested not in ("auto", "bwrap", "unshare"):
        raise SandboxUnavailable(
            f"unknown local sandbox mechanism {requested!r}; use auto, bwrap or unshare"
        )
    root = os.geteuid() == 0
    if requested == "unshare" or (requested == "auto" and root):
        problem = unshare_problem()
        if problem is None:
            return "unshare"
        if requested == "unshare":
            raise SandboxUnavailable(f"cannot use the unshare sandbox: {problem}")
    problem = bwrap_problem(HOST_UID_RANGE[0] if root else None)
    if problem is None:
        return "bwrap"
    raise SandboxUnavailable(
        f"no local sandbox is possible on this host ({problem}); install bubblewrap "
        "(apt-get install bubblewrap) and allow unprivileged user namespaces "
        "(sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04+ "
        "kernel.apparmor_restrict_unprivileged_userns=0), or run as root, "
        "or use FROGNANO_SANDBOX=kubernetes"
    )


class BwrapLauncher:
    """One bubblewrap sandbox per command over the shared workspace, /tmp and home."""

    name = "bwrap"

    def __init__(self, layout: Layout, drop_to_uid: int | None) -> None:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SandboxUnavailable("bwrap is not installed (apt-get install bubblewrap)")
        prefix: list[str] = []
        if drop_to_uid is not None:
            prefix = _drop_privileges(drop_to_uid)
            for path in layout.readonly:
                if not _reachable_by_others(path):
                    raise SandboxUnavailable(
                        f"bwrap started by root runs as an unprivileged uid, which cannot reach "
                        f"{path}; use FROGNANO_LOCAL_SANDBOX_MECHANISM=unshare (the default for "
                        "root) or a Python environment that every user can read"
                    )
        # Every namespace, a user namespace even for root, no capabilities, and a new session
        # so the command cannot push input into a terminal FrogNano runs in (TIOCSTI).
        args = [bwrap, *"--die-with-parent --new-session --unshare-all --unshare-user".split()]
        args += ["--cap-drop", "ALL"]
        if _bwrap_supports("--disable-userns"):
            args.append("--disable-userns")
        args += ["--uid", str(INNER_UID), "--gid", str(INNER_UID), "--hostname", "sandbox"]
        args += _root_binds()
        args += ["--ro-bind", "/etc", "/etc"]
        args += ["--ro-bind", str(layout.passwd), "/etc/passwd"]
        args += ["--ro-bind", str(layout.group), "/etc/group"]
        args += ["--bind", str(layout.workspace), WORKSPACE]
        args += ["--bind", str(layout.tmp), TMP]
        args += ["--bind", str(layout.home), HOME]
        # After the writable directories: an environment under /tmp (a CI checkout's .venv)
        # must sit on top of the sandbox's private /tmp, not be hidden by it.
        for path in layout.readonly:
            args += ["--ro-bind", str(path), str(path)]
        args += ["--ro-bind", str(layout.tools), TOOLS]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm"]  # noqa: S108
        args += ["--remount-ro", "/", "--clearenv"]
        for key, value in layout.env.items():
            args += ["--setenv", key, value]
        args += ["--chdir", "/", "--", *_INIT_COMMAND]
        self._argv = prefix + args

    async def start(self) -> None:
        """Nothing to prepare: bwrap builds each sandbox in a few milliseconds."""

    def argv(self, init_args: Sequence[str]) -> list[str]:
        return [*self._argv, *init_args]

    async def stop(self) -> None:
        """Nothing outlives a command."""


# Runs once per sandbox as root in a new mount namespace: builds the sandbox's root
# filesystem, pivots into it and then holds the namespace open (sleep) for the commands.
_HOLDER_SCRIPT = r"""
set -euo pipefail
R=$1 WS=$2 TMPD=$3 HOMED=$4 PASSWD=$5 GROUP=$6 TOOLSD=$7
shift 7
mount -t tmpfs -o mode=0755,nosuid,nodev,size=4m frognano-root "$R"
bindro() {
  mkdir -p "$R$2"; mount --bind "$1" "$R$2"; mount -o remount,bind,ro,nosuid,nodev "$R$2"
}
bindrw() {
  mkdir -p "$R$2"; mount --bind "$1" "$R$2"; mount -o remount,bind,nosuid,nodev "$R$2"
}
bindfile() {
  [ -e "$R$2" ] || touch "$R$2"
  mount --bind "$1" "$R$2"; mount -o remount,bind,ro,nosuid,nodev "$R$2"
}
bindro /usr /usr
for name in bin sbin lib lib32 lib64 libx32; do
  if [ -L "/$name" ]; then ln -s "$(readlink "/$name")" "$R/$name"
  elif [ -d "/$name" ]; then bindro "/$name" "/$name"; fi
done
bindro /etc /etc
bindfile "$PASSWD" /etc/passwd
bindfile "$GROUP" /etc/group
bindrw "$WS" /workspace
bindrw "$TMPD" /tmp
bindrw "$HOMED" /home/sandbox
# After the writable directories, so an environment under /tmp is not hidden by them.
for path in "$@"; do bindro "$path" "$path"; done
bindro "$TOOLSD" @TOOLS@
mkdir -p "$R/proc" "$R/dev"
mount -t tmpfs -o mode=0755,nosuid,noexec,size=64k frognano-dev "$R/dev"
for dev in null zero full random urandom tty; do
  touch "$R/dev/$dev"; mount --bind "/dev/$dev" "$R/dev/$dev"
done
ln -s /proc/self/fd "$R/dev/fd"
ln -s /proc/self/fd/0 "$R/dev/stdin"; ln -s /proc/self/fd/1 "$R/dev/stdout"
ln -s /proc/self/fd/2 "$R/dev/stderr"
mkdir "$R/dev/shm" "$R/dev/pts"
mount -t tmpfs -o nosuid,nodev,mode=1777 frognano-shm "$R/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$R/dev/pts"
ln -s pts/ptmx "$R/dev/ptmx"
# umount finds mounts through /proc, so a proc is mounted just for the switch and removed.
mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
cd "$R"
mkdir .host
pivot_root . .host
cd /
umount -l /.host
rmdir /.host
umount /proc
mount -o remount,bind,ro,nosuid,nodev /
echo ready
exec sleep infinity
""".replace("@TOOLS@", TOOLS)

# Runs for each command as root, pid 1 of fresh pid/net/ipc/uts/cgroup namespaces inside the
# held mount namespace, then becomes the sandbox user for good.
_EXEC_SCRIPT = r"""
set -eu
uid=$1
shift
mount -t proc -o nosuid,nodev,noexec proc /proc
echo sandbox > /proc/sys/kernel/hostname
ip link set lo up
exec setpriv --reuid="$uid" --regid="$uid" --clear-groups --no-new-privs --inh-caps=-all \
  --bounding-set=-all --pdeathsig KILL -- "$@"
"""


class UnshareLauncher:
    """Root only: one mount namespace per sandbox, fresh other namespaces per command."""

    name = "unshare"

    def __init__(self, layout: Layout, host_uid: int) -> None:
        self._layout = layout
        self._uid = host_uid
        self._holder: asyncio.subprocess.Process | None = None
        env_args = [f"{key}={value}" for key, value in layout.env.items()]
        self._command_tail = ["/usr/bin/env", "-i", *env_args, *_INIT_COMMAND]

    @property
    def holder_pid(self) -> int | None:
        return None if self._holder is None else self._holder.pid

    async def start(self) -> None:
        layout = self._layout
        paths = [layout.rootfs, layout.workspace, layout.tmp, layout.home, layout.passwd,
                 layout.group, layout.tools, *layout.readonly]  # fmt: skip
        argv = [
            *"setpriv --pdeathsig KILL -- unshare --mount --propagation private --".split(),
            "/bin/bash", "--noprofile", "--norc", "-c", _HOLDER_SCRIPT, "frognano-holder",
            *map(str, paths),
        ]  # fmt: skip
        self._holder = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=LAUNCH_ENV,
            start_new_session=True,
        )
        stdout, stderr = self._holder.stdout, self._holder.stderr
        if stdout is None or stderr is None:
            raise SandboxStartError("the namespace holder has no pipes")
        try:
            line = await asyncio.wait_for(stdout.readline(), timeout=30)
        except TimeoutError:
            line = b""
        if line.strip() != b"ready":
            await self.stop()
            detail = (await stderr.read()).decode("utf-8", "replace").strip()
            raise SandboxStartError(
                f"could not build the sandbox's root filesystem: {detail or 'no output'}"
            )

    def argv(self, init_args: Sequence[str]) -> list[str]:
        if self._holder is None:
            raise SandboxStartError("the sandbox was not started")
        # setpriv makes the launcher die with FrogNano; nsenter joins the sandbox's mount
        # namespace; unshare makes the per-command ones and mounts this pid namespace's /proc.
        return [
            *"setpriv --pdeathsig KILL --".split(),
            "nsenter", f"--mount=/proc/{self._holder.pid}/ns/mnt", "--",
            *"unshare --pid --net --ipc --uts --cgroup --mount --propagation private".split(),
            *"--fork --kill-child --mount-proc --".split(),
            "/bin/bash", "--noprofile", "--norc", "-c", _EXEC_SCRIPT, "frognano-exec",
            str(self._uid), *self._command_tail, *init_args,
        ]  # fmt: skip

    async def stop(self) -> None:
        holder = self._holder
        if holder is None or holder.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(holder.pid, signal.SIGKILL)
        await holder.wait()
