"""Requirements files read as pip reads them: logical lines, options, `-r`/`-c` includes."""

# pip's own rules (pip/_internal/req/req_file.py) are mirrored on purpose, so that the scan sees
# the same lines and options pip will: a backslash joins lines, a `#` after whitespace starts a
# comment, the requirement is the tokens before the first one starting with `-`, and options are
# parsed by optparse, which accepts `--opt=value`, `--opt value`, `-ovalue` and any unambiguous
# prefix of a long option (`--extra-index` is `--extra-index-url`).

from __future__ import annotations

import re
import shlex
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from frognano.run.environment.repofiles import Redirect, Unreadable, inside_repo, read_text

__all__ = ["MAX_FILES", "Entry", "RequirementsFile", "collect", "logical_lines", "parse_line"]

MAX_FILES = 100
"""The most requirements files one scan reads, includes and all: each may be 1 MiB."""

_COMMENT = re.compile(r"(^|\s+)#.*$")
# pip decodes a file with the encoding a PEP 263 comment on its first two lines declares; utf-7
# would turn "+AC0ALQ-index-url" into "--index-url" for pip and not for the scan
_CODING = re.compile(r"^#.*coding[:=]\s*([-\w.]+)")
_UTF8_NAMES = frozenset({"utf-8", "utf8", "utf_8", "ascii", "us-ascii"})
_URL_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

# pip's requirements-file options (SUPPORTED_OPTIONS and SUPPORTED_OPTIONS_REQ), each with its
# canonical name and whether it takes a value
_LONG: dict[str, tuple[str, bool]] = {
    "--index-url": ("--index-url", True),
    "--pypi-url": ("--index-url", True),
    "--extra-index-url": ("--extra-index-url", True),
    "--no-index": ("--no-index", False),
    "--constraint": ("--constraint", True),
    "--requirement": ("--requirement", True),
    "--editable": ("--editable", True),
    "--find-links": ("--find-links", True),
    "--no-binary": ("--no-binary", True),
    "--only-binary": ("--only-binary", True),
    "--prefer-binary": ("--prefer-binary", False),
    "--require-hashes": ("--require-hashes", False),
    "--pre": ("--pre", False),
    "--trusted-host": ("--trusted-host", True),
    "--use-feature": ("--use-feature", True),
    "--hash": ("--hash", True),
    "--config-settings": ("--config-settings", True),
    "--global-option": ("--global-option", True),
}
_SHORT = {
    "-i": "--index-url",
    "-c": "--constraint",
    "-r": "--requirement",
    "-e": "--editable",
    "-f": "--find-links",
    "-C": "--config-settings",
}
_INCLUDES = ("--requirement", "--constraint")


@dataclass(frozen=True)
class Entry:
    """One logical line of a requirements file."""

    line: int
    """The 1-based line where it starts."""
    text: str
    """The line after joining and removing its comment."""
    requirement: str
    """The requirement part (before the first option), possibly empty."""
    options: tuple[tuple[str, str | None], ...]
    """Its options by canonical long name, each with its value (None for a flag)."""
    error: str | None
    """Why pip would reject the line's options, or None."""


@dataclass(frozen=True)
class RequirementsFile:
    """A requirements file of the repository, read and split into entries."""

    path: str
    entries: tuple[Entry, ...]


def logical_lines(text: str) -> list[tuple[int, str]]:
    """pip's join_lines and ignore_comments: (first line number, text) of each non-empty line."""
    joined: list[tuple[int, str]] = []
    pending: list[str] = []
    first = 0
    for number, line in enumerate(text.splitlines(), start=1):
        is_comment = _COMMENT.match(line) is not None
        if not line.endswith("\\") or is_comment:
            if is_comment:
                line = " " + line  # noqa: PLW2901 - pip does the same so the comment is dropped
            if pending:
                pending.append(line)
                joined.append((first, "".join(pending)))
                pending = []
            else:
                joined.append((number, line))
        else:
            if not pending:
                first = number
            pending.append(line.strip("\\"))
    if pending:
        joined.append((first, "".join(pending)))
    result = []
    for number, line in joined:
        stripped = _COMMENT.sub("", line).strip()
        if stripped:
            result.append((number, stripped))
    return result


def _long_name(token: str) -> str | None:
    """optparse's matching: the exact long option, or the only one `token` is a prefix of."""
    if token in _LONG:
        return token
    matches = {name for name in _LONG if name.startswith(token)}
    return matches.pop() if len(matches) == 1 else None


