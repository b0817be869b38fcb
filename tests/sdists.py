"""Pinned sdists from PyPI: downloaded once into a cache, SHA-256 checked, and unpacked."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Protocol

from tests.packageindex import filled_once, pip_environment

# Downloaded sdists, kept across runs next to the wheels (tests/packageindex.py's WHEEL_CACHE).
SDIST_CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "frognano-tests" / "sdists"
)


class Pinned(Protocol):
    """A release pinned by version and the SHA-256 of its sdist."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def sha256(self) -> str: ...


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def download_sdist(dest: Path, release: Pinned) -> Path:
    """The release's sdist in a folder of `dest` named by name, version and hash, downloaded
    with pip (`--require-hashes`) the first time and checked again on every later call."""
    folder = dest / f"{release.name}-{release.version}-{release.sha256[:16]}"
    spec = f"{release.name}=={release.version}"

    def fill(partial: Path) -> None:
        requirements = partial / "requirements.txt"
        requirements.write_text(f"{spec} --hash=sha256:{release.sha256}\n", encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", "--require-hashes", "-r", str(requirements),
             "--index-url", "https://pypi.org/simple", "--dest", str(partial)],
            env=pip_environment(no_cache=False), capture_output=True, text=True,
            timeout=600, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(
                f"cannot download the sdist of {spec} (SHA-256 {release.sha256}) from "
                f"PyPI into {dest}; these tests need it once, then reuse the cache:\n"
                f"{done.stderr.strip()}"
            )
        requirements.unlink()

    filled_once(folder, fill)
    found = sorted(folder.glob("*.tar.gz"))
    # Checked on every use: a cache is a folder anyone can write to.
    if len(found) != 1 or sha256_of(found[0]) != release.sha256:
        raise RuntimeError(
            f"{folder} does not hold the one sdist of {spec} with SHA-256 {release.sha256}: "
            "remove the folder to download it again"
        )
    return found[0]


def unpack_sdist(archive: Path, workdir: Path) -> Path:
    """The sdist's one top folder, unpacked into `workdir` (empty or absent), with every file
    readable and every folder enterable by all."""
    workdir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as opened:
        opened.extractall(workdir, filter="data")
    (root,) = workdir.iterdir()
    for folder, _dirs, files in os.walk(root):
        # A sandbox's user may be another uid: it must read every file and enter every folder.
        os.chmod(folder, os.stat(folder).st_mode | 0o555)  # noqa: S103
        for name in files:
            path = Path(folder) / name
            path.chmod(path.stat().st_mode | 0o444)
    return root
