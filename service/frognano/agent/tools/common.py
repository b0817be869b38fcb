"""Shared pieces of the agent's tools: the tool-error exception, path rules, `cat -n` lines."""

from __future__ import annotations

import posixpath

from frognano.sandbox.paths import TMP, WORKSPACE

ALLOWED_ROOTS = (WORKSPACE, TMP)
MAX_LINE_CHARS = 2000
LINE_TRUNCATED = "… [line truncated]"


class ToolError(Exception):
    """A mistake of the model's (or a state of the files) reported back as a tool error.

    The message is the text inside `<tool_use_error>…</tool_use_error>`.
    """


def clean_text(value: str) -> str:
    """`value` without lone surrogates (JSON can carry them; argv and UTF-8 cannot)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "replace").decode("utf-8")
    return value


def missing_file(cwd: str) -> str:
    return f"File does not exist. Note: your current working directory is {cwd}."


def resolve_path(path: str, *, cwd: str, name: str = "file_path", relative: bool = False) -> str:
    """The normalised path if it lies inside /workspace or /tmp, else raise ToolError.

    Relative paths are refused (with the absolute path the model probably meant), unless
    `relative` is set, in which case they are taken from `cwd`.
    """
    if "\0" in path:
        raise ToolError(f"{name} must not contain NUL bytes")
    if not path.startswith("/"):
        guess = posixpath.normpath(posixpath.join(cwd, path))
        if not relative:
            raise ToolError(
                f"{name} must be an absolute path, got: {path!r}. "
                f"Did you mean {guess!r}? (Bash's current working directory is {cwd}.)"
            )
        path = guess
    # normpath keeps a leading "//" (POSIX leaves it implementation-defined); the sandbox
    # treats it as "/", so collapse it before checking the roots.
    normal = posixpath.normpath("/" + path.lstrip("/"))
    if not any(normal == root or normal.startswith(root + "/") for root in ALLOWED_ROOTS):
        raise ToolError(
            f"{name} must be inside /workspace or /tmp (the directories the tools may use), "
            f"got: {path}"
        )
    return normal


def cat_n(lines: list[str], first: int) -> list[str]:
    """`cat -n` lines numbered from `first`; a trailing CR is hidden, long lines are cut."""
    out = []
    for number, raw in enumerate(lines, first):
        line = raw[:-1] if raw.endswith("\r") else raw
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + LINE_TRUNCATED
        out.append(f"{number:>6}\t{line}")
    return out


def split_lines(text: str) -> list[str]:
    """Lines as `cat -n` counts them: split at LF, no empty line after a final newline."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines
