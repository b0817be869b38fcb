"""Glob: one `find` in the sandbox, matched on the host with ripgrep-style glob semantics."""

from __future__ import annotations

import itertools
import posixpath
import re
import shlex

from frognano.agent.tools.common import ToolError, resolve_path
from frognano.sandbox.base import Sandbox

MAX_RESULTS = 100
MAX_EXPANSIONS = 64
LISTING_BYTES = 2 * 1024 * 1024
TRUNCATED_NOTE = "(Results are truncated. Consider using a more specific path or pattern.)"
INCOMPLETE_NOTE = (
    "(The directory tree is too large to search completely; some matches may be missing. "
    "Use a more specific path or pattern.)"
)
_META = frozenset("*?[{\\")
_HEADTAIL = re.compile(r"\n\[\.\.\. \d+ bytes of output omitted \.\.\.\]\n")

_FIND = r"""
if [ ! -e "$b" ]; then echo "E missing"; exit 0; fi
if [ ! -d "$b" ]; then echo "E notdir"; exit 0; fi
cd -- "$b" 2>/dev/null || { echo "E unreadable"; exit 0; }
echo OK
export LC_ALL=C
skip='\( -name .git -o -name node_modules \) -prune'
eval "find $start $skip -o -type f $names -printf '%T@\\t%p\\0'" 2>/dev/null |
  sort -z -t "$(printf '\t')" -k1,1nr -k2,2
"""


def expand_braces(pattern: str) -> list[str]:
    """Bash-style `{a,b}` expansion (nested allowed); a brace without a comma is literal."""
    depth, start = 0, -1
    commas: list[int] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            if depth == 0:
                start, commas = i, []
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                if commas:
                    head, tail = pattern[:start], pattern[i + 1 :]
                    bounds = [start, *commas, i]
                    out: list[str] = []
                    for low, high in itertools.pairwise(bounds):
                        for rest in expand_braces(pattern[low + 1 : high] + tail):
                            out.append(head + rest)
                            if len(out) > MAX_EXPANSIONS:
                                raise ToolError(
                                    f"pattern expands to more than {MAX_EXPANSIONS} alternatives"
                                )
                    return out
                start = -1
        elif char == "," and depth == 1:
            commas.append(i)
        i += 1
    return [pattern]


def _class(pattern: str, i: int) -> tuple[str, int] | None:
    """The regex for the `[...]` starting at `i`, and the index after it; None if unclosed."""
    j = i + 1
    negate = j < len(pattern) and pattern[j] in "!^"
    if negate:
        j += 1
    body: list[str] = []
    first = True
    while j < len(pattern):
        char = pattern[j]
        if char == "]" and not first:
            inner = "".join(body)
            return (f"[^/{inner}]" if negate else f"(?!/)[{inner}]"), j + 1
        if char == "\\" and j + 1 < len(pattern):
            j += 1
            char = pattern[j]
        if char == "-" and body and j + 1 < len(pattern) and pattern[j + 1] != "]":
            body.append("-")
        else:
            body.append(re.escape(char) if char in "\\]^[-" else char)
        first = False
        j += 1
    return None


def _translate(pattern: str) -> str:
    """Regex source for one brace-free glob, matched against a relative path."""
    out: list[str] = []
    segments = pattern.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:.*/)?")
            continue
        i = 0
        while i < len(segment):
            char = segment[i]
            if char == "*":
                while i < len(segment) and segment[i] == "*":
                    i += 1
                out.append("[^/]*")
                continue
            if char == "?":
                out.append("[^/]")
            elif char == "[" and (found := _class(segment, i)) is not None:
                out.append(found[0])
                i = found[1]
                continue
            elif char == "\\" and i + 1 < len(segment):
                i += 1
                out.append(re.escape(segment[i]))
            else:
                out.append(re.escape(char))
            i += 1
        if not last:
            out.append("/")
    return "".join(out)


