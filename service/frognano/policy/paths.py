"""Path globs of the policy (`forbidden_paths`, `protected_paths`) and its plain file paths."""

# Patterns are matched against repository-relative paths with `/` separators, as git prints
# them, and are anchored at the repository root:
#
# - `*`, `?` and `[...]` never cross a `/`; `*.pem` matches `key.pem` but not `certs/key.pem`
#   (write `**/*.pem` for any depth);
# - `**` as a whole path segment matches zero or more folders: `tests/**` matches every file
#   under `tests/`, and `**/test_*.py` matches `test_a.py` as well as `a/b/test_a.py`;
# - wildcards match names that start with a dot (`**/.env`, `.github/**` and `tests/**` see
#   `tests/.data/x`);
# - `{a,b}` expands to alternatives;
# - matching is case-sensitive, on every platform;
# - there is no negation: a leading `!` is rejected by `check_glob` rather than silently read as
#   a literal file name.

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from wcmatch import glob

FLAGS = glob.GLOBSTAR | glob.DOTGLOB | glob.BRACE | glob.FORCEUNIX
"""wcmatch flags of every policy glob (no NEGATE, no MATCHBASE: patterns are root-anchored)."""


def path_matches(path: str, patterns: Sequence[str]) -> str | None:
    """The first of `patterns` that matches `path`, or None when none does."""
    for pattern in patterns:
        if _matcher(pattern).match(path):
            return pattern
    return None


def path_matches_anywhere(path: str, patterns: Sequence[str]) -> str | None:
    """Like `path_matches`, but each pattern may also match below any folder: `tests/**`
    matches `tests/a.py` and `pkg/tests/a.py` (how `verify.protected_paths` is read)."""
    for pattern in patterns:
        if _matcher(pattern).match(path) or _matcher(f"**/{pattern}").match(path):
            return pattern
    return None


@lru_cache(maxsize=1024)
def _matcher(pattern: str) -> glob.WcMatcher[str]:
    return glob.compile(pattern, flags=FLAGS)


def check_glob(pattern: str) -> str | None:  # noqa: PLR0911 - one return per rule
    """A message saying what is wrong with `pattern`, or None when it is a valid policy glob."""
    if not pattern.strip():
        return "the path pattern is empty"
    if pattern != pattern.strip():
        return f"the path pattern {pattern!r} starts or ends with white space"
    if pattern.startswith("/"):
        return (
            f"the path pattern {pattern!r} is absolute; patterns are relative to the "
            f"repository root, e.g. {pattern.lstrip('/')!r}"
        )
    if pattern.startswith("!"):
        return (
            f"the path pattern {pattern!r} starts with '!', but negation is not supported; "
            "list only the paths to match"
        )
    if "\\" in pattern:
        return (
            f"the path pattern {pattern!r} contains a backslash; use '/' between folders and "
            "[x] to match a special character literally"
        )
    segments = pattern.split("/")
    if ".." in segments:
        return f"the path pattern {pattern!r} contains a '..' segment; paths never leave the repo"
    if "." in segments:
        return f"the path pattern {pattern!r} contains a '.' segment; leave out the './'"
    if pattern.endswith("/"):
        return (
            f"the path pattern {pattern!r} ends with '/' and would match no file; "
            f"write {pattern + '**'!r} to match everything under that folder"
        )
    if "" in segments:
        return f"the path pattern {pattern!r} contains an empty segment ('//')"
    unbalanced = _unbalanced(pattern)
    if unbalanced:
        return f"the path pattern {pattern!r} has an unbalanced {unbalanced!r}"
    try:
        _matcher(pattern)
    except Exception as exc:  # wcmatch raises several kinds (e.g. a brace expansion too large)
        return f"the path pattern {pattern!r} is not a valid glob: {exc}"
    return None


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_repo_path(path: str) -> str | None:  # noqa: PLR0911 - one return per rule
    """Why `path` is not a plain repository-relative file path (no glob: each character
    stands for itself), or None. A path that passes can only name something inside the tree:
    no absolute path, no `..`, nothing a shell or a log line would read differently."""
    if not path.strip():
        return "the path is empty"
    if path != path.strip():
        return f"the path {path!r} starts or ends with white space"
    if _CONTROL.search(path):
        return f"the path {path!r} contains a control character"
    if path.startswith("/"):
        return (
            f"the path {path!r} is absolute; paths are relative to the repository root, "
            f"e.g. {path.lstrip('/')!r}"
        )
    if "\\" in path:
        return f"the path {path!r} contains a backslash; use '/' between folders"
    segments = path.split("/")
    if ".." in segments:
        return f"the path {path!r} contains a '..' segment; paths never leave the repository"
    if "." in segments:
        return f"the path {path!r} contains a '.' segment; leave out the './'"
    if "" in segments:
        return f"the path {path!r} ends with '/' or contains '//'; name a file"
    return None


def _unbalanced(pattern: str) -> str | None:
    """The first bracket or brace of `pattern` without its partner, or None."""
    depth = 0
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "[":
            end = _class_end(pattern, index)
            if end is None:
                return "["
            index = end
        elif char == "]":
            return "]"
        elif char == "{":
            depth += 1
        elif char == "}":
            if depth == 0:
                return "}"
            depth -= 1
        index += 1
    return "{" if depth else None


def _class_end(pattern: str, start: int) -> int | None:
    """Index of the `]` closing the character class opened at `start` (glob rules: a `]` right
    after `[` or `[!`/`[^` is a literal member), or None when the class is never closed or
    would span a `/`."""
    index = start + 1
    if index < len(pattern) and pattern[index] in "!^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1
    while index < len(pattern):
        if pattern[index] == "]":
            return index
        if pattern[index] == "/":
            return None
        index += 1
    return None
