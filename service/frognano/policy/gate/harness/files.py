"""Which files of a patch belong to the test harness: the files that decide which tests run."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Literal

from frognano.policy.gate.harness.command import CommandTargets, command_targets
from frognano.policy.gate.harness.config import config_reason
from frognano.policy.gate.harness.plugins import plugin_name
from frognano.policy.paths import path_matches

HarnessRule = Literal["harness_file", "config_section", "command_file", "test_plugin"]
"""Which rule of `harness_changes` made the hit: 1, 2, 3 or 4."""

Change = tuple[str, bytes | None, bytes | None]
"""(path, base content or None when absent in the base, new content or None when deleted)."""

_TEST_FOLDERS = "{tests,test,testing}"
_ENTRY_POINTS = (
    "pytest loads the plugins declared by the entry_points.txt of every distribution it finds "
    "on sys.path, and `python -m pytest` puts the repository on sys.path; this is such "
    "distribution metadata"
)
WHOLE_FILES: dict[str, str] = {
    "**/conftest.py": (
        "pytest loads conftest.py files as plugins: their fixtures and hooks apply to every "
        "test beside and below them"
    ),
    "**/{pytest.ini,.pytest.ini,pytest.toml,.pytest.toml}": (
        "pytest reads its options from this file (pytest.toml and .pytest.toml since pytest 9)"
    ),
    "**/tox.ini": (
        "tox reads its environments and their commands from tox.ini, and pytest reads its "
        "options from its [pytest] section"
    ),
    "**/noxfile.py": "nox reads its sessions, and the commands they run, from noxfile.py",
    "**/{sitecustomize,usercustomize}.py": (
        "Python imports this module at start-up, before any test runs, when it is on sys.path"
    ),
    "**/*.pth": "Python's site module runs the `import` lines of .pth files at start-up",
    "**/*.{dist-info,egg-info}/**": _ENTRY_POINTS,
    "**/*.egg-info": _ENTRY_POINTS,  # an old-style egg-info may be a single file
    "**/{frognano_collector.*,frognano_collector/**}": (
        "this is the module name of FrogNano's own result collector: where the test command "
        "puts the folder on sys.path first (`python -m` the working folder, a PYTHONPATH or "
        "`pythonpath` entry), Python would import it instead of FrogNano's"
    ),
    f"**/{_TEST_FOLDERS}/**/__init__.py": (
        "an __init__.py in a test folder changes how pytest imports the test modules there "
        "and the names it gives them"
    ),
}
"""Rule 1: globs (the policy's semantics) of harness files, each with its reason."""

TEST_MODULES = (f"**/{_TEST_FOLDERS}/**/*.py", "**/test_*.py", "**/*_test.py", "**/conftest.py")
"""Rule 4: the Python files read as test modules."""

_BY_SECTION = frozenset({"pyproject.toml", "setup.cfg"})
"""Shared config files: only their sections that steer the run count (rule 2), even when the
command names them (`pytest -c pyproject.toml`)."""

_SHOWN_COMMAND = 80


@dataclass(frozen=True)
class HarnessHit:
    """A changed file that belongs to the test harness."""

    path: str
    """As given in `changes`."""
    reason: str
    """One sentence for a maintainer: why this file decides which tests run, or how."""
    rule: HarnessRule


def harness_changes(
    changes: Sequence[Change], *, command: str, base_paths: AbstractSet[str]
) -> list[HarnessHit]:
    """The files among `changes` that decide how tests are collected or run, sorted by path.

    `changes` holds one (path, base bytes, new bytes) per file the patch adds, modifies or
    deletes; paths are repository-relative with `/` separators (bytes that are not UTF-8 as
    surrogate escapes). `command` is the policy's test command, run at the repository root;
    `base_paths` every file path of the base tree. A path listed twice counts once (its first
    entry). Each hit has one reason: that of the first rule that matches, in this order.

    1. Harness files, at any depth (`WHOLE_FILES`): conftest.py, pytest.ini, .pytest.ini,
       pytest.toml, .pytest.toml, tox.ini, noxfile.py, sitecustomize.py, usercustomize.py,
       `*.pth`, anything in a `*.dist-info` or `*.egg-info` folder, a module or package
       named frognano_collector, and `__init__.py` under a
       folder named tests, test or testing.
    2. Sections of shared config files, at any depth, compared as parsed values (tomllib,
       configparser), a missing file as an empty one: pyproject.toml's [tool.pytest] and
       [tool.pytest.ini_options] and [project.entry-points.pytest11]; setup.cfg's
       [tool:pytest] and the pytest11 option of [options.entry_points]; when the command runs
       tox also [tool.tox], [tox:tox] and [testenv...]; hatch: [tool.hatch.envs],
       [tool.hatch.env] and hatch.toml (whole); pdm: [tool.pdm.scripts]. A file that cannot
       be parsed on either side (not UTF-8, invalid TOML or INI) always counts.
    3. Files the command runs or reads (`command_targets`): its scripts (`./x`, `bash x`,
       `python x.py`), `python -m` modules, the Makefile, tox and nox files, pytest's `-c`,
       `--rootdir`, `--confcutdir`, `-p` and `--pyargs` files, and any other word naming a
       file. A file the command names counts when the patch adds it too (the agent writing
       the script the command runs); a file matched by a glob in the command only when it is
       in the base (a new test file the glob picks up is a new test, not harness). Words
       resolve from the root and from any `cd`/`-C` folder; `/workspace/x` is the root's x;
       modules (`-m`, `-p`, PYTEST_PLUGINS) from the root, `src/` and PYTHONPATH.
    4. Python test modules (under a test folder, or named test_*.py, *_test.py) that bind
       `pytest_plugins` or a `pytest_*` hook at module level (`plugin_name`), in the new
       content or, for a change that removes one, in the base content.

    Limits: files that a script, Makefile (`include`s, recursive make), tox environment or
    nox session reaches only indirectly are not followed; nor are shell variables, command
    substitutions or aliases. A harness that lives outside the repository (an installed
    plugin package, a site-wide sitecustomize, the sandbox image's pytest) is out of scope,
    and so is a new top-level module that shadows one the tests import (e.g. `json.py`).
    """
    targets = command_targets(command)
    shown = " ".join(command.split())
    if len(shown) > _SHOWN_COMMAND:
        shown = shown[: _SHOWN_COMMAND - 3] + "..."
    context = _Context(
        targets, {target.path: target.role for target in targets.files}, base_paths, shown
    )
    seen: set[str] = set()
    hits: list[HarnessHit] = []
    for path, base, new in changes:
        if path in seen or (base is None and new is None):
            continue
        seen.add(path)
        for rule, judge in _RULES:
            reason = judge(path, base, new, context)
            if reason is not None:
                hits.append(HarnessHit(path, reason, rule))
                break
    return sorted(hits, key=lambda hit: hit.path)


@dataclass(frozen=True)
class _Context:
    targets: CommandTargets
    named: dict[str, str]
    """`targets.files` by path."""
    base_paths: AbstractSet[str]
    shown: str
    """The command, for a sentence."""


def _verb(base: bytes | None, new: bytes | None) -> str:
    return "adds" if base is None else "deletes" if new is None else "changes"


def _harness_file(
    path: str, base: bytes | None, new: bytes | None, context: _Context
) -> str | None:
    pattern = path_matches(path, list(WHOLE_FILES))
    return None if pattern is None else WHOLE_FILES[pattern]


def _config_section(
    path: str, base: bytes | None, new: bytes | None, context: _Context
) -> str | None:
    return config_reason(posixpath.basename(path), base, new, context.targets.tools)


def _command_file(
    path: str, base: bytes | None, new: bytes | None, context: _Context
) -> str | None:
    if posixpath.basename(path) in _BY_SECTION:
        return None
    role = context.named.get(path)
    if role is None and path in context.base_paths:
        role = next(
            (glob.role for glob in context.targets.globs if path_matches(path, [glob.path])), None
        )
    if role is None:
        return None
    return f"the test command `{context.shown}` {role}, and the patch {_verb(base, new)} it"


def _test_plugin(path: str, base: bytes | None, new: bytes | None, context: _Context) -> str | None:
    if not path.endswith(".py") or path_matches(path, TEST_MODULES) is None:
        return None
    if new is not None and (binding := plugin_name(new)) is not None:
        return (
            f"this test module loads or defines pytest plugins (module-level `{binding}`), "
            "which change how tests are collected and run"
        )
    if base is not None and (binding := plugin_name(base)) is not None:
        return (
            f"this test module loaded or defined pytest plugins before the patch (module-level "
            f"`{binding}`), and the patch {_verb(base, new)} it"
        )
    return None


_RULES: tuple[
    tuple[HarnessRule, Callable[[str, bytes | None, bytes | None, _Context], str | None]], ...
] = (
    ("harness_file", _harness_file),
    ("config_section", _config_section),
    ("command_file", _command_file),
    ("test_plugin", _test_plugin),
)
"""Rules 1 to 4, in order: each says why the file is harness, or None."""
