"""Default install commands for a repository, read from its requirements and project files."""

# Every command is a shell string run in the sandbox with cwd /workspace (the repository copy)
# and the target venv's `python` first on PATH. Each token taken from the repository (a file
# name, a requirement, an extra) goes through shlex.quote: a file named `requirements-$(id).txt`
# is a file name, never a command substitution.
#
# detect() never raises for what the repository holds. A file it cannot read or parse (not
# UTF-8, over 1 MiB, a symbolic link, malformed TOML) adds no command, only a note; the scan
# (redirects.find_redirects, given the same key files) reports the same file as a refusal, so the
# run stops with that reason before any command runs.

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from frognano.run.environment.declared import (
    GroupError,
    read_setup_cfg,
    resolve_group,
    wanted_names,
)
from frognano.run.environment.poetrylock import poetry_lock_pins
from frognano.run.environment.repofiles import Unreadable, load_toml, read_text
from frognano.run.environment.reqfile import collect
from frognano.run.environment.uvlock import uv_lock_pins

__all__ = [
    "GENERATED",
    "LOCK_FILES",
    "PROJECT_FILES",
    "Detected",
    "detect",
    "requirements_roots",
]

PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
"""Files at the root that declare the project itself."""
LOCK_FILES = ("poetry.lock", "pylock.toml", "uv.lock")
"""Lock files at the root: recorded as key files, not translated into commands yet."""

_PIP = "python -m pip install"
GENERATED = "/tmp/frognano"  # noqa: S108 - the build sandbox's own private /tmp
"""Where the build sandbox finds the files FrogNano generated for its commands."""


@dataclass(frozen=True)
class Detected:
    """The default install of a repository, and the files it was decided from."""

    commands: tuple[str, ...]
    """Shell commands, in order, run with cwd /workspace and the venv's python on PATH."""
    key_files: tuple[str, ...]
    """Repository paths (POSIX, sorted) of every file whose bytes decide the environment."""
    notes: tuple[str, ...]
    """Sentences for the run's report: what was found and what is installed from it."""
    files: tuple[tuple[str, bytes], ...] = ()
    """Files FrogNano wrote for the commands (a lock's pins), put in GENERATED before they run."""


def requirements_roots(repo_dir: Path) -> list[str]:
    """`requirements*.txt` at the root and `requirements/*.txt`, sorted."""
    found = [
        entry.name
        for entry in repo_dir.iterdir()
        if entry.name.startswith("requirements")
        and entry.name.endswith(".txt")
        and not entry.is_dir()
    ]
    folder = repo_dir / "requirements"
    # a linked folder is not listed: its names could be those of a folder outside the checkout
    if folder.is_dir() and not folder.is_symlink():
        found.extend(
            f"requirements/{entry.name}"
            for entry in folder.iterdir()
            if entry.name.endswith(".txt") and not entry.is_dir()
        )
    return sorted(found)


def detect(repo_dir: Path) -> Detected:
    """The default install commands for the checkout at `repo_dir`.

    Never raises for what the repository holds: a key file that cannot be read or parsed
    (malformed TOML, not UTF-8, over 1 MiB, a symbolic link) adds a note and no command, and
    `find_redirects` given the same key files refuses it with its reason and line.
    """
    commands: list[str] = []
    notes: list[str] = []
    roots = requirements_roots(repo_dir)
    if (repo_dir / "requirements").is_symlink():
        notes.append("requirements/ is a symbolic link; FrogNano installs no file in it")
    files, _ = collect(repo_dir, roots)  # refusals are the scan's to report
    key_files = set(roots) | {file.path for file in files}
    for root in roots:
        commands.append(f"{_PIP} -r {shlex.quote(root)}")
        notes.append(f"{root}: installing its requirements")
    present = {
        name
        for name in (*PROJECT_FILES, *LOCK_FILES)
        if (repo_dir / name).is_symlink() or (repo_dir / name).exists()
    }
    key_files |= present
    for lock in ("uv.lock", "poetry.lock"):
        locked = _from_lock(repo_dir, lock, present, notes) if lock in present else None
        if locked is not None:
            if roots:
                notes.append(f"requirements files are not installed: {lock} pins the environment")
            return Detected(locked[0], tuple(sorted(key_files)), tuple(notes), locked[1])
    if "pyproject.toml" in present:
        _from_pyproject(repo_dir, present, commands, notes)
    elif present & {"setup.py", "setup.cfg"}:
        _from_setup(repo_dir, present, commands, notes)
    for lock in sorted(present & set(LOCK_FILES) - {"uv.lock", "poetry.lock"}):
        notes.append(
            f"{lock}: found, but lock files are not translated yet; the dependencies come from "
            "the requirements the project declares, not the lock's pins, unless the policy's "
            "environment.install says how to install"
        )
    if not commands and not notes:
        notes.append(
            "found no requirements file, pyproject.toml, setup.py or setup.cfg: nothing to install"
        )
    return Detected(tuple(commands), tuple(sorted(key_files)), tuple(notes))


