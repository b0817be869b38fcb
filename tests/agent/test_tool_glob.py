"""Glob: ripgrep-style pattern semantics, newest-first order, the cap, skipped directories."""

from __future__ import annotations

import json
from typing import Any

import pytest

from frognano.agent.tools.box import ToolBox
from frognano.agent.tools.common import ToolError
from frognano.agent.tools.glob import TRUNCATED_NOTE, compile_glob, expand_braces
from frognano.agent.turns import ToolCall, ToolResult
from frognano.sandbox.local import LocalSandbox


async def call(box: ToolBox, name: str, **arguments: Any) -> ToolResult:
    return await box.call(ToolCall(id="call_1", name=name, arguments=json.dumps(arguments)))


def error(text: str) -> ToolResult:
    return ToolResult(f"<tool_use_error>{text}</tool_use_error>", is_error=True)


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        # No "/": the name at any depth (ripgrep --glob).
        ("*.py", ["a.py", "d/a.py", "d/e/.hidden.py"], ["a.pyc", "a.py/x", "py"]),
        ("setup.py", ["setup.py", "pkg/setup.py"], ["xsetup.py", "setup.pyc"]),
        # With "/": anchored at the search directory; * and ? never cross "/".
        ("src/*.py", ["src/a.py"], ["src/d/a.py", "x/src/a.py", "a.py"]),
        ("src/?.py", ["src/a.py"], ["src/ab.py", "src//.py"]),
        ("*/*.md", ["docs/a.md"], ["a.md", "docs/x/a.md"]),
        # ** matches zero or more directories.
        ("**/*.py", ["a.py", "d/a.py", "d/e/f/a.py"], ["a.txt"]),
        ("src/**/*.ts", ["src/a.ts", "src/x/y/a.ts"], ["lib/a.ts", "src.ts", "xsrc/a.ts"]),
        ("src/**", ["src/a", "src/x/y/z.c"], ["src", "lib/a"]),
        ("**/test_*.py", ["test_a.py", "t/test_b.py"], ["t/atest_b.py"]),
        ("a/**/b/*.c", ["a/b/x.c", "a/q/r/b/x.c"], ["a/x.c", "a/b/c/x.c"]),
        ("**/tests/**", ["tests/a.py", "pkg/tests/x/y.py"], ["pkg/tests"]),
        # Classes, alternatives, escapes.
        ("[ab].txt", ["a.txt", "d/b.txt"], ["c.txt", "ab.txt"]),
        ("[!a].txt", ["b.txt"], ["a.txt"]),
        ("[^a-c].txt", ["d.txt"], ["b.txt"]),
        ("file[0-9].log", ["file7.log"], ["filex.log", "file10.log"]),
        ("*.{js,ts}", ["a.js", "x/b.ts"], ["a.jsx", "a.{js,ts}"]),
        ("{src,lib}/**/*.rs", ["src/a.rs", "lib/x/b.rs"], ["bin/a.rs"]),
        ("a{b,c{d,e}}f", ["abf", "acdf", "acef"], ["acf", "af"]),
        ("{x}.c", ["{x}.c"], ["x.c"]),
        ("\\*.txt", ["*.txt"], ["a.txt"]),
        ("[.txt", ["[.txt"], ["a.txt"]),
        ("a+b(c).txt", ["a+b(c).txt"], ["aab(c).txt"]),
        ("./src/*.py", ["src/a.py"], ["a.py"]),
        ("docs/", ["docs/a.md", "docs/x/y"], ["a.md"]),
        ("*", ["a", "x/y/z", ".env"], []),
    ],
)
def test_glob_semantics(pattern: str, matches: list[str], misses: list[str]) -> None:
    regex = compile_glob(pattern)
    for path in matches:
        assert regex.fullmatch(path), f"{pattern!r} should match {path!r}"
    for path in misses:
        assert not regex.fullmatch(path), f"{pattern!r} should not match {path!r}"


def test_brace_expansion_is_bounded() -> None:
    assert expand_braces("{a,b}{c,d}") == ["ac", "ad", "bc", "bd"]
    assert expand_braces("{a}") == ["{a}"]
    assert expand_braces("\\{a,b}") == ["\\{a,b}"]
    with pytest.raises(ToolError, match="more than 64 alternatives"):
        expand_braces("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}")


