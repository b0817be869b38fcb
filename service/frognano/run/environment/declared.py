"""What pyproject.toml and setup.cfg declare: test extras and PEP 735 dependency groups."""

from __future__ import annotations

import configparser
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "WANTED",
    "GroupError",
    "normalize",
    "read_setup_cfg",
    "resolve_group",
    "wanted_names",
]

WANTED = frozenset({"test", "tests", "testing", "dev"})
"""The extras and dependency groups installed by default: the ones tests are likely to need."""

_SEPARATORS = re.compile(r"[-_.]+")


class GroupError(ValueError):
    """A dependency group that cannot be resolved; the message says which and why."""


def normalize(name: str) -> str:
    """PEP 503/685 normalization of an extra's or a group's name."""
    return _SEPARATORS.sub("-", name).lower()


def wanted_names(names: Iterable[object]) -> list[str]:
    """The names (as written) whose normalized form is one of WANTED, sorted."""
    return sorted(name for name in names if isinstance(name, str) and normalize(name) in WANTED)


def resolve_group(groups: Mapping[str, Any], name: str) -> list[str]:
    """The requirement strings of dependency group `name`, its `include-group`s expanded.

    Raises GroupError for an unknown group, an entry that is neither a string nor an
    `{include-group = ...}` table, or an include cycle.
    """
    by_name: dict[str, Any] = {}
    for key, value in groups.items():
        if normalize(key) in by_name:
            raise GroupError(f"dependency group {key} is declared twice (names are normalized)")
        by_name[normalize(key)] = value
    return _resolve(by_name, normalize(name), ())


def _resolve(groups: Mapping[str, Any], name: str, trail: tuple[str, ...]) -> list[str]:
    if name in trail:
        cycle = " -> ".join((*trail[trail.index(name) :], name))
        raise GroupError(f"dependency groups include each other in a cycle: {cycle}")
    if name not in groups:
        raise GroupError(f"dependency group {name} is included but not declared")
    entries = groups[name]
    if not isinstance(entries, list):
        raise GroupError(f"dependency group {name} is not a list")
    resolved: list[str] = []
    for entry in entries:
        if isinstance(entry, str):
            resolved.append(entry)
        elif isinstance(entry, dict) and set(entry) == {"include-group"}:
            included = entry["include-group"]
            if not isinstance(included, str):
                raise GroupError(f"dependency group {name} has an include-group that is no name")
            resolved.extend(_resolve(groups, normalize(included), (*trail, name)))
        else:
            raise GroupError(f"dependency group {name} has an entry that is not a requirement")
    return resolved


def read_setup_cfg(text: str) -> configparser.ConfigParser | None:
    """setup.cfg parsed as setuptools reads it (no interpolation), or None if it does not parse."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    return parser
