"""How the local backend isolates a command: bubblewrap, with the options both mechanisms share."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from frognano.errors import SandboxUnavailable
from frognano.sandbox.paths import EGRESS, ENVIRONMENT, HOME, TMP, TOOLS, WORKSPACE

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
# bwrap's own init is the namespace's pid 1, so the command can be killed like any process.
INIT_SCRIPT = r"""
fd=$1 nproc=$2 nofile=$3 fsize=$4 vmem=$5 cwd=$6 cmd=$7
shift 7
umask 022
ulimit -S -H -u "$nproc" -n "$nofile" -f "$fsize" -v "$vmem" || exit 125
printf 'started\n' >&"$fd" || exit 125
exec {fd}>&-
cd -- "$cwd" || exit 126
exec /bin/bash -c -- "$cmd" bash "$@"
"""


INIT_COMMAND = ["/bin/bash", "--noprofile", "--norc", "-c", INIT_SCRIPT, "frognano-init"]


@dataclass(frozen=True)
class Layout:
    """Host paths of one sandbox and what it mounts."""

    base: Path
    workspace: Path
    tmp: Path
    home: Path
    passwd: Path
    group: Path
    storage: Path
    """Mount point of the size-capped filesystem that holds the workspace, /tmp and home
    (unshare mechanism; it exists only in that sandbox's mount namespace)."""
    seccomp: Path
    """The compiled seccomp filter, handed to bwrap on a file descriptor for every command."""
    readonly: tuple[Path, ...]
    """Extra host paths bound read-only at the same path (the Python environment)."""
    tools: Path
    """Host directory bound read-only at TOOLS: FrogNano's own files, never the repository's."""
    env: dict[str, str]
    """The complete environment of commands inside."""
    environment: Path | None = None
    """A built Python environment bound at ENVIRONMENT (read-only unless being built)."""
    environment_writable: bool = False
    egress: Path | None = None
    """Host folder bound at EGRESS: the environment phase's socket to FrogNano's proxy."""


@dataclass(frozen=True)
class Sources:
    """Where bwrap finds what it binds: the host paths, or their places in a held namespace."""

    workspace: Path
    tmp: Path
    home: Path
    passwd: Path
    group: Path
    tools: Path
    readonly: tuple[tuple[Path, Path], ...]
    """(source, destination) pairs bound read-only."""
    environment: Path | None = None
    egress: Path | None = None

    @classmethod
    def on_host(cls, layout: Layout) -> Sources:
        return cls(
            workspace=layout.workspace,
            tmp=layout.tmp,
            home=layout.home,
            passwd=layout.passwd,
            group=layout.group,
            tools=layout.tools,
            readonly=tuple((path, path) for path in layout.readonly),
            environment=layout.environment,
            egress=layout.egress,
        )


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


def _drop_privileges(uid: int) -> list[str]:
    # Become `uid` for good: no groups, no capabilities (bounding set too), no way to regain
    # privileges through setuid binaries, and die if FrogNano dies.
    return [
        "setpriv", f"--reuid={uid}", f"--regid={uid}",
        *"--clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all".split(),
        *"--pdeathsig KILL --".split(),
    ]  # fmt: skip


@functools.cache
def bwrap_problem(as_uid: int | None) -> str | None:
    """None when bwrap can create an unprivileged sandbox here, else what went wrong."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap is not installed"
    # The features every sandbox uses; bwrap before 0.8 lacks --disable-userns.
    argv = [
        bwrap, *"--unshare-all --unshare-user --disable-userns --die-with-parent".split(),
        *_root_binds(), *"--proc /proc --dev /dev --size 65536 --tmpfs /dev/shm".split(),
        "--uid", str(INNER_UID), "--gid", str(INNER_UID), "/bin/true",
    ]  # fmt: skip
    if as_uid is not None:
        argv = _drop_privileges(as_uid) + argv
    done = _run_quiet(argv)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip() or f"bwrap exited with {done.returncode}"
        if "disable-userns" in detail or "Unknown option" in detail:
            return f"{detail} (bubblewrap 0.8 or newer is needed)"
        return detail
    return None


def unshare_problem() -> str | None:
    """None when the root-only unshare mechanism can work here, else what is missing."""
    if os.geteuid() != 0:
        return "the unshare mechanism needs root"
    missing = [t for t in ("unshare", "nsenter", "mount", "bwrap") if shutil.which(t) is None]
    if missing:
        return f"missing {', '.join(missing)} (Debian: apt-get install util-linux mount bubblewrap)"
    # Each command is a bwrap sandbox started as the sandbox's own unprivileged uid.
    problem = bwrap_problem(HOST_UID_RANGE[0])
    if problem is not None:
        return f"bwrap cannot run as an unprivileged uid: {problem}"
    return None


@functools.cache
def holder_problem() -> str | None:
    """None when this user can hold a user and mount namespace with a tmpfs in it."""
    missing = [tool for tool in ("unshare", "nsenter", "mount") if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)} (Debian: apt-get install util-linux mount)"
    done = _run_quiet(
        [*"unshare --user --map-root-user --mount --propagation private --".split(),
         "mount", "-t", "tmpfs", "-o", "size=1m", "frognano-probe", "/mnt"]
    )  # fmt: skip
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip() or f"exit {done.returncode}"
        return f"`unshare --user --mount` with a tmpfs failed: {detail}"
    return None


@functools.cache
def groups_problem() -> str | None:
    """None when this user's supplementary groups can be dropped inside a user namespace:
    that takes newuidmap/newgidmap (Debian: uidmap) and subordinate ids in /etc/subuid and
    /etc/subgid, which let the namespace allow setgroups."""
    missing = [tool for tool in ("newuidmap", "newgidmap") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} missing (Debian: apt-get install uidmap)"
    done = _run_quiet(
        [*"unshare --user --map-root-user --map-auto --".split(),
         "setpriv", "--clear-groups", "true"]
    )  # fmt: skip
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip() or f"exit {done.returncode}"
        return (
            f"{detail} (this user needs subordinate ids in /etc/subuid and /etc/subgid, "
            "e.g. `usermod --add-subuids 100000-165535 --add-subgids 100000-165535 USER`)"
        )
    return None


def choose_mechanism(requested: str) -> str:
    """Pick `bwrap` or `unshare` for this host, or raise SandboxUnavailable saying how to fix it.

    Every sandbox holds a namespace whose size-capped filesystem holds the workspace, /tmp and
    home, and each command is a bwrap sandbox entered in it. As root that is a mount namespace
    with a capped ext4 (holder.py) and commands run as a fresh unprivileged host uid: `unshare`
    shows that uid inside, `bwrap` maps it onto 10001; `auto` picks `unshare`. An ordinary
    user gets `bwrap` over a user namespace with a capped tmpfs (userns.py).
    """
    if requested not in ("auto", "bwrap", "unshare"):
        raise SandboxUnavailable(
            f"unknown local sandbox mechanism {requested!r}; use auto, bwrap or unshare"
        )
    root = os.geteuid() == 0
    if root:
        problem = unshare_problem()
        if problem is None:
            return "unshare" if requested in ("auto", "unshare") else "bwrap"
        raise SandboxUnavailable(f"cannot use the {requested} sandbox as root: {problem}")
    if requested == "unshare":
        raise SandboxUnavailable(f"cannot use the unshare sandbox: {unshare_problem()}")
    problem = bwrap_problem(None)
    if problem is None:
        problem = holder_problem()
        if problem is None:
            return "bwrap"
    raise SandboxUnavailable(
        f"no local sandbox is possible on this host ({problem}); install bubblewrap "
        "(apt-get install bubblewrap) and allow unprivileged user namespaces "
        "(sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04+ "
        "kernel.apparmor_restrict_unprivileged_userns=0), or run as root, "
        "or use FROGNANO_SANDBOX=kubernetes"
    )


def bwrap_args(layout: Layout, sources: Sources, inner_uid: int, shm_bytes: int) -> list[str]:
    """bwrap's options for one command, up to (not including) --seccomp and the command."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable("bwrap is not installed (apt-get install bubblewrap)")
    # Every namespace (the network one owned by the sandbox's user namespace, so no host
    # device events reach it), no capabilities, no nested user namespaces, and a new session
    # so the command cannot push input into a terminal FrogNano runs in (TIOCSTI).
    args = [bwrap, *"--die-with-parent --new-session --unshare-all --unshare-user".split()]
    args += ["--cap-drop", "ALL", "--disable-userns"]
    args += ["--uid", str(inner_uid), "--gid", str(inner_uid), "--hostname", "sandbox"]
    args += _root_binds()
    args += ["--ro-bind", "/etc", "/etc"]
    args += ["--ro-bind", str(sources.passwd), "/etc/passwd"]
    args += ["--ro-bind", str(sources.group), "/etc/group"]
    args += ["--bind", str(sources.workspace), WORKSPACE]
    args += ["--bind", str(sources.tmp), TMP]
    args += ["--bind", str(sources.home), HOME]
    # After the writable directories: an environment under /tmp (a CI checkout's .venv)
    # must sit on top of the sandbox's private /tmp, not be hidden by it.
    for source, dest in sources.readonly:
        args += ["--ro-bind", str(source), str(dest)]
    if sources.environment is not None:
        bind = "--bind" if layout.environment_writable else "--ro-bind"
        args += [bind, str(sources.environment), ENVIRONMENT]
    if sources.egress is not None:
        args += ["--ro-bind", str(sources.egress), EGRESS]
    args += ["--ro-bind", str(sources.tools), TOOLS]
    args += ["--proc", "/proc", "--dev", "/dev"]
    # Keys the launching user owns are listed in /proc/keys by uid, whatever the keyring.
    args += ["--ro-bind", "/dev/null", "/proc/keys", "--ro-bind", "/dev/null", "/proc/key-users"]
    args += ["--perms", "1777", "--size", str(shm_bytes), "--tmpfs", "/dev/shm"]  # noqa: S108
    args += ["--remount-ro", "/", "--clearenv"]
    for key, value in layout.env.items():
        args += ["--setenv", key, value]
    return [*args, "--chdir", "/"]
