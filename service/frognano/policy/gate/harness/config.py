"""The sections of shared config files (pyproject.toml, setup.cfg) that steer the test run."""

from __future__ import annotations

import configparser
import tomllib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TypeVar

_Document = TypeVar("_Document")

_NOT_A_TABLE = object()

_MISSING = object()
"""Stands for an absent section, so that adding an empty one still counts as a change (an
empty [tool.pytest.ini_options] makes its file pytest's config file and its folder rootdir)."""


@dataclass(frozen=True)
class Section:
    """One part of a shared config file that decides how tests are collected or run."""

    keys: tuple[str, ...]
    """Where it is: TOML table keys, or an INI section (and option) name."""
    label: str
    """How a maintainer writes it: `[tool.pytest.ini_options]`."""
    reader: str
    """Who reads it, to start the reason: "pytest reads its options from"."""
    tool: str | None = None
    """Counts only when the test command runs this tool (`CommandTargets.tools`)."""
    exclude: str | None = None
    """A sub-table compared by a section of its own."""


PYPROJECT_SECTIONS = (
    Section(("tool", "pytest", "ini_options"), "[tool.pytest.ini_options]",
            "pytest reads its options from"),
    # pytest 9 also reads [tool.pytest] itself (TOML mode); ini_options is compared above.
    Section(("tool", "pytest"), "[tool.pytest]", "pytest reads its options from",
            exclude="ini_options"),
    Section(("project", "entry-points", "pytest11"), "[project.entry-points.pytest11]",
            "pytest automatically loads the plugins declared in"),
    Section(("tool", "tox"), "[tool.tox]", "the test command runs tox, which reads", "tox"),
    Section(("tool", "hatch", "envs"), "[tool.hatch.envs]",
            "the test command runs hatch, which reads its environments and scripts from",
            "hatch"),
    Section(("tool", "hatch", "env"), "[tool.hatch.env]",
            "the test command runs hatch, which reads its environment plugins from", "hatch"),
    Section(("tool", "pdm", "scripts"), "[tool.pdm.scripts]",
            "the test command runs pdm, which reads the scripts it runs from", "pdm"),
)  # fmt: skip

SETUP_CFG_SECTIONS = (
    Section(("tool:pytest",), "[tool:pytest]", "pytest reads its options from"),
    Section(("options.entry_points", "pytest11"), "pytest11 in [options.entry_points]",
            "pytest automatically loads the plugins declared in"),
    Section(("tox:tox",), "[tox:tox]", "the test command runs tox, which reads", "tox"),
    Section(("testenv",), "[testenv] and [testenv:...]",
            "the test command runs tox, which reads", "tox"),
)  # fmt: skip


class Unreadable(Exception):
    """A config file that cannot be parsed; the message says why, in words."""


def config_reason(
    name: str, base: bytes | None, new: bytes | None, tools: Collection[str]
) -> str | None:
    """Why a change of the shared config file called `name` (a base name) changes the harness,
    or None when it does not (or `name` is no shared config file). A file absent on one side is
    compared as an empty one; one that cannot be parsed on either side always counts."""
    if name == "pyproject.toml":
        return _changed(
            name,
            base,
            new,
            tools=tools,
            load=_load_toml,
            value=_toml_value,
            sections=PYPROJECT_SECTIONS,
        )
    if name == "setup.cfg":
        return _changed(
            name,
            base,
            new,
            tools=tools,
            load=_load_ini,
            value=_ini_value,
            sections=SETUP_CFG_SECTIONS,
        )
    if name == "hatch.toml" and "hatch" in tools:
        return "the test command runs hatch, which reads its environments and scripts from it"
    return None


def _changed(
    name: str,
    base: bytes | None,
    new: bytes | None,
    *,
    tools: Collection[str],
    load: Callable[[bytes | None], _Document],
    value: Callable[[_Document, Section], object],
    sections: tuple[Section, ...],
) -> str | None:
    documents: list[_Document] = []
    for side, content in (("before", base), ("after", new)):
        try:
            documents.append(load(content))
        except Unreadable as error:
            return (
                f"{name} is {error} {side} the patch, so FrogNano cannot tell whether the "
                "settings that steer the test run changed"
            )
    for section in sections:
        if section.tool is not None and section.tool not in tools:
            continue
        if value(documents[0], section) != value(documents[1], section):
            return f"{section.reader} {section.label} in {name}, and the patch changes it"
    return None


def _text(content: bytes | None) -> str:
    try:
        return "" if content is None else content.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("not valid UTF-8") from None


def _load_toml(content: bytes | None) -> dict[str, object]:
    try:
        return tomllib.loads(_text(content))
    except (tomllib.TOMLDecodeError, RecursionError):
        raise Unreadable("not valid TOML") from None


def _toml_value(document: dict[str, object], section: Section) -> object:
    node: object = document
    for key in section.keys:
        if not isinstance(node, dict):
            return _NOT_A_TABLE  # `tool = 1`: no settings there, but not the same as no key
        if key not in node:
            return _MISSING
        node = node[key]
    if section.exclude is not None and isinstance(node, dict):
        return {key: value for key, value in node.items() if key != section.exclude}
    return node


def _load_ini(content: bytes | None) -> configparser.RawConfigParser:
    # Raw: no `%` interpolation. Keys keep their case (pytest's iniconfig and setuptools
    # both read them case-sensitively). [DEFAULT] stays merged into every section, as
    # setuptools and tox read it; for pytest that only errs towards a hit.
    parser = configparser.RawConfigParser(strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(_text(content))
    except configparser.Error:
        raise Unreadable("not a valid INI file") from None
    return parser


def _ini_value(parser: configparser.RawConfigParser, section: Section) -> object:
    name = section.keys[0]
    if name == "testenv":
        names = [each for each in parser.sections() if each.startswith("testenv")]
        return {each: dict(parser.items(each, raw=True)) for each in names}
    if not parser.has_section(name):
        return _MISSING
    options = dict(parser.items(name, raw=True))
    return options.get(section.keys[1], _MISSING) if len(section.keys) > 1 else options
