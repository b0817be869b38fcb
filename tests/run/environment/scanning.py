"""Writes a repository into a folder and scans it as the environment phase will."""

from __future__ import annotations

from pathlib import Path

from frognano.run.environment.detect import detect
from frognano.run.environment.redirects import find_redirects


def write(repo: Path, files: dict[str, str | bytes]) -> None:
    for path, content in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


def scan(repo: Path, files: dict[str, str | bytes]) -> list[str]:
    """The scan's refusals of the repository `files`, as the run would print them."""
    write(repo, files)
    return [str(redirect) for redirect in find_redirects(repo, detect(repo).key_files)]
