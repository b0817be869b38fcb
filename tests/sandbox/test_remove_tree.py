"""Removing a sandbox's host folder as its owner: read-only parts go, no link leads outside."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from frognano.sandbox.layout import BASE_PREFIX, remove_tree
from tests.sandbox.test_mechanism import NOBODY, _as_nobody, public_copy

__all__ = ["public_copy"]  # the fixture, imported for this module's tests


def test_a_link_in_a_read_only_folder_does_not_change_its_target(public_copy: Path) -> None:
    # Root ignores modes, so the clean-up's chmod-and-retry path runs only as another user,
    # in a folder that user can reach (pytest's own are root's alone).
    tmp_path = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        _check(public_copy, tmp_path)
    finally:
        shutil.rmtree(tmp_path)


def _check(public_copy: Path, tmp_path: Path) -> None:
    os.chown(tmp_path, NOBODY, NOBODY)
    host = tmp_path / "host"
    host.mkdir(mode=0o755)
    os.chown(host, NOBODY, NOBODY)
    done = _as_nobody(
        f"""
        import os
        from pathlib import Path
        from frognano.sandbox.layout import BASE_PREFIX, remove_tree

        box = Path({str(tmp_path)!r}) / (BASE_PREFIX + "test")
        locked = box / "locked"
        locked.mkdir(parents=True)
        (locked / "link").symlink_to({str(host)!r})
        locked.chmod(0o555)
        remove_tree(box)
        print("removed", not box.exists())
        """,
        public_copy,
        "/usr/sbin:/usr/bin:/sbin:/bin",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["removed", "True"]
    assert (host.stat().st_mode & 0o777) == 0o755


def test_removing_a_folder_that_is_already_gone_leaves_its_parent_alone() -> None:
    """A second clean-up (close, then the finalizer) must not chmod $TMPDIR: the retry once
    made /tmp 0700 when the folder it was asked to remove no longer existed."""
    parent = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        parent.chmod(0o1777)
        remove_tree(parent / (BASE_PREFIX + "gone"))
        assert (parent.stat().st_mode & 0o7777) == 0o1777
        box = parent / (BASE_PREFIX + "twice")
        (box / "workspace").mkdir(parents=True)
        remove_tree(box)
        remove_tree(box)
        assert not box.exists()
        assert (parent.stat().st_mode & 0o7777) == 0o1777
    finally:
        shutil.rmtree(parent)