def _from_lock(
    repo_dir: Path, lock: str, present: set[str], notes: list[str]
) -> tuple[tuple[str, ...], tuple[tuple[str, bytes], ...]] | None:
    """Exact installs from `lock` (uv.lock or poetry.lock): its pins with their hashes, then
    the project itself with no dependencies; None (with a note) when it cannot be used so."""
    try:
        document, line, _ = load_toml(read_text(repo_dir, lock))
    except Unreadable as error:
        notes.append(f"{lock}: not read, it {error}")
        return None
    if document is None:
        notes.append(f"{lock}: not valid TOML (line {line}); not used")
        return None
    if lock == "uv.lock":
        pins = uv_lock_pins(document)
        why = "no single project at its root (a workspace?)"
    else:
        pins = poetry_lock_pins(document)
        why = "older than lock-version 2.1 (Poetry 2), which records groups and markers"
    if pins is None:
        notes.append(f"{lock}: {why}; not used")
        return None
    notes.extend(pins.notes)
    notes.append(
        f"{lock}: installing its {len(pins.lines)} pinned packages with their hashes "
        "(no resolution), then the project editable without dependencies"
    )
    generated = lock.replace(".", "-") + ".txt"
    commands = [f"{_PIP} --no-deps --require-hashes -r {GENERATED}/{generated}"]
    if "pyproject.toml" in present:
        commands.append(f"{_PIP} --no-deps -e .")
    return tuple(commands), ((generated, pins.text().encode()),)


def _editable(extras: list[str]) -> str:
    target = f".[{','.join(extras)}]" if extras else "."
    return f"{_PIP} -e {shlex.quote(target)}"


def _from_pyproject(
    repo_dir: Path, present: set[str], commands: list[str], notes: list[str]
) -> None:
    try:
        document, line, _ = load_toml(read_text(repo_dir, "pyproject.toml"))
    except Unreadable as error:
        notes.append(f"pyproject.toml: not read, it {error}")
        return
    if document is None:
        notes.append(f"pyproject.toml: not valid TOML (line {line}); nothing installed from it")
        return
    project = document.get("project")
    if isinstance(project, dict):
        optional = project.get("optional-dependencies")
        extras = wanted_names(optional) if isinstance(optional, dict) else []
        commands.append(_editable(extras))
        with_extras = f" with extras {', '.join(extras)}" if extras else ""
        notes.append(f"pyproject.toml: installing the project editable{with_extras}")
    elif present & {"setup.py", "setup.cfg"}:
        _from_setup(repo_dir, present, commands, notes)
    elif isinstance(document.get("build-system"), dict):
        commands.append(_editable([]))
        notes.append(
            "pyproject.toml: no [project] table; installing the project editable with the "
            "dependencies its build backend declares"
        )
    groups = document.get("dependency-groups")
    if isinstance(groups, dict):
        _from_groups(groups, commands, notes)


def _from_groups(groups: dict[str, Any], commands: list[str], notes: list[str]) -> None:
    requirements: list[str] = []
    for name in wanted_names(groups):
        try:
            entries = resolve_group(groups, name)
        except GroupError as error:
            notes.append(f"pyproject.toml: dependency group {name} not installed: {error}")
            continue
        for entry in entries:
            # only a plain requirement may reach pip's command line: a string such as
            # "--index-url=..." would be an option there, and a URL would leave the index
            try:
                plain = Requirement(entry).url is None
            except InvalidRequirement:
                plain = False
            if not plain:
                notes.append(
                    f"pyproject.toml: dependency group {name}: {entry!r} skipped, it is not a "
                    "plain requirement"
                )
            elif entry not in requirements:
                requirements.append(entry)
        notes.append(f"pyproject.toml: installing dependency group {name}")
    if requirements:
        commands.append(" ".join([_PIP, *(shlex.quote(entry) for entry in requirements)]))


def _from_setup(repo_dir: Path, present: set[str], commands: list[str], notes: list[str]) -> None:
    extras: list[str] = []
    if "setup.cfg" in present:
        try:
            parser = read_setup_cfg(read_text(repo_dir, "setup.cfg"))
        except Unreadable:
            parser = None
        if parser is not None and parser.has_section("options.extras_require"):
            extras = wanted_names(parser.options("options.extras_require"))
    commands.append(_editable(extras))
    source = "setup.py" if "setup.py" in present else "setup.cfg"
    with_extras = f" with extras {', '.join(extras)}" if extras else ""
    notes.append(f"{source}: installing the project editable{with_extras}")
