"""The build's host-side checks: the token search in what a build left behind."""

from __future__ import annotations

import base64
import os
from pathlib import Path

from frognano.run.environment.build import find_token

TOKEN = "tok-3c1e9a"


def test_the_token_is_found_plain_base64_quoted_or_across_a_chunk_boundary(tmp_path: Path) -> None:
    for name, data in (
        ("plain", TOKEN.encode()),
        ("b64", base64.b64encode(TOKEN.encode())),
        ("boundary", b"x" * ((1 << 20) - 4) + TOKEN.encode()),
    ):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "f").write_bytes(data)
        assert find_token(folder, TOKEN) == Path("f"), name
    link = tmp_path / "link"
    link.mkdir()
    (link / "l").symlink_to(f"/nowhere/{TOKEN}")
    assert find_token(link, TOKEN) == Path("l")


def test_a_fifo_the_build_left_does_not_hang_the_search(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "clean").write_text("nothing here")
    assert find_token(tmp_path, TOKEN) is None
