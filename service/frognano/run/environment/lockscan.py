"""Lock file entries that come from a git checkout or a URL instead of an index."""

# Lock files are not translated into commands yet, but a lock that pins a package to a git
# repository or a URL says the project does not install from an index alone: refusing it now
# gives the clear error before the day the lock is used.

from __future__ import annotations

from typing import Any

from frognano.run.environment.repofiles import Redirect
from frognano.run.environment.tomlscan import line_of, toml_error

__all__ = ["check_poetry_lock", "check_pylock", "check_uv_lock"]


def _packages(document: dict[str, Any]) -> list[dict[str, Any]]:
    packages = document.get("package")
    return [p for p in packages if isinstance(p, dict)] if isinstance(packages, list) else []


def _line(text: str, name: object, marker: str) -> int | None:
    """The line of `marker` after the package's name line: where its source is written."""
    start = line_of(text, f'name = "{name}"')
    return None if start is None else line_of(text, marker, start)


def check_uv_lock(path: str, text: str) -> list[Redirect]:
    """uv.lock packages whose `source` is `{ git = ... }` or `{ url = ... }`."""
    document, found = toml_error(path, text)
    if document is None:
        return found
    for package in _packages(document):
        source = package.get("source")
        if not isinstance(source, dict):
            continue
        for kind in ("git", "url"):
            if kind in source:
                name = package.get("name")
                reason = (
                    f"package {name} is locked to the {kind} {source[kind]}, not to a package "
                    "from an index"
                )
                found.append(Redirect(path, _line(text, name, "source = "), reason))
    return found


def check_poetry_lock(path: str, text: str) -> list[Redirect]:
    """poetry.lock packages whose `[package.source]` has `type = "git"` or `"url"`."""
    document, found = toml_error(path, text)
    if document is None:
        return found
    for package in _packages(document):
        source = package.get("source")
        if isinstance(source, dict) and source.get("type") in ("git", "url"):
            name = package.get("name")
            reason = (
                f"package {name} is locked to the {source['type']} {source.get('url')}, not to a "
                "package from an index"
            )
            found.append(Redirect(path, _line(text, name, "[package.source]"), reason))
    return found


def check_pylock(path: str, text: str) -> list[Redirect]:
    """pylock.toml (PEP 751) packages from a version-control system or an archive URL."""
    document, found = toml_error(path, text)
    if document is None:
        return found
    packages = document.get("packages")
    for package in packages if isinstance(packages, list) else []:
        if not isinstance(package, dict):
            continue
        for kind in ("vcs", "archive"):
            source = package.get(kind)
            if isinstance(source, dict) and "url" in source:
                name = package.get("name")
                reason = (
                    f"package {name} is locked to the {kind} {source['url']}, not to a package "
                    "from an index"
                )
                found.append(Redirect(path, _line(text, name, "url"), reason))
    return found
