"""bwrap for an ordinary user: a user namespace held per sandbox, with a size-capped tmpfs."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from frognano.errors import SandboxStartError
from frognano.sandbox.holder import start_holder, stop_holder
from frognano.sandbox.isolation import (
    INIT_COMMAND,
    INNER_UID,
    Layout,
    Sources,
    bwrap_args,
)

# Runs once per sandbox as root of a new user namespace (mapped onto the invoking user) in a
# new mount namespace: the workspace, /tmp and home live on one tmpfs of the sandbox's disk
# size, seen only by the sandbox's commands. An unprivileged user namespace may mount tmpfs
# and nothing disk-backed, so what is written there is memory (swap-backed), charged to the
# memory cgroup of the command that writes it.
_HOLDER_SCRIPT = r"""
set -euo pipefail
S=$1 SIZE=$2
shift 2
mount -t tmpfs -o "size=$SIZE,mode=0700,nosuid,nodev" frognano-disk "$S"
mkdir -m 0755 "$S/workspace" "$S/home"
mkdir -m 1777 "$S/tmp"
# An environment under /tmp (a CI checkout's .venv) is mounted inside the sandbox's own /tmp.
for path in "$@"; do
  case $path in /tmp/*) mkdir -p "$S$path" ;; esac
done
echo "ready tmpfs"
exec sleep infinity
"""


class UsernsLauncher:
    """An ordinary user's sandbox: one held user and mount namespace per sandbox whose tmpfs
    caps the total disk use; each command is bwrap in it, entered by nsenter.

    With `clear_groups`, the namespace's ids come from newuidmap/newgidmap, which leaves
    setgroups allowed, and nsenter drops every supplementary group before bwrap starts (it
    fails, and with it the command, if it cannot). Without, the groups stay (warned)."""

    name = "bwrap"

    def __init__(
        self, layout: Layout, disk_bytes: int, shm_bytes: int, *, clear_groups: bool
    ) -> None:
        self._layout = layout
        self._disk_bytes = disk_bytes
        self.clear_groups = clear_groups
        self._holder: asyncio.subprocess.Process | None = None
        self.storage_kind = ""
        storage = layout.storage
        sources = Sources(
            workspace=storage / "workspace",
            tmp=storage / "tmp",
            home=storage / "home",
            passwd=layout.passwd,
            group=layout.group,
            tools=layout.tools,
            readonly=tuple((path, path) for path in layout.readonly),
            environment=layout.environment,
            egress=layout.egress,
        )
        self._bwrap = bwrap_args(layout, sources, INNER_UID, shm_bytes)

    @property
    def holder_pid(self) -> int | None:
        return None if self._holder is None else self._holder.pid

    async def start(self) -> None:
        maps = ["--map-root-user", *(["--map-auto"] if self.clear_groups else [])]
        argv = [
            *"setpriv --pdeathsig KILL -- unshare --user".split(), *maps,
            *"--mount --propagation private --".split(),
            "/bin/bash", "--noprofile", "--norc", "-c", _HOLDER_SCRIPT, "frognano-holder",
            str(self._layout.storage), str(self._disk_bytes), *map(str, self._layout.readonly),
        ]  # fmt: skip
        self._holder, self.storage_kind = await start_holder(argv)

    def argv(self, init_args: Sequence[str], seccomp_fd: int) -> list[str]:
        if self._holder is None:
            raise SandboxStartError("the sandbox was not started")
        pid = self._holder.pid
        # nsenter's default for a user namespace is uid 0, gid 0 and no supplementary groups,
        # and it stops if setgroups fails; --preserve-credentials keeps them where the
        # namespace cannot drop them.
        keep = [] if self.clear_groups else ["--preserve-credentials"]
        return [
            "nsenter", *keep, f"--user=/proc/{pid}/ns/user", f"--mount=/proc/{pid}/ns/mnt",
            "--", *self._bwrap, "--seccomp", str(seccomp_fd), "--", *INIT_COMMAND, *init_args,
        ]  # fmt: skip

    async def stop(self) -> None:
        await stop_holder(self._holder)
