"""Policy path globs: what matches, and which patterns the loader must refuse."""

from __future__ import annotations

import pytest

from frognano.policy.models import DEFAULT_FORBIDDEN_PATHS, DEFAULT_PROTECTED_PATHS
from frognano.policy.paths import check_glob, path_matches


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("tests/**", "tests/test_a.py", True),
        ("tests/**", "tests/unit/deep/test_a.py", True),
        ("tests/**", "tests/.hidden/data.json", True),
        ("tests/**", "src/tests/test_a.py", False),
        ("tests/**", "tests_old/test_a.py", False),
        ("**/test_*.py", "test_top.py", True),
        ("**/test_*.py", "pkg/sub/test_deep.py", True),
        ("**/test_*.py", "pkg/sub/testing.py", False),
        ("**/*_test.py", "a/b_test.py", True),
        ("**/conftest.py", "conftest.py", True),
        ("**/conftest.py", "a/b/conftest.py", True),
        ("*.py", "top.py", True),
        ("*.py", "pkg/inner.py", False),  # `*` never crosses `/`
        ("src/*", "src/a/b.py", False),
        ("src/**/b.py", "src/b.py", True),  # `**` is zero or more folders
        ("src/**/b.py", "src/x/y/b.py", True),
        ("**/.env", ".env", True),
        ("**/.env", "deploy/.env", True),
        ("**/.env", "deploy/.env.example", False),
        ("**/*.pem", "certs/.hidden.pem", True),
        (".github/workflows/**", ".github/workflows/ci.yml", True),
        (".github/workflows/**", ".github/dependabot.yml", False),
        ("docs/{a,b}.md", "docs/b.md", True),
        ("docs/{a,b}.md", "docs/c.md", False),
        ("Makefile", "makefile", False),  # case-sensitive
        ("data/[ab].csv", "data/a.csv", True),
        ("data/[!ab].csv", "data/a.csv", False),
        ("**/café *.py", "x/café notes.py", True),
    ],
)
def test_path_matches(pattern: str, path: str, expected: bool) -> None:
    assert (path_matches(path, [pattern]) == pattern) is expected


def test_path_matches_returns_the_first_matching_pattern() -> None:
    patterns = ["docs/**", "**/*.py", "src/**"]
    assert path_matches("src/a.py", patterns) == "**/*.py"
    assert path_matches("README.md", patterns) is None
    assert path_matches("src/a.py", []) is None


@pytest.mark.parametrize("pattern", [*DEFAULT_PROTECTED_PATHS, *DEFAULT_FORBIDDEN_PATHS])
def test_shipped_defaults_are_valid(pattern: str) -> None:
    assert check_glob(pattern) is None


@pytest.mark.parametrize(
    "pattern", ["a", "src/**/*.py", "data/[]x].csv", "docs/{a,{b,c}}.md", "x/[!.]*"]
)
def test_valid_patterns(pattern: str) -> None:
    assert check_glob(pattern) is None


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (" tests/**", "white space"),
        ("/etc/passwd", "absolute"),
        ("../outside/**", "'..'"),
        ("src/../../x", "'..'"),
        ("./tests/**", "'.' segment"),
        ("tests/", "ends with '/'"),
        ("src//x.py", "empty segment"),
        ("!tests/**", "negation"),
        ("tests\\**", "backslash"),
        ("data/[ab.csv", "unbalanced '['"),
        ("data/[a/b].csv", "unbalanced '['"),
        ("data/ab].csv", "unbalanced ']'"),
        ("docs/{a,b.md", "unbalanced '{'"),
        ("docs/a,b}.md", "unbalanced '}'"),
        ("{a,b}" * 12, "not a valid glob"),  # a brace expansion over wcmatch's limit
    ],
)
def test_invalid_patterns_get_a_message(pattern: str, message: str) -> None:
    problem = check_glob(pattern)
    assert problem is not None
    assert message in problem
