"""Root's sandboxes: a mount namespace root builds once per sandbox, entered per command."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Sequence
from pathlib import Path

from frognano.errors import SandboxStartError
from frognano.sandbox.isolation import INIT_COMMAND, LAUNCH_ENV, Layout, Sources, bwrap_args

# Where the held namespace shows the sandbox's host folder: the folder itself may sit below
# directories the sandbox's uid cannot search (a 0700 TMPDIR), so it is bound onto a fresh
# tmpfs over /run, which exists everywhere and which no sandbox mounts.
HELD = Path("/run/frognano")

# Runs once per sandbox as root in a new mount namespace, which only the sandbox's commands
# ever join: the workspace, /tmp and home live on one filesystem of the sandbox's disk size
# (ext4 on a sparse file, else tmpfs), and the Python environment is bound where the
# sandbox's uid can reach it. The host's mounts stay as they are: nothing here leaks out.
_HOLDER_SCRIPT = r"""
set -euo pipefail
HOST_BASE=$1 OWNER=$2 SIZE=$3 ENV_SRC=$4 ENV_MODE=$5 EGRESS_SRC=$6
shift 6
mount -t tmpfs -o size=1m,mode=0755,nosuid,nodev,noexec frognano-run /run
mkdir -p @HELD@
mount --bind "$HOST_BASE" @HELD@
BASE=@HELD@
S=$BASE/storage
kind=tmpfs
if command -v mkfs.ext4 >/dev/null && truncate -s "$SIZE" "$BASE/disk.img" 2>/dev/null \
  && mkfs.ext4 -q -F -m 0 -O ^has_journal -E "root_owner=$OWNER:$OWNER" "$BASE/disk.img" \
    >/dev/null 2>&1 \
  && mount -o loop,nosuid,nodev "$BASE/disk.img" "$S" 2>/dev/null; then
  kind=ext4
else
  rm -f "$BASE/disk.img"
  mount -t tmpfs -o "size=$SIZE,mode=0700,uid=$OWNER,gid=$OWNER,nosuid,nodev" frognano-disk "$S"
fi
rmdir "$S/lost+found" 2>/dev/null || true
mkdir -m 0755 "$S/workspace" "$S/home"
mkdir -m 1777 "$S/tmp"
chown "$OWNER:$OWNER" "$S" "$S/workspace" "$S/home" "$S/tmp"
chmod 0700 "$S"
i=0
for path in "$@"; do
  mkdir -p "$BASE/env/$i"
  mount --bind "$path" "$BASE/env/$i"
  mount -o remount,bind,ro,nosuid,nodev "$BASE/env/$i"
  # An environment under /tmp (a CI checkout's .venv) is mounted inside the sandbox's own
  # /tmp: its parent folders are made here, by root, so the sandbox cannot write in them.
  case $path in /tmp/*) mkdir -p "$S$path" ;; esac
  i=$((i + 1))
done
# A built environment (writable only while it is being built) and the environment phase's
# socket folder: bound here so the sandbox's uid reaches them whatever their host parents.
if [ "$ENV_SRC" != - ]; then
  mkdir -p "$BASE/environment"
  mount --bind "$ENV_SRC" "$BASE/environment"
  [ "$ENV_MODE" = rw ] || mount -o remount,bind,ro,nosuid,nodev "$BASE/environment"
fi
if [ "$EGRESS_SRC" != - ]; then
  mkdir -p "$BASE/egress"
  mount --bind "$EGRESS_SRC" "$BASE/egress"
  mount -o remount,bind,ro,nosuid,nodev "$BASE/egress"
fi
echo "ready $kind"
exec sleep infinity
""".replace("@HELD@", str(HELD))


class UnshareLauncher:
    """Root only: one held mount namespace per sandbox; each command is bwrap in it, started
    as the sandbox's host uid by nsenter (which also clears supplementary groups).

    Both root mechanisms use it: `unshare` shows the host uid inside as well, `bwrap` maps
    it onto INNER_UID (its `inner_uid`)."""

    def __init__(
        self,
        layout: Layout,
        host_uid: int,
        disk_bytes: int,
        shm_bytes: int,
        *,
        inner_uid: int | None = None,
        name: str = "unshare",
    ) -> None:
        self.name = name
        self._layout = layout
        self._uid = host_uid
        self._disk_bytes = disk_bytes
        self._holder: asyncio.subprocess.Process | None = None
        self.storage_kind = ""
        """`ext4` (a sparse file) or `tmpfs`: what holds the workspace, /tmp and home."""
        held = HELD / layout.storage.name
        sources = Sources(
            workspace=held / "workspace",
            tmp=held / "tmp",
            home=held / "home",
            passwd=HELD / layout.passwd.name,
            group=HELD / layout.group.name,
            tools=HELD / layout.tools.name,
            readonly=tuple((HELD / "env" / str(i), path) for i, path in enumerate(layout.readonly)),
            environment=None if layout.environment is None else HELD / "environment",
            egress=None if layout.egress is None else HELD / "egress",
        )
        self._bwrap = bwrap_args(
            layout, sources, host_uid if inner_uid is None else inner_uid, shm_bytes
        )

    @property
    def holder_pid(self) -> int | None:
        return None if self._holder is None else self._holder.pid

    async def start(self) -> None:
        layout = self._layout
        argv = [
            *"setpriv --pdeathsig KILL -- unshare --mount --propagation private --".split(),
            "/bin/bash", "--noprofile", "--norc", "-c", _HOLDER_SCRIPT, "frognano-holder",
            str(layout.base), str(self._uid), str(self._disk_bytes),
            str(layout.environment or "-"), "rw" if layout.environment_writable else "ro",
            str(layout.egress or "-"), *map(str, layout.readonly),
        ]  # fmt: skip
        self._holder, self.storage_kind = await start_holder(argv)

    def argv(self, init_args: Sequence[str], seccomp_fd: int) -> list[str]:
        if self._holder is None:
            raise SandboxStartError("the sandbox was not started")
        return [
            "nsenter", f"--mount=/proc/{self._holder.pid}/ns/mnt",
            f"--setuid={self._uid}", f"--setgid={self._uid}", "--",
            *self._bwrap, "--seccomp", str(seccomp_fd), "--", *INIT_COMMAND, *init_args,
        ]  # fmt: skip

    async def stop(self) -> None:
        await stop_holder(self._holder)


async def start_holder(argv: Sequence[str]) -> tuple[asyncio.subprocess.Process, str]:
    """Start a namespace holder and wait for its `ready KIND` line; SandboxStartError with
    its own words when it does not say that."""
    holder = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=LAUNCH_ENV,
        start_new_session=True,
    )
    stdout, stderr = holder.stdout, holder.stderr
    if stdout is None or stderr is None:
        await stop_holder(holder)
        raise SandboxStartError("the namespace holder has no pipes")
    try:
        line = await asyncio.wait_for(stdout.readline(), timeout=30)
    except TimeoutError:
        line = b""
    words = line.split()
    if len(words) != 2 or words[0] != b"ready":
        await stop_holder(holder)
        detail = (await stderr.read()).decode("utf-8", "replace").strip()
        raise SandboxStartError(
            f"could not build the sandbox's file systems: {detail or 'no output'}"
        )
    return holder, words[1].decode()


async def stop_holder(holder: asyncio.subprocess.Process | None) -> None:
    """Kill a holder and everything in its process group (its mounts go with it)."""
    if holder is None or holder.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(holder.pid, signal.SIGKILL)
    await holder.wait()
