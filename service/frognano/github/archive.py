"""Safe extraction of a repository tarball from GitHub's `/tarball/{ref}` endpoint."""

# Every member is checked before anything is written: no absolute paths, no `..`, no member
# outside GitHub's single top folder (which is stripped), no hard links, devices or FIFOs, no
# symlink whose target leaves the destination, no member reached through a symlink, no
# duplicates, and bounded size and count. Extraction then uses tarfile's `data` filter as a
# second line of defence (no setuid bits, no ownership changes).

from __future__ import annotations

import posixpath
import tarfile
from pathlib import Path

from frognano.errors import UnsafePathError

__all__ = ["extract_tarball"]

MAX_BYTES = 2 * 1024**3
MAX_MEMBERS = 500_000


def _relative(name: str, top: str) -> str:
    """`name` without GitHub's top folder, or raise UnsafePathError."""
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise UnsafePathError(f"archive member {name!r} has an absolute path")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise UnsafePathError(f"archive member {name!r} contains '..'")
    if not parts or parts[0] != top:
        raise UnsafePathError(f"archive member {name!r} is outside the top folder {top!r}")
    return "/".join(parts[1:])


def _check_type(member: tarfile.TarInfo, rel: str) -> bool:
    """Raise UnsafePathError for a member type or link target that is not allowed; return
    whether the member is a symlink."""
    if member.issym():
        target = member.linkname
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
        if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
            raise UnsafePathError(
                f"archive member {member.name!r} links to {target!r}, outside the tree"
            )
        return True
    if member.islnk():
        raise UnsafePathError(f"archive member {member.name!r} is a hard link")
    if not (member.isfile() or member.isdir()):
        raise UnsafePathError(f"archive member {member.name!r} is a device or FIFO")
    return False


def _plan(
    members: list[tarfile.TarInfo], max_bytes: int, max_members: int
) -> list[tarfile.TarInfo]:
    """The members to extract, renamed without the top folder; raises on any unsafe one."""
    if not members:
        raise UnsafePathError("the archive is empty")
    if len(members) > max_members:
        raise UnsafePathError(f"the archive has more than {max_members} members")
    first = [part for part in members[0].name.split("/") if part not in ("", ".")]
    if not first:
        raise UnsafePathError(f"archive member {members[0].name!r} has no name")
    top = first[0]
    seen: set[str] = set()
    links: set[str] = set()
    total = 0
    plan = []
    for member in members:
        rel = _relative(member.name, top)
        if not rel:
            if not member.isdir():
                raise UnsafePathError(f"archive member {member.name!r} should be a folder")
            continue
        if rel in seen:
            raise UnsafePathError(f"archive member {member.name!r} appears twice")
        parents = rel.split("/")[:-1]
        if any("/".join(parents[:depth]) in links for depth in range(1, len(parents) + 1)):
            raise UnsafePathError(f"archive member {member.name!r} lies behind a symlink")
        if _check_type(member, rel):
            links.add(rel)
        total += member.size
        if total > max_bytes:
            raise UnsafePathError(f"the archive unpacks to more than {max_bytes} bytes")
        seen.add(rel)
        plan.append(member.replace(name=rel, deep=False))
    return plan


def extract_tarball(
    archive: Path, dest: Path, *, max_bytes: int = MAX_BYTES, max_members: int = MAX_MEMBERS
) -> Path:
    """Extract `archive` (a gzipped tarball with one top folder) into `dest`, which must be
    missing or empty; return `dest`. Raises UnsafePathError before writing anything when a
    member is unsafe (see the module docstring)."""
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ValueError(f"{dest} is not empty")
    try:
        with tarfile.open(archive, "r:*") as tar:
            plan = _plan(tar.getmembers(), max_bytes, max_members)
            for member in plan:
                tar.extract(member, dest, filter="data")
    except tarfile.FilterError as exc:
        raise UnsafePathError(f"unsafe archive member: {exc}") from exc
    except tarfile.TarError as exc:
        raise UnsafePathError(f"not a readable tarball: {exc}") from exc
    return dest
