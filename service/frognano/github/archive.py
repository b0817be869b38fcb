"""Safe extraction of a repository tarball from GitHub's `/tarball/{ref}` endpoint."""

# Every member is checked before anything is written: no absolute paths, no `..`, no member
# outside GitHub's single top folder (which is stripped), no hard links, devices or FIFOs, no
# member reached through a symlink, no duplicates, and bounded size and count; any of these
# refuses the whole archive. A symlink whose target is absolute or climbs out of the tree is
# the one thing left out instead (and reported): a repository may hold one (`AGENTS.md ->
# /etc/passwd`), and the rest of its tree is still worth working on, while extracting it would
# point into this host. Extraction then uses tarfile's `data` filter as a second line of
# defence (no setuid bits, no ownership changes).

from __future__ import annotations

import posixpath
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from frognano.errors import UnsafePathError

__all__ = ["ArchiveRefused", "ExtractedTree", "LeftOutLink", "extract_tarball"]

MAX_BYTES = 2 * 1024**3
MAX_MEMBERS = 500_000


class ArchiveRefused(UnsafePathError):
    """The archive holds something that refuses it whole. That is the repository's content, so
    the reason is for its maintainers: `why` is FrogNano's words, `member` the path it names
    (repository content: untrusted), and neither holds a path of this host."""

    def __init__(self, why: str, member: str | None = None) -> None:
        super().__init__(why if member is None else f"archive member {member!r} {why}")
        self.why = why
        self.member = member


@dataclass(frozen=True)
class LeftOutLink:
    """A symlink of the archive that was not extracted, because its target leaves the tree."""

    path: str
    """Its path in the repository (without GitHub's top folder)."""
    target: str
    """Where it points: repository content, untrusted."""


@dataclass(frozen=True)
class ExtractedTree:
    """The extracted tree and the symlinks left out of it."""

    root: Path
    left_out: tuple[LeftOutLink, ...] = ()


def _relative(name: str, top: str) -> str:
    """`name` without GitHub's top folder, or raise ArchiveRefused."""
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveRefused("has an absolute path", name)
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ArchiveRefused("contains '..'", name)
    if not parts or parts[0] != top:
        raise ArchiveRefused("is outside the top folder of the archive", name)
    return "/".join(parts[1:])


def _check_type(member: tarfile.TarInfo, rel: str) -> Literal["plain", "link", "outside"]:
    """Raise ArchiveRefused for a member type that is not allowed; say whether the member is
    a symlink, and whether its target leaves the tree."""
    if member.issym():
        target = member.linkname
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
        if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
            return "outside"
        return "link"
    if member.islnk():
        raise ArchiveRefused("is a hard link", rel)
    if not (member.isfile() or member.isdir()):
        raise ArchiveRefused("is a device or FIFO", rel)
    return "plain"


def _plan(
    members: list[tarfile.TarInfo], max_bytes: int, max_members: int
) -> tuple[list[tarfile.TarInfo], list[LeftOutLink]]:
    """The members to extract, renamed without the top folder, and the links left out;
    raises ArchiveRefused on any unsafe member."""
    if not members:
        raise ArchiveRefused("the archive is empty")
    if len(members) > max_members:
        raise ArchiveRefused(f"the archive has more than {max_members:,} members")
    first = [part for part in members[0].name.split("/") if part not in ("", ".")]
    if not first:
        raise ArchiveRefused("has no name", members[0].name)
    top = first[0]
    seen: set[str] = set()
    links: set[str] = set()
    left_out: list[LeftOutLink] = []
    total = 0
    plan = []
    for member in members:
        rel = _relative(member.name, top)
        if not rel:
            if not member.isdir():
                raise ArchiveRefused("should be a folder", member.name)
            continue
        if rel in seen:
            raise ArchiveRefused("appears twice", rel)
        parents = rel.split("/")[:-1]
        if any("/".join(parents[:depth]) in links for depth in range(1, len(parents) + 1)):
            raise ArchiveRefused("lies behind a symlink", rel)
        seen.add(rel)
        kind = _check_type(member, rel)
        if kind != "plain":
            links.add(rel)  # a left-out link still hides nothing behind it
        if kind == "outside":
            left_out.append(LeftOutLink(rel, member.linkname))
            continue
        total += member.size
        if total > max_bytes:
            raise ArchiveRefused(f"the archive unpacks to more than {max_bytes:,} bytes")
        plan.append(member.replace(name=rel, deep=False))
    return plan, left_out


def extract_tarball(
    archive: Path, dest: Path, *, max_bytes: int = MAX_BYTES, max_members: int = MAX_MEMBERS
) -> ExtractedTree:
    """Extract `archive` (a gzipped tarball with one top folder) into `dest`, which must be
    missing or empty, leaving out the symlinks that lead outside the tree (see the comment
    above). Raises ArchiveRefused before writing anything when a member is unsafe, and
    UnsafePathError when the file is not a readable tarball at all."""
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ValueError(f"{dest} is not empty")
    try:
        with tarfile.open(archive, "r:*") as tar:
            plan, left_out = _plan(tar.getmembers(), max_bytes, max_members)
            for member in plan:
                tar.extract(member, dest, filter="data")
    except tarfile.FilterError as exc:
        # The filter's own message names this host's destination folder: not for the reason.
        raise ArchiveRefused(
            f"is unsafe to extract ({type(exc).__name__})", exc.tarinfo.name
        ) from exc
    except tarfile.TarError as exc:
        raise UnsafePathError(f"not a readable tarball: {exc}") from exc
    return ExtractedTree(dest, tuple(left_out))