def _options(tokens: list[str]) -> tuple[list[tuple[str, str | None]], str | None]:
    found: list[tuple[str, str | None]] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token == "--":  # noqa: S105 - optparse's end of options, not a secret
            break
        if token.startswith("--"):
            given, equals, value = token.partition("=")
            name = _long_name(given)
            if name is None:
                return found, f"pip does not accept the option {given} in a requirements file"
            canonical, takes_value = _LONG[name]
            if not takes_value:
                if equals:
                    return found, f"the option {given} takes no value"
                found.append((canonical, None))
                continue
        elif token.startswith("-") and len(token) > 1:
            canonical = _SHORT.get(token[:2], "")
            if not canonical:
                return found, f"pip does not accept the option {token[:2]} in a requirements file"
            equals, value = ("", "") if len(token) == 2 else ("x", token[2:])
        else:
            continue  # optparse leaves positional arguments for pip, which ignores them
        if not equals:
            if index == len(tokens):
                return found, f"the option {token} needs a value"
            value = tokens[index]
            index += 1
        found.append((canonical, value))
    return found, None


def parse_line(number: int, text: str) -> Entry:
    """pip's break_args_options and option parsing of one logical line."""
    tokens = text.split(" ")  # pip splits on single spaces only, so does the scan
    args: list[str] = []
    for token in tokens:
        if token.startswith("-"):
            break
        args.append(token)
    rest = " ".join(tokens[len(args) :])
    try:
        option_tokens = shlex.split(rest)
    except ValueError as error:
        return Entry(number, text, " ".join(args), (), f"pip cannot split its options ({error})")
    options, problem = _options(option_tokens)
    return Entry(number, text, " ".join(args), tuple(options), problem)


def _coding_problem(text: str) -> str | None:
    for line in text.splitlines()[:2]:
        found = _CODING.match(line)
        if found and found.group(1).lower() not in _UTF8_NAMES:
            return (
                f"declares the encoding {found.group(1)}, which pip would honour; "
                "FrogNano reads only UTF-8"
            )
    return None


def collect(repo_dir: Path, roots: Iterable[str]) -> tuple[list[RequirementsFile], list[Redirect]]:
    """The requirements files `roots` and every file they include, with the includes refused.

    An include is refused when it names a URL, leaves the repository, goes through a symbolic
    link, or cannot be read; each file is read once, so include cycles end.
    """
    files: list[RequirementsFile] = []
    refused: list[Redirect] = []
    queue: deque[tuple[str, str | None, int | None]] = deque((root, None, None) for root in roots)
    seen: set[str] = set()
    while queue:
        path, parent, parent_line = queue.popleft()
        if path in seen:
            continue
        if len(seen) == MAX_FILES:
            where = path if parent is None else parent
            reason = f"the requirements files include more than {MAX_FILES} files in all"
            refused.append(Redirect(where, parent_line, reason))
            break
        seen.add(path)
        try:
            text = read_text(repo_dir, path)
        except Unreadable as error:
            if parent is None:
                refused.append(Redirect(path, None, f"the requirements file {error}"))
            else:
                refused.append(Redirect(parent, parent_line, f"includes {path}, which {error}"))
            continue
        coding = _coding_problem(text)
        if coding is not None:
            refused.append(Redirect(path, None, f"the requirements file {coding}"))
            continue
        entries = tuple(parse_line(number, line) for number, line in logical_lines(text))
        files.append(RequirementsFile(path, entries))
        queue.extend(_includes(path, entries, refused))
    return files, refused


def _includes(
    path: str, entries: Iterable[Entry], refused: list[Redirect]
) -> list[tuple[str, str | None, int | None]]:
    """The files the entries of `path` include, after refusing those that leave the repository."""
    found: list[tuple[str, str | None, int | None]] = []
    for entry in entries:
        for name, value in entry.options:
            if name not in _INCLUDES or value is None:
                continue
            target = inside_repo(path.rpartition("/")[0], value)
            if _URL_LIKE.match(value):
                reason = "names a URL, which pip would fetch from outside the approved index"
            elif target is None:
                reason = "leaves the repository"
            else:
                found.append((target, path, entry.line))
                continue
            refused.append(Redirect(path, entry.line, f"{name} {value} {reason}"))
    return found