def _normalise(pattern: str) -> str:
    pattern = re.sub(r"/{2,}", "/", pattern)
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if pattern.endswith("/"):
        pattern += "**"  # a directory: everything below it
    return pattern


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex that fully matches the relative paths (no leading `./`) `pattern` selects."""
    parts = []
    for alternative in expand_braces(_normalise(pattern)):
        source = _translate(alternative)
        if "/" not in alternative:
            source = "(?:.*/)?" + source
        parts.append(source)
    return re.compile("(?:" + "|".join(parts) + ")", re.DOTALL)


def _plan(pattern: str) -> tuple[str, str]:
    """Where `find` starts (a literal leading directory) and its `-name` prefilter, if any;
    both only narrow the listing, the regex decides."""
    alternatives = expand_braces(_normalise(pattern))
    start = "."
    if len(alternatives) == 1 and "/" in alternatives[0]:
        literal = []
        for segment in alternatives[0].split("/")[:-1]:
            if _META & set(segment) or segment in ("", ".", ".."):
                break
            literal.append(segment)
        if literal:
            start = "./" + "/".join(literal)
    names = [alt.rsplit("/", 1)[-1] for alt in alternatives]
    if any("**" in name or "[" in name or "\\" in name or not name for name in names):
        return shlex.quote(start), ""
    tests = " -o ".join(f"-name {shlex.quote(name)}" for name in dict.fromkeys(names))
    return shlex.quote(start), f"\\( {tests} \\)"


def _split_absolute(pattern: str) -> tuple[str, str]:
    """An absolute pattern as (its literal directory, the rest of the pattern)."""
    segments = pattern.split("/")[1:]
    literal: list[str] = []
    for segment in segments[:-1]:
        if _META & set(segment):
            break
        literal.append(segment)
    rest = "/".join(segments[len(literal) :])
    return "/" + "/".join(literal), rest


async def glob(sandbox: Sandbox, pattern: str, path: str | None, *, cwd: str) -> str:
    """Glob's output for `pattern` under `path` (default `cwd`), or raise ToolError.

    Semantics (ripgrep `--glob`, which Claude Code's Glob runs): `*` and `?` never cross `/`;
    `**` as a whole path segment matches zero or more directories (`**/x` also matches `x`,
    a trailing `/**` everything below); `[abc]`, `[a-z]`, `[!a]`/`[^a]` classes; `{a,b}`
    alternatives; `\\` escapes. A pattern without `/` matches the file's name at any depth
    (`*.py` is `**/*.py`); a pattern with `/` is anchored at the search directory. Dotfiles
    match like any other file. Only regular files are listed (symlinks are not followed);
    `.git` and `node_modules` directories are skipped unless they are the search directory.
    Results are newest first (ties by path), at most 100, as absolute paths. An absolute
    pattern (`/workspace/src/**/*.py`) carries its own directory; a relative `path` is taken
    from `cwd`. Cost: one sandbox round trip; a listing over 2 MiB keeps its newest part.
    """
    if not pattern.strip():
        raise ToolError("pattern must not be empty")
    if "\0" in pattern:
        raise ToolError("pattern must not contain NUL bytes")
    if pattern.startswith("/"):
        directory, pattern = _split_absolute(pattern)
        base = resolve_path(directory, cwd=cwd, name="pattern")
    else:
        base = resolve_path(path if path is not None else cwd, cwd=cwd, name="path", relative=True)
    regex = compile_glob(pattern)
    listing, incomplete = await _list(sandbox, base, pattern, cwd)
    matches: list[str] = []
    for record in listing.split("\0"):
        _, tab, relative = record.partition("\t")
        relative = relative.removeprefix("./")
        if tab and regex.fullmatch(relative):
            matches.append(posixpath.join(base, relative))
            if len(matches) > MAX_RESULTS:
                break
    if not matches:
        return INCOMPLETE_NOTE if incomplete else "No files found"
    lines = matches[:MAX_RESULTS]
    if len(matches) > MAX_RESULTS:
        lines.append(TRUNCATED_NOTE)
    elif incomplete:
        lines.append(INCOMPLETE_NOTE)
    return "\n".join(lines)


async def _list(sandbox: Sandbox, base: str, pattern: str, cwd: str) -> tuple[str, bool]:
    """NUL-separated "mtime<TAB>./path" records under `base`, newest first, and whether the
    listing is incomplete (too large, or too slow)."""
    start, names = _plan(pattern)
    script = f"b={shlex.quote(base)} start={shlex.quote(start)} names={shlex.quote(names)}\n"
    result = await sandbox.exec(script + _FIND, cwd="/", timeout=120, output_limit=LISTING_BYTES)
    status, _, listing = result.output.partition("\n")
    if status == "E missing":
        raise ToolError(
            f"Directory does not exist: {base}. Note: your current working directory is {cwd}."
        )
    if status == "E notdir":
        raise ToolError(f"Path is not a directory: {base}")
    if status != "OK":
        detail = "permission denied" if status == "E unreadable" else result.output.strip()[:500]
        raise ToolError(f"Cannot search {base}: {detail}")
    if result.truncated and (cut := _HEADTAIL.search(listing)) is not None:
        listing = listing[: cut.start()].rpartition("\0")[0]  # newest part, whole records only
    return listing, result.truncated or result.timed_out
