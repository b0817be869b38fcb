"""pyproject.toml's ways of installing from elsewhere: URL requirements, indexes, sources."""

# Line numbers are best effort: tomllib gives none, so the line is found by searching the text
# for the key or the string; None when the search finds nothing.

from __future__ import annotations

import re
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from frognano.run.environment.declared import GroupError, resolve_group, wanted_names
from frognano.run.environment.repofiles import Redirect, inside_repo, load_toml

__all__ = ["check_pyproject", "key_line", "line_of", "toml_error"]

_UV_INDEX_KEYS = ("index-url", "extra-index-url", "find-links", "index")
_SOURCE_KEYS = ("url", "git", "index")
_POETRY_KEYS = ("url", "git", "source")
_OUTSIDE = "would be fetched from outside the approved index"


def line_of(text: str, needle: str, start: int = 1) -> int | None:
    """The first line, from line `start` on, that contains `needle`."""
    for number, line in enumerate(text.splitlines(), start=1):
        if number >= start and needle in line:
            return number
    return None


def key_line(text: str, key: str, within: str = "") -> int | None:
    """The first line where `key` is assigned (bare, quoted or dotted) or is a table header.

    The search starts at the first line naming the table `within` (such as "tool.pdm"), or at
    the top when no line does.
    """
    start = line_of(text, within) or 1 if within else 1
    name = re.escape(key)
    pattern = re.compile(rf"(^|[\s.{{,\"'\[])({name})[\"']?\s*(=|\]|\.)")
    for number, line in enumerate(text.splitlines(), start=1):
        if number >= start and pattern.search(line.partition("#")[0]):
            return number
    return None


def toml_error(path: str, text: str) -> tuple[dict[str, Any] | None, list[Redirect]]:
    """The parsed document, or None and the refusal of a file that is not valid TOML."""
    document, line, message = load_toml(text)
    if document is None:
        return None, [Redirect(path, line, f"not valid TOML, so it cannot be checked: {message}")]
    return document, []


def _table(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _requirements(path: str, text: str, where: str, values: object) -> list[Redirect]:
    found: list[Redirect] = []
    if not isinstance(values, list):
        return found
    for value in values:
        if not isinstance(value, str):
            continue  # include-group tables and the like are checked where they are resolved
        try:
            url = Requirement(value).url
        except InvalidRequirement:
            reason = f"{where}: {value!r} is not a requirement pip would accept"
        else:
            if url is None:
                continue
            reason = f"{where}: {value} is a direct URL requirement that {_OUTSIDE}"
        found.append(Redirect(path, line_of(text, value), reason))
    return found


def check_pyproject(path: str, text: str) -> list[Redirect]:
    """The refusals of pyproject.toml at `path` with the content `text`."""
    document, found = toml_error(path, text)
    if document is None:
        return found
    project = _table(document.get("project"))
    found.extend(_requirements(path, text, "[project] dependencies", project.get("dependencies")))
    for extra, values in _table(project.get("optional-dependencies")).items():
        found.extend(_requirements(path, text, f"extra {extra}", values))
    build = _table(document.get("build-system"))
    found.extend(_requirements(path, text, "[build-system] requires", build.get("requires")))
    groups = _table(document.get("dependency-groups"))
    for group, values in groups.items():
        found.extend(_requirements(path, text, f"dependency group {group}", values))
    # only the groups the default install resolves: a broken docs group stops nothing
    for group in wanted_names(groups):
        try:
            resolve_group(groups, group)
        except GroupError as error:
            # one is enough: a cycle would otherwise be reported once per group on it
            found.append(Redirect(path, key_line(text, "dependency-groups"), str(error)))
            break
    tool = _table(document.get("tool"))
    found.extend(_uv(path, text, _table(tool.get("uv"))))
    found.extend(_poetry(path, text, _table(tool.get("poetry"))))
    pdm = _table(tool.get("pdm"))
    if "source" in pdm:
        found.append(
            Redirect(
                path, key_line(text, "source", "tool.pdm"), f"[tool.pdm] source {_INDEX_REASON}"
            )
        )
    return found


_INDEX_REASON = "names a package index; only the policy's environment.index_url may name one"


def _uv(path: str, text: str, uv: dict[str, Any]) -> list[Redirect]:
    found = []
    for where, table in (("[tool.uv]", uv), ("[tool.uv.pip]", _table(uv.get("pip")))):
        for key in _UV_INDEX_KEYS:
            if key in table:
                line = key_line(text, key, where.strip("[]"))
                found.append(Redirect(path, line, f"{where} {key} {_INDEX_REASON}"))
    base = path.rpartition("/")[0]
    for name, sources in _table(uv.get("sources")).items():
        for source in sources if isinstance(sources, list) else [sources]:
            reason = _source_problem(base, _table(source), _SOURCE_KEYS)
            if reason is not None:
                line = key_line(text, name, "tool.uv.sources")
                found.append(Redirect(path, line, f"[tool.uv.sources] {name}: {reason}"))
    return found


def _source_problem(base: str, source: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if key in source:
            if key in ("index", "source"):
                return f"its {key} {_INDEX_REASON}"
            return f"its {key} {_OUTSIDE}"
    value = source.get("path")
    if isinstance(value, str) and inside_repo(base, value) is None:
        return f"its path {value} is outside the repository"
    return None


def _poetry(path: str, text: str, poetry: dict[str, Any]) -> list[Redirect]:
    found = []
    if "source" in poetry:
        found.append(
            Redirect(
                path,
                key_line(text, "source", "tool.poetry"),
                f"[tool.poetry] source {_INDEX_REASON}",
            )
        )
    tables = [("dependencies", poetry.get("dependencies"))]
    tables.append(("dev-dependencies", poetry.get("dev-dependencies")))
    for group, table in _table(poetry.get("group")).items():
        tables.append((f"group {group}", _table(table).get("dependencies")))
    base = path.rpartition("/")[0]
    for where, dependencies in tables:
        for name, spec in _table(dependencies).items():
            for item in spec if isinstance(spec, list) else [spec]:
                reason = _source_problem(base, _table(item), _POETRY_KEYS)
                if reason is not None:
                    line = key_line(text, name, "tool.poetry")
                    found.append(Redirect(path, line, f"[tool.poetry] {where} {name}: {reason}"))
    return found
