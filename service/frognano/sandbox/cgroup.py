"""A memory cgroup for a whole local sandbox, where this process may make one."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from frognano.log import get_logger

log = get_logger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
# Joins the cgroup before anything else runs, so no process of the command is forked outside
# it (moving a launcher in from the parent would race with its first fork).
JOIN_SCRIPT = 'echo 0 > "$0" && exec "$@"'


@dataclass(frozen=True)
class MemoryCgroup:
    """A child cgroup of FrogNano's own with a memory limit; commands join it at launch."""

    path: Path
    version: int
    """2 (the unified hierarchy, with the memory controller delegated) or 1."""

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def launcher_prefix(self) -> list[str]:
        """argv to put before a launcher: writing 0 to cgroup.procs moves the writer itself."""
        return ["/bin/sh", "-c", JOIN_SCRIPT, str(self.procs)]

    def remove(self) -> None:
        """Delete the cgroup once its processes are gone (the kernel frees them lazily)."""
        for _ in range(50):
            try:
                self.path.rmdir()
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    log.warning("sandbox.cgroup_left", path=str(self.path), error=str(exc))
                    return
                time.sleep(0.02)
            else:
                return
        log.warning("sandbox.cgroup_left", path=str(self.path), error="still busy")


def _own(version: int) -> Path | None:
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if version == 2 and controllers == "":
            return CGROUP_ROOT / path.lstrip("/")
        if version == 1 and "memory" in controllers.split(","):
            return CGROUP_ROOT / "memory" / path.lstrip("/")
    return None


def _v2_parent() -> Path | None:
    own = _own(2)
    if own is None or not (CGROUP_ROOT / "cgroup.controllers").exists():
        return None
    try:
        if "memory" not in (own / "cgroup.subtree_control").read_text().split():
            # Delegation means the controller is already on for our children; turning it on
            # here fails (EBUSY) while this cgroup holds processes, FrogNano's own included.
            (own / "cgroup.subtree_control").write_text("+memory")
    except OSError:
        return None
    return own


def create_memory_cgroup(limit_bytes: int) -> MemoryCgroup | None:
    """A new cgroup capping the memory of everything inside at `limit_bytes` (swap included
    where the kernel accounts it), or None where this process cannot make one: no cgroup v2
    delegation and no writable cgroup v1 memory hierarchy."""
    name = f"frognano-sandbox-{secrets.token_hex(6)}"
    for version, parent in ((2, _v2_parent()), (1, _own(1))):
        if parent is None or not os.access(parent, os.W_OK):
            continue
        path = parent / name
        try:
            path.mkdir()
        except OSError:
            continue
        try:
            if version == 2:
                (path / "memory.max").write_text(str(limit_bytes))
                with contextlib.suppress(OSError):
                    (path / "memory.swap.max").write_text("0")
            else:
                (path / "memory.limit_in_bytes").write_text(str(limit_bytes))
                with contextlib.suppress(OSError):  # absent without swap accounting
                    (path / "memory.memsw.limit_in_bytes").write_text(str(limit_bytes))
        except OSError as exc:
            log.debug("sandbox.cgroup_unusable", path=str(path), error=str(exc))
            with contextlib.suppress(OSError):
                path.rmdir()
            continue
        return MemoryCgroup(path, version)
    return None
