"""uv.lock as exact installs: every locked package the project needs, pinned with its hashes."""

# pip installs the lock's pins with --no-deps --require-hashes: no resolution happens, so the
# environment holds exactly the versions uv locked, and a file whose bytes differ from the
# lock's (a tampered mirror, a re-uploaded release) fails the build instead of being used.
#
# Markers: each package is reached through dependency edges that may carry an environment
# marker. A package's condition is the OR, over the paths that reach it, of the AND of the
# markers along the path; pip evaluates it in the sandbox. Past MAX_PATHS alternatives a
# package is taken unconditionally (a superset: an extra package, never a missing one).

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from packaging.markers import InvalidMarker, Marker
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from frognano.run.environment.declared import wanted_names

__all__ = ["LockPins", "uv_lock_pins"]

MAX_PATHS = 8
# A canonical name (packaging.utils.canonicalize_name) and a digest pip accepts after --hash=.
_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_HASH = re.compile(r"^(sha256:[0-9a-f]{64}|sha384:[0-9a-f]{96}|sha512:[0-9a-f]{128})$")
_ROOT_SOURCES = ("editable", "virtual")

Condition = frozenset[str]
"""Markers that must all hold (empty: always)."""


@dataclass
class LockPins:
    """The pinned requirements file for pip, and what was left out of it and why."""

    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)

    def add(
        self, lock: str, name: str, version: str, hashes: list[str], marker: str | None
    ) -> None:
        """Pin `name==version` with its hashes (and the marker pip checks), or leave it out with
        a note. Every value comes from the repository's lock and ends up on a line pip parses:
        only a valid name, version and hash get there, never a newline or an option."""
        if not _NAME.match(name):
            self.notes.append(f"{lock}: {name!r} is not a package name; left out")
            return
        try:
            Version(version)
        except InvalidVersion:
            self.notes.append(f"{lock}: {name} {version!r} is not a version; left out")
            return
        if not hashes or not all(_HASH.match(h) for h in hashes):
            self.notes.append(f"{lock}: {name} {version} has no valid hash; left out")
            return
        line = f"{name}=={version}" + (f" ; {marker}" if marker else "")
        self.lines.append(line + "".join(f" --hash={h}" for h in hashes))


@dataclass
class _Package:
    name: str
    version: str
    entry: dict[str, Any]

    @property
    def source(self) -> dict[str, Any]:
        source = self.entry.get("source")
        return source if isinstance(source, dict) else {}

    def edges(self, table: str, names: Iterable[str]) -> list[dict[str, Any]]:
        """Dependency tables of `table` (optional-dependencies, dev-dependencies) for `names`."""
        found = self.entry.get(table)
        if not isinstance(found, dict):
            return []
        wanted = {canonicalize_name(name) for name in names}
        return [
            edge
            for key, edges in found.items()
            if canonicalize_name(key) in wanted and isinstance(edges, list)
            for edge in edges
            if isinstance(edge, dict)
        ]

    def hashes(self) -> list[str]:
        files = [self.entry.get("sdist"), *(self.entry.get("wheels") or [])]
        return sorted(
            {f["hash"] for f in files if isinstance(f, dict) and isinstance(f.get("hash"), str)}
        )


def _marker(text: object) -> str | None:
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return str(Marker(text))
    except InvalidMarker:
        return None


def uv_lock_pins(document: dict[str, Any]) -> LockPins | None:
    """The pins of the project at the lock's root (`source = { editable|virtual = "." }`) with
    its test/dev extras and dependency groups; None when the lock has no such root."""
    by_name: dict[str, list[_Package]] = {}
    for entry in document.get("package") or []:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            package = _Package(
                canonicalize_name(entry["name"]), str(entry.get("version", "")), entry
            )
            by_name.setdefault(package.name, []).append(package)
    roots = [
        p
        for group in by_name.values()
        for p in group
        if any(p.source.get(kind) == "." for kind in _ROOT_SOURCES)
    ]
    if len(roots) != 1:
        return None
    root = roots[0]
    conditions: dict[tuple[str, str], set[Condition]] = {}
    extras_of: dict[tuple[str, str], set[str]] = {}
    pins = LockPins()
    start = list(root.entry.get("dependencies") or [])
    optional = root.entry.get("optional-dependencies")
    dev = root.entry.get("dev-dependencies")
    start += root.edges("optional-dependencies", wanted_names(optional or {}))
    start += root.edges("dev-dependencies", wanted_names(dev or {}))
    queue: deque[tuple[dict[str, Any], Condition]] = deque((edge, frozenset()) for edge in start)
    while queue:
        edge, above = queue.popleft()
        target = _target(by_name, edge)
        if target is None:
            pins.notes.append(f"uv.lock: {edge.get('name')!r} is not in the lock; left out")
            continue
        if target is root:
            continue
        marker = _marker(edge.get("marker"))
        condition = above | {marker} if marker else above
        key = (target.name, target.version)
        known = conditions.setdefault(key, set())
        extras = {canonicalize_name(str(e)) for e in edge.get("extra") or []}
        new_extras = extras - extras_of.setdefault(key, set())
        if _covered(known, condition) and not new_extras:
            continue
        if len(known) >= MAX_PATHS:
            condition = frozenset()
        known.add(condition)
        extras_of[key] |= extras
        follow = list(target.entry.get("dependencies") or [])
        follow += target.edges("optional-dependencies", extras_of[key])
        queue.extend((child, condition) for child in follow if isinstance(child, dict))
    for (name, version), found in sorted(conditions.items()):
        package = next(p for p in by_name[name] if p.version == version)
        _pin(package, found, pins)
    return pins


def _target(by_name: dict[str, list[_Package]], edge: dict[str, Any]) -> _Package | None:
    name = edge.get("name")
    if not isinstance(name, str):
        return None
    candidates = by_name.get(canonicalize_name(name), [])
    version = edge.get("version")
    if isinstance(version, str):
        candidates = [p for p in candidates if p.version == version]
    return candidates[0] if len(candidates) == 1 else None


def _covered(known: set[Condition], condition: Condition) -> bool:
    """Whether a known path already holds whenever `condition` does (it asks no more)."""
    return any(other <= condition for other in known)


def _pin(package: _Package, found: set[Condition], pins: LockPins) -> None:
    if "registry" not in package.source:
        kind = next(iter(package.source), "no source")
        pins.notes.append(
            f"uv.lock: {package.name} comes from a {kind} source, not an index; left out"
        )
        return
    marker = None
    if frozenset() not in found:
        alternatives = sorted(" and ".join(f"({m})" for m in sorted(c)) for c in found)
        marker = " or ".join(f"({a})" for a in alternatives)
    pins.add("uv.lock", package.name, package.version, package.hashes(), marker)
