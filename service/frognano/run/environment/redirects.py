"""The scan for repository content that would install from elsewhere than the approved index."""

# This scan exists for clear, early errors: a repository whose requirements name another index,
# a URL or a VCS checkout is refused before any install starts, with the file and line to fix.
# It is not the security boundary. The install sandbox's network reaches only the hosts of the
# policy's environment.index_url, so a redirect the scan misses fails to connect instead of
# installing something else; no miss here can widen the network.

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from frognano.run.environment.declared import read_setup_cfg
from frognano.run.environment.detect import LOCK_FILES, PROJECT_FILES
from frognano.run.environment.lockscan import check_poetry_lock, check_pylock, check_uv_lock
from frognano.run.environment.repofiles import (
    Redirect,
    Unreadable,
    inside_repo,
    link_on_path,
    read_text,
)
from frognano.run.environment.reqfile import Entry, collect
from frognano.run.environment.tomlscan import check_pyproject, line_of

__all__ = ["CONFIG_NAMES", "Redirect", "find_redirects", "requirement_problem"]

CONFIG_NAMES = frozenset({"pip.conf", "pip.ini", "uv.toml", ".pydistutils.cfg", ".netrc"})
"""File names pip, uv or setuptools read configuration (or credentials) from."""

_ENV_FILES = (".env", ".envrc", "tox.ini", "setup.cfg", "pyproject.toml")
_ENV_ASSIGNMENT = re.compile(r"(?<![A-Za-z0-9_])((?:PIP|UV|POETRY)_[A-Z0-9_]+)[\"']?\s*[=:]")
_ENV_REFERENCE = re.compile(r"\$\{[A-Z0-9_]+\}")  # pip expands ${NAME} before parsing a line
_SETUP_WORDS = re.compile(r"\b(dependency[_-]links|index[_-]url|find[_-]links)\b")
_VCS = re.compile(r"^(git|hg|svn|bzr)\+", re.IGNORECASE)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_EXTRAS = re.compile(r"\[[^\]]*\]$")
_SETUP_CFG_REQUIREMENTS = ("install_requires", "setup_requires", "tests_require")
_INDEX = "points pip at another index; only the policy's environment.index_url may name one"
_OUTSIDE = "would be fetched from outside the approved index"
_CONFIG = (
    "a repository pip/uv configuration: pip or uv could read it and install from elsewhere; "
    "only the policy says where packages come from"
)


def find_redirects(repo_dir: Path, key_files: Sequence[str]) -> list[Redirect]:
    """Every reason, by file and line, why installing `key_files` could leave the index.

    `key_files` is `Detected.key_files`; requirements files among them are read again with
    their includes. The whole checkout (but `.git`) is searched for pip and uv configuration.
    Sorted by path and line; empty when the scan finds nothing.

    This scan is for clear, early errors, not for security: the boundary is the network path.
    The install sandbox reaches only the hosts of the policy's environment.index_url, so a
    redirect the scan misses fails to connect; a miss here cannot widen the network.
    """
    found: list[Redirect] = []
    special = {*PROJECT_FILES, *LOCK_FILES}
    files, refused = collect(repo_dir, [path for path in key_files if path not in special])
    found.extend(refused)
    for file in files:
        for entry in file.entries:
            found.extend(
                Redirect(file.path, entry.line, r) for r in _entry_problems(repo_dir, entry)
            )
    checks = {
        "pyproject.toml": check_pyproject,
        "setup.py": _check_setup,
        "setup.cfg": _check_setup,
        "uv.lock": check_uv_lock,
        "poetry.lock": check_poetry_lock,
        "pylock.toml": check_pylock,
    }
    for path in sorted(special & set(key_files)):
        try:
            text = read_text(repo_dir, path)
        except Unreadable as error:
            found.append(Redirect(path, None, f"the file {error}"))
            continue
        check = checks.get(path)
        if check is not None:
            found.extend(check(path, text))
    found.extend(_environment_assignments(repo_dir))
    found.extend(_config_files(repo_dir))
    return sorted(set(found), key=lambda r: (r.path, r.line or 0, r.reason))


def requirement_problem(repo_dir: Path, text: str) -> str | None:
    """Why pip installing the requirement `text` (cwd the repository) could leave the index."""
    if _VCS.match(text):
        return f"{text} is a version-control requirement that {_OUTSIDE}"
    if _URL.match(text):
        return f"{text} is a URL that {_OUTSIDE}"
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        # pip also takes a local path or archive; it is relative to the cwd, the repository
        if text.startswith((".", "/")) or "/" in text:
            return _path_problem(repo_dir, text)
        return f"{text} is not a requirement pip would accept"
    if requirement.url is not None:
        return f"{text} is a direct URL requirement that {_OUTSIDE}"
    return None


