"""poetry.lock as exact installs: the packages of the wanted groups and extras, with hashes."""

# Only lock-version 2.1 and newer (Poetry 2) are translated: they record, per package, its
# groups and the markers under which the project needs it, so nothing has to be re-resolved.
# A marker may test `extra`, which pip cannot evaluate in a requirements file: each
# `extra == "NAME"` is decided here (true for the test/dev extras FrogNano installs, false for
# the others) and the rest of the marker is left for pip to evaluate in the sandbox.

from __future__ import annotations

import re
from typing import Any

from packaging.markers import InvalidMarker, Marker
from packaging.utils import canonicalize_name

from frognano.run.environment.declared import WANTED
from frognano.run.environment.uvlock import LockPins

__all__ = ["poetry_lock_pins"]

_GROUPS = {"main", *WANTED}
_EXTRA = re.compile(r"""extra\s*==\s*(['"])(?P<a>[^'"]*)\1|(['"])(?P<b>[^'"]*)\3\s*==\s*extra""")
_TRUE, _FALSE = 'python_version >= "0"', 'python_version < "0"'


def _supported(document: dict[str, Any]) -> bool:
    metadata = document.get("metadata")
    version = metadata.get("lock-version") if isinstance(metadata, dict) else None
    try:
        major, minor = (int(part) for part in str(version).split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (2, 1)


def _decided(marker: str) -> str | None:
    """`marker` with every `extra == NAME` decided; None if it still names `extra`."""

    def decide(found: re.Match[str]) -> str:
        name = found.group("a") if found.group("a") is not None else found.group("b")
        return _TRUE if canonicalize_name(name) in WANTED else _FALSE

    text = _EXTRA.sub(decide, marker)
    if "extra" in text:
        return None
    try:
        return str(Marker(text))
    except InvalidMarker:
        return None


def _condition(package: dict[str, Any]) -> tuple[bool, str | None]:
    """Whether the package is wanted at all, and the marker pip should check (None: always)."""
    groups = {g for g in package.get("groups") or [] if isinstance(g, str)} & _GROUPS
    if not groups:
        return False, None
    markers = package.get("markers")
    if isinstance(markers, dict):
        texts = [markers.get(group) for group in sorted(groups)]
        if any(not isinstance(text, str) for text in texts):
            return True, None  # a group that needs it with no condition
        combined = " or ".join(f"({text})" for text in texts)
    elif isinstance(markers, str) and markers.strip():
        combined = markers
    else:
        return True, None
    decided = _decided(combined)
    return (decided is not None), decided


def poetry_lock_pins(document: dict[str, Any]) -> LockPins | None:
    """The pins of poetry.lock's main, test and dev groups and test/dev extras; None when the
    lock is older than lock-version 2.1 (no groups or markers to go by)."""
    if not _supported(document):
        return None
    pins = LockPins()
    for package in document.get("package") or []:
        if not isinstance(package, dict) or not isinstance(package.get("name"), str):
            continue
        name = canonicalize_name(package["name"])
        wanted, marker = _condition(package)
        if not wanted:
            continue
        source = package.get("source")
        if isinstance(source, dict) and source.get("type") not in (None, "legacy"):
            pins.notes.append(
                f"poetry.lock: {name} comes from a {source.get('type')} source; left out"
            )
            continue
        hashes = sorted(
            {
                f["hash"]
                for f in package.get("files") or []
                if isinstance(f, dict) and isinstance(f.get("hash"), str)
            }
        )
        shown = None if marker == _TRUE else marker
        pins.add("poetry.lock", name, str(package.get("version")), hashes, shown)
    pins.lines.sort()
    return pins
