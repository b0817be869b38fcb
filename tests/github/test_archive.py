"""Safe extraction of repository tarballs: crafted archives, no network."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from frognano.errors import UnsafePathError
from frognano.github.archive import ArchiveRefused, LeftOutLink, extract_tarball

TOP = "octo-demo-0123abc"


def _tarball(path: Path, members: list[tuple[str, str, bytes | str]]) -> Path:
    """Write a gzipped tarball; each member is (name, kind, data) with kind file, exec, dir,
    symlink (data = target), hardlink (data = target) or fifo."""
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            payload: bytes | None = None
            if kind in ("file", "exec"):
                payload = data if isinstance(data, bytes) else data.encode()
                info.size = len(payload)
                info.mode = 0o755 if kind == "exec" else 0o644
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
            elif kind == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = str(data)
            elif kind == "hardlink":
                info.type = tarfile.LNKTYPE
                info.linkname = str(data)
            elif kind == "fifo":
                info.type = tarfile.FIFOTYPE
            tar.addfile(info, io.BytesIO(payload) if payload is not None else None)
    return path


def _good(path: Path) -> Path:
    return _tarball(
        path,
        [
            (f"{TOP}/", "dir", b""),
            (f"{TOP}/README.md", "file", b"# demo\n"),
            (f"{TOP}/src/", "dir", b""),
            (f"{TOP}/src/app.py", "file", b"print('hi')\n"),
            (f"{TOP}/run.sh", "exec", b"#!/bin/sh\n"),
            (f"{TOP}/docs/", "dir", b""),
            (f"{TOP}/docs/link.md", "symlink", "../README.md"),
        ],
    )


def test_extracts_without_the_top_folder_and_keeps_modes(tmp_path: Path) -> None:
    extracted = extract_tarball(_good(tmp_path / "a.tar.gz"), tmp_path / "out")
    dest = extracted.root
    assert extracted.left_out == ()
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")) == [
        "README.md",
        "docs",
        "docs/link.md",
        "run.sh",
        "src",
        "src/app.py",
    ]
    assert (dest / "src/app.py").read_bytes() == b"print('hi')\n"
    assert os.stat(dest / "run.sh").st_mode & stat.S_IXUSR
    assert not os.stat(dest / "README.md").st_mode & stat.S_IXUSR
    assert os.readlink(dest / "docs/link.md") == "../README.md"


@pytest.mark.parametrize(
    ("member", "reason"),
    [
        ((f"{TOP}/../escape.txt", "file", b"x"), "'..'"),
        (("/etc/evil", "file", b"x"), "absolute"),
        ((f"{TOP}/hard", "hardlink", f"{TOP}/README.md"), "hard link"),
        ((f"{TOP}/pipe", "fifo", b""), "device or FIFO"),
        (("other-top/file", "file", b"x"), "outside the top folder"),
        ((f"{TOP}/README.md", "file", b"again"), "appears twice"),
    ],
)
def test_refuses_unsafe_members_before_writing_anything(
    tmp_path: Path, member: tuple[str, str, bytes | str], reason: str
) -> None:
    archive = _tarball(
        tmp_path / "bad.tar.gz",
        [(f"{TOP}/", "dir", b""), (f"{TOP}/README.md", "file", b"# demo\n"), member],
    )
    dest = tmp_path / "out"
    with pytest.raises(ArchiveRefused, match=reason) as refused:
        extract_tarball(archive, dest)
    assert list(dest.iterdir()) == []
    assert not (tmp_path / "escape.txt").exists()
    # The reason is for the repository's maintainers: it names the member, never this host.
    assert str(tmp_path) not in str(refused.value)
    assert refused.value.member is not None
    assert str(refused.value) == f"archive member {refused.value.member!r} {refused.value.why}"


def test_leaves_out_the_symlinks_that_lead_outside_and_says_where_they_pointed(
    tmp_path: Path,
) -> None:
    archive = _tarball(
        tmp_path / "links.tar.gz",
        [
            (f"{TOP}/", "dir", b""),
            (f"{TOP}/README.md", "file", b"# demo\n"),
            (f"{TOP}/AGENTS.md", "symlink", "/etc/passwd"),
            (f"{TOP}/docs/", "dir", b""),
            (f"{TOP}/docs/x", "symlink", "../../.."),
            (f"{TOP}/docs/up", "symlink", "sub/../../../outside"),
            (f"{TOP}/docs/in", "symlink", "../README.md"),
        ],
    )
    extracted = extract_tarball(archive, tmp_path / "out")
    assert extracted.left_out == (
        LeftOutLink("AGENTS.md", "/etc/passwd"),
        LeftOutLink("docs/x", "../../.."),
        LeftOutLink("docs/up", "sub/../../../outside"),
    )
    dest = extracted.root
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")) == [
        "README.md",
        "docs",
        "docs/in",
    ]
    assert os.readlink(dest / "docs/in") == "../README.md"  # a link inside the tree stays


def test_a_member_behind_a_left_out_link_still_refuses_the_archive(tmp_path: Path) -> None:
    archive = _tarball(
        tmp_path / "bad.tar.gz",
        [
            (f"{TOP}/", "dir", b""),
            (f"{TOP}/escape", "symlink", "/etc"),
            (f"{TOP}/escape/cron.d", "file", b"x"),
        ],
    )
    with pytest.raises(ArchiveRefused, match="behind a symlink"):
        extract_tarball(archive, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def test_refuses_a_member_behind_a_symlink(tmp_path: Path) -> None:
    archive = _tarball(
        tmp_path / "bad.tar.gz",
        [
            (f"{TOP}/", "dir", b""),
            (f"{TOP}/sub/", "dir", b""),
            (f"{TOP}/alias", "symlink", "sub"),
            (f"{TOP}/alias/x.txt", "file", b"x"),
        ],
    )
    with pytest.raises(ArchiveRefused, match="behind a symlink"):
        extract_tarball(archive, tmp_path / "out")


def test_refuses_a_too_large_archive_and_a_non_empty_destination(tmp_path: Path) -> None:
    archive = _good(tmp_path / "a.tar.gz")
    with pytest.raises(ArchiveRefused, match="more than 10 bytes"):
        extract_tarball(archive, tmp_path / "small", max_bytes=10)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        extract_tarball(archive, busy)


def test_refuses_something_that_is_not_a_tarball(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"<html>not a tarball</html>")
    with pytest.raises(UnsafePathError, match="not a readable tarball") as refused:
        extract_tarball(junk, tmp_path / "out")
    # GitHub's or the transport's fault, not the repository's: no reason for its maintainers.
    assert not isinstance(refused.value, ArchiveRefused)