def _path_problem(repo_dir: Path, text: str) -> str | None:
    path = inside_repo("", _EXTRAS.sub("", text))
    if path is None:
        return f"{text} is a path outside the repository"
    link = link_on_path(repo_dir, path)
    if link is not None:
        return f"{text} goes through the symbolic link {link}"
    return None


def _entry_problems(repo_dir: Path, entry: Entry) -> list[str]:
    if _ENV_REFERENCE.search(entry.text):
        return [
            "the line uses ${...}, which pip replaces with an environment variable, so the scan "
            "cannot see what the line becomes; write the value out"
        ]
    if entry.error is not None:
        return [f"pip would reject the line: {entry.error}"]
    problems = []
    for name, value in entry.options:
        if name in ("--index-url", "--extra-index-url"):
            problems.append(f"{name} {_INDEX}")
        elif name == "--find-links":
            problems.append("--find-links makes pip look for packages outside the approved index")
        elif name == "--trusted-host":
            problems.append(
                "--trusted-host names a host for pip to trust; only the policy's index is reached"
            )
        elif name == "--editable" and value is not None:
            problem = _editable_problem(repo_dir, value)
            if problem is not None:
                problems.append(problem)
    if entry.requirement:
        problem = requirement_problem(repo_dir, entry.requirement)
        if problem is not None:
            problems.append(problem)
    return problems


def _editable_problem(repo_dir: Path, value: str) -> str | None:
    if _VCS.match(value) or _URL.match(value):
        return f"--editable {value} installs from a URL that {_OUTSIDE}"
    problem = _path_problem(repo_dir, value)
    return None if problem is None else f"--editable {problem}"


def _check_setup(path: str, text: str) -> list[Redirect]:
    found = [
        Redirect(
            path,
            number,
            f"{match.group(1)} may point the install elsewhere than the approved index",
        )
        for number, line in enumerate(text.splitlines(), start=1)
        for match in _SETUP_WORDS.finditer(line)
    ]
    if path == "setup.cfg":
        found.extend(_setup_cfg_urls(path, text))
    return found


def _setup_cfg_urls(path: str, text: str) -> list[Redirect]:
    parser = read_setup_cfg(text)
    if parser is None:
        return [Redirect(path, None, "setuptools could not parse it as a configuration file")]
    values = [
        parser.get("options", key)
        for key in _SETUP_CFG_REQUIREMENTS
        if parser.has_option("options", key)
    ]
    if parser.has_section("options.extras_require"):
        values.extend(value for _, value in parser.items("options.extras_require"))
    found = []
    for value in values:
        for line in value.splitlines():
            requirement = line.partition("#")[0].strip()
            try:
                url = Requirement(requirement).url if requirement else None
            except InvalidRequirement:
                continue  # setuptools reports it; it names no URL for pip to fetch
            if url is not None:
                reason = f"{requirement} is a direct URL requirement that {_OUTSIDE}"
                found.append(Redirect(path, line_of(text, requirement), reason))
    return found


def _environment_assignments(repo_dir: Path) -> list[Redirect]:
    found = []
    for path in _ENV_FILES:
        try:
            text = read_text(repo_dir, path)
        except Unreadable:
            continue  # a key file among them is refused on its own; the others do not count
        for number, line in enumerate(text.splitlines(), start=1):
            for match in _ENV_ASSIGNMENT.finditer(line):
                reason = (
                    f"sets {match.group(1)}, which pip, uv or Poetry read as configuration; "
                    "only the policy configures the install"
                )
                found.append(Redirect(path, number, reason))
    return found


def _config_files(repo_dir: Path) -> list[Redirect]:
    found = []
    for folder, subfolders, names in os.walk(repo_dir):
        rel = Path(folder).relative_to(repo_dir).as_posix()
        prefix = "" if rel == "." else f"{rel}/"
        subfolders[:] = sorted(name for name in subfolders if name != ".git")
        in_pip_folder = ".pip" in prefix.split("/")
        for name in sorted(names):
            if name in CONFIG_NAMES or in_pip_folder:
                found.append(Redirect(f"{prefix}{name}", None, _CONFIG))
    return found