async def test_newest_first_skipping_git_and_node_modules(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.exec(
        "mkdir -p src/pkg .git/hooks node_modules/lib src/node_modules .github/workflows && "
        "touch -d '2020-01-01 00:00:01' src/old.py && "
        "touch -d '2022-01-01 00:00:00' src/pkg/new.py && "
        "touch -d '2021-01-01 00:00:00' top.py b_tie.py a_tie.py && "
        "touch .git/hooks/x.py node_modules/lib/y.py src/node_modules/z.py notes.txt && "
        "touch -d '2019-01-01' .github/workflows/ci.py && "
        "ln -s src/old.py link.py"
    )
    result = await call(box, "Glob", pattern="**/*.py")
    assert result == ToolResult(
        "/workspace/src/pkg/new.py\n"
        "/workspace/a_tie.py\n/workspace/b_tie.py\n/workspace/top.py\n"
        "/workspace/src/old.py\n"
        "/workspace/.github/workflows/ci.py"
    )
    assert (await call(box, "Glob", pattern="*.py")).content == result.content
    assert (await call(box, "Glob", pattern="src/*.py")).content == "/workspace/src/old.py"
    assert (await call(box, "Glob", pattern="*.py", path="/workspace/src")).content == (
        "/workspace/src/pkg/new.py\n/workspace/src/old.py"
    )
    # Naming a skipped directory as the place to search works.
    assert (await call(box, "Glob", pattern="*.py", path="/workspace/.git")).content == (
        "/workspace/.git/hooks/x.py"
    )
    assert (await call(box, "Glob", pattern="/workspace/src/**/*.py")).content == (
        "/workspace/src/pkg/new.py\n/workspace/src/old.py"
    )
    assert await call(box, "Glob", pattern="*.rs") == ToolResult("No files found")
    assert await call(box, "Glob", pattern="missing/**/*.py") == ToolResult("No files found")


async def test_default_path_is_the_bash_cwd(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await call(box, "Bash", command="mkdir -p /tmp/w/d && touch /tmp/w/d/a.c /workspace/b.c")
    await call(box, "Bash", command="cd /tmp/w")
    assert (await call(box, "Glob", pattern="**/*.c")).content == "/tmp/w/d/a.c"
    assert (await call(box, "Glob", pattern="*.c", path="d")).content == "/tmp/w/d/a.c"
    assert (await call(box, "Glob", pattern="*.c", path="/workspace")).content == "/workspace/b.c"


async def test_at_most_100_results(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.exec(
        "mkdir many && cd many && touch f{001..150}.txt && touch -d '2000-01-01' f{001..149}.txt"
    )
    result = await call(box, "Glob", pattern="many/*.txt")
    lines = result.content.split("\n")
    assert len(lines) == 101
    assert lines[0] == "/workspace/many/f150.txt"  # the newest
    assert lines[1:100] == [f"/workspace/many/f{n:03}.txt" for n in range(1, 100)]
    assert lines[100] == TRUNCATED_NOTE
    assert TRUNCATED_NOTE == (
        "(Results are truncated. Consider using a more specific path or pattern.)"
    )


async def test_glob_errors(sandbox: LocalSandbox) -> None:
    box = ToolBox(sandbox)
    await sandbox.write_file("/workspace/file.txt", b"x")
    assert await call(box, "Glob", pattern="*", path="/workspace/nope") == error(
        "Directory does not exist: /workspace/nope. "
        "Note: your current working directory is /workspace."
    )
    assert await call(box, "Glob", pattern="*", path="/workspace/file.txt") == error(
        "Path is not a directory: /workspace/file.txt"
    )
    assert await call(box, "Glob", pattern="*", path="/etc") == error(
        "path must be inside /workspace or /tmp (the directories the tools may use), got: /etc"
    )
    assert await call(box, "Glob", pattern="/etc/*.conf") == error(
        "pattern must be inside /workspace or /tmp (the directories the tools may use), got: /etc"
    )
    assert await call(box, "Glob", pattern=" ") == error("pattern must not be empty")
