"""A local sandbox's host folder: what it holds, how it is made, and how it is removed."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from frognano.log import get_logger
from frognano.sandbox.isolation import Layout
from frognano.sandbox.paths import ENVIRONMENT, HOME
from frognano.sandbox.pyenv import PythonEnv

log = get_logger(__name__)

BASE_PREFIX = "frognano-sandbox-"


def _passwd(uid: int) -> tuple[str, str]:
    passwd = (
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"sandbox:x:{uid}:{uid}:FrogNano sandbox:{HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    group = f"root:x:0:\nsandbox:x:{uid}:\nnogroup:x:65534:\n"
    return passwd, group


def remove_tree(path: Path) -> None:
    """Delete a sandbox's host directory even where commands made parts of it unwritable.
    Nothing outside it is ever touched: a folder already gone is simply done (a second
    clean-up once made its retry chmod the parent, $TMPDIR itself)."""
    if not path.name.startswith(BASE_PREFIX):
        raise ValueError(f"refusing to delete {path}: not a sandbox directory")
    root = os.path.abspath(path)
    if not os.path.lexists(root):
        return

    def inside(target: str) -> bool:
        return target == root or target.startswith(root + os.sep)

    def retry(func: Callable[..., Any], failed: str, exc: BaseException) -> None:
        if isinstance(exc, FileNotFoundError):
            return  # gone already (removed concurrently, or never made)
        with contextlib.suppress(OSError):
            # chmod follows symlinks: a link the sandbox left must not pass it to a host
            # file; and only folders of this tree are made writable, never its parent.
            for target in (os.path.dirname(failed), failed):
                if inside(target) and not stat.S_ISLNK(os.lstat(target).st_mode):
                    os.chmod(target, stat.S_IRWXU)
        with contextlib.suppress(FileNotFoundError):
            func(failed)

    # rmtree does not follow symlinks, so links the sandbox planted cannot redirect it.
    if sys.version_info >= (3, 12):
        shutil.rmtree(root, onexc=retry)
    else:
        shutil.rmtree(root, onerror=lambda func, failed, info: retry(func, failed, info[1]))


def kept_groups() -> tuple[int, ...]:
    """This process's supplementary groups beyond its own primary group."""
    return tuple(sorted(set(os.getgroups()) - {os.getgid()}))


@functools.cache
def warn_groups(groups: tuple[int, ...], why: str) -> None:
    log.warning(
        "sandbox.groups_kept",
        groups=list(groups),
        why=why,
        detail="this user's supplementary groups could not be dropped, so files readable by "
        "those groups are readable in the sandbox. Install uidmap and give the user "
        "subordinate ids in /etc/subuid and /etc/subgid, or run FrogNano as a user without "
        "extra groups, as root, or on Kubernetes",
    )


def write_tool(folder: Path, name: str, data: bytes) -> None:
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"a tool file name must be a plain file name, got {name!r}")
    (folder / name).write_bytes(data)
    (folder / name).chmod(0o444)


def make_layout(
    python_env: PythonEnv,
    inner_uid: int,
    owner: int | None,
    tool_files: Sequence[tuple[str, bytes]] = (),
    seccomp_program: bytes = b"",
    *,
    environment: Path | None = None,
    environment_writable: bool = False,
    egress: Path | None = None,
) -> Layout:
    base = Path(tempfile.mkdtemp(prefix=BASE_PREFIX))
    try:
        dirs = {name: base / name for name in ("workspace", "tmp", "home", "storage", "tools")}
        for path in dirs.values():
            path.mkdir()
        dirs["tmp"].chmod(0o1777)
        # A Python environment under /tmp is mounted inside the sandbox's own /tmp; its parent
        # folders are made now, by this process, so that a root-launched sandbox's uid cannot
        # write in them.
        for path in python_env.mounts:
            if path.is_relative_to("/tmp"):  # noqa: S108 - the sandbox's /tmp, mirrored
                (dirs["tmp"] / path.relative_to("/tmp")).mkdir(parents=True, exist_ok=True)  # noqa: S108
        for name, data in tool_files:
            write_tool(dirs["tools"], name, data)
        # Mounted read-only as well; the modes only say the same to anyone looking.
        dirs["tools"].chmod(0o555)
        (base / "seccomp.bpf").write_bytes(seccomp_program)
        passwd, group = _passwd(inner_uid)
        (base / "passwd").write_text(passwd, encoding="utf-8")
        (base / "group").write_text(group, encoding="utf-8")
        if owner is not None:
            # Root launches commands as `owner`; it must own what the sandbox writes to.
            for path in (base, dirs["workspace"], dirs["tmp"], dirs["home"]):
                os.chown(path, owner, owner)
            if environment is not None and environment_writable:
                os.chown(environment, owner, owner)
    except BaseException:
        remove_tree(base)
        raise
    search = [str(python_env.bin_dir), "/usr/local/bin", "/usr/bin", "/bin"]
    if environment is not None:
        search.insert(0, f"{ENVIRONMENT}/bin")
    env = {
        "PATH": ":".join(dict.fromkeys(search)),
        "HOME": HOME,
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "TMPDIR": "/tmp",  # noqa: S108 - the sandbox's private /tmp
    }
    if environment is not None:
        env["VIRTUAL_ENV"] = ENVIRONMENT
    elif python_env.is_venv:
        env["VIRTUAL_ENV"] = str(python_env.prefix)
    return Layout(
        base=base,
        workspace=dirs["workspace"],
        tmp=dirs["tmp"],
        home=dirs["home"],
        passwd=base / "passwd",
        group=base / "group",
        storage=dirs["storage"],
        seccomp=base / "seccomp.bpf",
        readonly=python_env.mounts,
        tools=dirs["tools"],
        env=env,
        environment=environment,
        environment_writable=environment_writable,
        egress=egress,
    )
