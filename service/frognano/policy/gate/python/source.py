"""Python source as the gate reads it: parsing without side effects, git's line numbers, spans."""

from __future__ import annotations

import ast
import re
import textwrap
import warnings
from bisect import bisect_left
from collections.abc import Iterator, Sequence

NEWLINE = re.compile(r"\r\n|\r|\n")
# PEP 263; encodings that decode UTF-8 text to itself (or byte for byte) hide nothing.
_COOKIE = re.compile(r"[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_PLAIN_ENCODINGS = frozenset({"utf-8", "utf8", "ascii", "us-ascii", "latin-1", "latin1",
                              "iso-8859-1", "iso8859-1", "cp1252", "utf-8-sig"})  # fmt: skip
# Lines that need a body to parse on their own: a decorator, a `def` or `class` header.
_HEADERS = re.compile(r"(?:async\s+)?(?:def|class)\b.*:\s*(?:#.*)?$")


def parse(source: str) -> ast.Module | str:
    """`source`'s syntax tree, or why it has none."""
    try:
        # A warning (an invalid escape such as "\d") must neither print nor, under `-W error`,
        # become a SyntaxError that hides the file from the analysis. catch_warnings swaps
        # process-wide filters; FrogNano runs the gate on one thread per worker process.
        with warnings.catch_warnings(action="ignore"):
            return ast.parse(source)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return type(exc).__name__


def split_lines(source: str) -> list[str]:
    """`source`'s lines as Python counts them."""
    return NEWLINE.split(source)


def git_lines(source: str) -> list[int]:
    """For each Python line number (index; 0 unused), the git line number it starts on."""
    numbers = [0, 1]
    git = 1
    for match in NEWLINE.finditer(source):
        git += "\n" in match.group(0)
        numbers.append(git)
    return numbers


def odd_encoding(lines: Sequence[str]) -> tuple[int, str] | None:
    """(line, encoding) of a source encoding declaration under which UTF-8 text reads as other
    code (utf-7, say), or None."""
    for number, line in enumerate(lines[:2], start=1):  # PEP 263: the first two lines
        cookie = _COOKIE.match(line)
        if cookie is not None:
            encoding = cookie.group(1)
            plain = encoding.lower().replace("_", "-") in _PLAIN_ENCODINGS
            return None if plain else (number, encoding)
    return None


def fragments(lines: Sequence[str], numbers: Sequence[int]) -> Iterator[tuple[str, list[int]]]:
    """(source, its added lines) for each run of consecutive added lines that parses on its own,
    else for each of its lines that does; blank lines in front keep the line numbers."""
    if len(numbers) != len(lines):
        numbers = range(1, len(lines) + 1)
    start = 0
    for index in range(1, len(lines) + 1):
        if index < len(lines) and numbers[index] == numbers[index - 1] + 1:
            continue
        run = list(zip(numbers[start:index], lines[start:index], strict=True))
        start = index
        whole = textwrap.dedent("\n".join(line for _, line in run))
        if not isinstance(parse(whole), str):
            yield "\n" * (run[0][0] - 1) + whole + "\n", [number for number, _ in run]
            continue
        for number, line in run:
            text = line.strip()
            if text.startswith("@") or _HEADERS.match(text):
                text += "\n    pass" if not text.startswith("@") else "\ndef _(): pass"
            if text and not isinstance(parse(text), str):
                yield "\n" * (number - 1) + text + "\n", [number]


def touches(node: ast.AST, added: Sequence[int]) -> int | None:
    """The first of the sorted line numbers `added` within `node`'s lines, or None."""
    start = getattr(node, "lineno", None)
    if start is None:
        return None
    end = getattr(node, "end_lineno", None) or start
    index = bisect_left(added, start)
    if index < len(added) and added[index] <= end:
        return added[index]
    return None


def leaves(target: ast.expr) -> Iterator[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from leaves(element)
    elif isinstance(target, ast.Starred):
        yield from leaves(target.value)
    else:
        yield target


def with_decorators(node: ast.AST) -> ast.AST:
    """`node`, or for a decorated definition a stand-in node spanning its decorators too."""
    decorators = getattr(node, "decorator_list", None)
    if not decorators:
        return node
    span = ast.Pass()
    span.lineno = min([getattr(node, "lineno", 1), *(d.lineno for d in decorators)])
    span.end_lineno = getattr(node, "end_lineno", span.lineno)
    return span


def header_span(node: ast.AST) -> ast.AST:
    """A stand-in node spanning a statement's header: a compound statement up to its body,
    a definition from its first decorator (whose expressions are part of the header)."""
    body = getattr(node, "body", None)
    first = getattr(node, "lineno", 1)
    end = getattr(node, "end_lineno", first)
    start = getattr(with_decorators(node), "lineno", first)
    if isinstance(body, list) and body and isinstance(body[0], ast.AST):
        end = max(first, getattr(body[0], "lineno", first) - 1)
    span = ast.Pass()
    span.lineno, span.end_lineno = start, end
    return span
