"""Reading repository files for the environment scan, and the `Redirect` the scan reports."""

# Everything read here is repository content, so it is read defensively: never through a
# symbolic link (a link could lead out of the checkout or make two paths one file), never more
# than MAX_BYTES (a 10 GB requirements file must not fill the worker's memory), and only as
# UTF-8 (a second decoding could make the scan and pip read different text).

from __future__ import annotations

import posixpath
import re
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frognano.policy.gate.findings import display

__all__ = [
    "MAX_BYTES",
    "Redirect",
    "Unreadable",
    "inside_repo",
    "link_on_path",
    "load_toml",
    "read_text",
]

MAX_BYTES = 1024 * 1024
"""The largest file the scan reads; a larger key file is refused, not read in part."""

_UNICODE_BOMS = (b"\xff\xfe", b"\xfe\xff")  # UTF-16 and UTF-32 start with one of these
_TOML_LINE = re.compile(r"at line (\d+)")


@dataclass(frozen=True)
class Redirect:
    """One reason the repository's install could go elsewhere than the approved index."""

    path: str
    """The repository file, relative to its root, in POSIX form."""
    line: int | None
    """The 1-based line in that file, None when the reason is about the whole file."""
    reason: str
    """What the file does and why FrogNano refuses it; names no line or path."""

    def __str__(self) -> str:
        where = display(self.path) if self.line is None else f"{display(self.path)}:{self.line}"
        return _printable(f"{where}: {self.reason}")


def _printable(text: str) -> str:
    """`text` on one line: a newline in a file name must not forge a second refusal."""
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)


class Unreadable(Exception):
    """A repository file the scan will not read; the message is the reason, without the path."""


def inside_repo(base_dir: str, value: str) -> str | None:
    """`value` (relative to the repository folder `base_dir`) as a repository path, or None.

    None when the path is absolute or climbs out of the repository; symbolic links are not
    looked at here (`read_text` refuses them).
    """
    if value.startswith("/"):
        return None
    path = posixpath.normpath(posixpath.join(base_dir, value))
    if path == ".." or path.startswith("../"):
        return None
    return path


def link_on_path(repo_dir: Path, rel: str) -> str | None:
    """The first part of `rel` (a repository path) that is a symbolic link, or None.

    Parts that do not exist end the walk: nothing below them can be a link.
    """
    current = repo_dir
    for part in rel.split("/"):
        current = current / part
        try:
            if current.is_symlink():
                return part
        except OSError:
            return None
    return None


def _regular_file(repo_dir: Path, rel: str) -> Path:
    """The file at `rel`, after checking that no part of the path is a symbolic link."""
    link = link_on_path(repo_dir, rel)
    if link is not None:
        last = (
            rel.rpartition("/")[2] == link
            and link_on_path(repo_dir, rel.rpartition("/")[0]) is None
        )
        raise Unreadable("is a symbolic link" if last else f"goes through the symbolic link {link}")
    path = repo_dir / rel
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise Unreadable("does not exist in the repository") from None
    except NotADirectoryError:
        raise Unreadable("is below a file, not a folder") from None
    if not stat.S_ISREG(mode):
        raise Unreadable("is not a regular file")
    return path


def read_text(repo_dir: Path, rel: str) -> str:
    """The UTF-8 text of the repository file `rel`; raises `Unreadable` with the reason."""
    if inside_repo("", rel) != rel:
        raise Unreadable("is not a path inside the repository")
    path = _regular_file(repo_dir, rel)
    with path.open("rb") as file:
        # read one byte past the cap rather than trusting st_size: the bytes are what count
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise Unreadable(
            f"is larger than {MAX_BYTES // (1024 * 1024)} MiB; FrogNano does not read it"
        )
    if data.startswith(_UNICODE_BOMS):
        raise Unreadable("is UTF-16 or UTF-32 text; FrogNano reads only UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise Unreadable(f"is not UTF-8 text (byte {error.start})") from None


def load_toml(text: str) -> tuple[dict[str, Any] | None, int | None, str]:
    """The parsed TOML document, or None with the line and message of the syntax error."""
    try:
        return tomllib.loads(text), None, ""
    except RecursionError:
        # tomllib parses nested arrays and tables recursively; "a = [[[[..." a megabyte deep
        # would otherwise end the scan with a traceback instead of a reason
        return None, None, "arrays or tables are nested too deeply"
    except tomllib.TOMLDecodeError as error:
        # Python 3.11's error has no lineno attribute; its message ends "(at line N, column M)"
        found = _TOML_LINE.search(str(error))
        return None, int(found.group(1)) if found else None, str(error)
