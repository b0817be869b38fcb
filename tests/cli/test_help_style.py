"""Every command's --help in one style: readable metavars, plain switches, no {braces}."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from frognano.cli.app import app

PYTHON_TYPES = re.compile(r"<(str|int|float|bool|path|dir|file)>|list\[|\brange\b|<\w+ range>")
BRACES = re.compile(r"\{[^}\s]*\}")
NEGATIVE_SWITCH = re.compile(r"--[\w-]+\s+--no-[\w-]+")


def _command_paths() -> list[tuple[str, ...]]:
    """Every group and command of `frognano`, as the words that name it."""
    root = typer.main.get_command(app)
    found: list[tuple[str, ...]] = []

    def walk(command: object, path: tuple[str, ...]) -> None:
        found.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(root, ())
    return found


PATHS = _command_paths()


def test_the_walk_finds_every_command() -> None:
    names = {" ".join(path) for path in PATHS}
    assert {"solve", "worker", "serve", "model check", "sandbox run", "trajectory show"} <= names
    assert len(PATHS) >= 18


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(path) or "frognano")
def test_help_is_in_one_style(path: tuple[str, ...]) -> None:
    done = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    text = done.output
    assert not PYTHON_TYPES.search(text), text
    assert not BRACES.search(text), text
    assert not NEGATIVE_SWITCH.search(text), text
    assert "<" not in text.replace("<=", ""), text


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        (("solve",), "--sandbox [local|kubernetes]"),
        (("sandbox", "run"), "--sandbox [local|kubernetes]"),
        (("trajectory", "show"), "--format [text|html]"),
        (("solve",), "--model-url URL"),
        (("model", "check"), "--model-url URL"),
        (("solve",), "Usage: frognano solve [OPTIONS] REPO_DIR"),
    ],
)
def test_help_shows_the_convention(path: tuple[str, ...], shown: str) -> None:
    done = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert shown in re.sub(r"\s+", " ", done.output), done.output


def test_old_names_are_hidden() -> None:
    done = CliRunner().invoke(app, ["model", "check", "--help"], env={"COLUMNS": "200"})
    assert "--base-url" not in done.output
    shown = CliRunner().invoke(app, ["trajectory", "show", "--help"], env={"COLUMNS": "200"})
    assert "--no-full" not in shown.output
