"""Logging: JSON with bound context in clusters, and silence when used as a library."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from frognano.log import bound_contextvars, configure_logging, get_logger

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


@pytest.mark.usefixtures("restore_logging")
def test_json_lines_carry_bound_context() -> None:
    stream = io.StringIO()
    configure_logging("json", "INFO", stream=stream)
    log = get_logger("frognano.test", component="tests")
    with bound_contextvars(run_id="run-1", repo="acme/api"):
        log.info("stage.started", stage="sandbox")
        logging.getLogger("uvicorn.error").warning("from the standard library")
    log.debug("hidden at INFO")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert len(lines) == 2
    first, second = lines
    assert first["event"] == "stage.started"
    assert first["level"] == "info"
    assert first["run_id"] == "run-1"
    assert first["repo"] == "acme/api"
    assert first["component"] == "tests"
    assert first["stage"] == "sandbox"
    assert "timestamp" in first
    assert second["event"] == "from the standard library"
    assert second["run_id"] == "run-1"
    assert second["logger"] == "uvicorn.error"


@pytest.mark.usefixtures("restore_logging")
def test_console_format_is_readable_text() -> None:
    stream = io.StringIO()
    configure_logging("console", "DEBUG", stream=stream)
    get_logger("frognano.test").debug("sandbox.created", mechanism="unshare")
    text = stream.getvalue()
    assert "sandbox.created" in text
    assert "mechanism=unshare" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def test_unconfigured_library_use_prints_nothing_on_stdout() -> None:
    code = (
        "from frognano.log import get_logger\n"
        "log = get_logger('frognano.x')\n"
        "log.debug('quiet'); log.info('quiet too')\n"
        "print('only this')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(REPO_ROOT / "service")},
    )
    assert done.stdout == "only this\n"
    assert done.stderr == ""


def _fail_with(message: str) -> None:
    raise ValueError(message)


HOSTILE = "branch\x1b]0;pwned\x07 \x1b[2J \x9b31m \u202eevil"


@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize("fmt", ["console", "json"])
def test_a_hostile_value_is_logged_with_its_controls_shown(fmt: str) -> None:
    # Log values quote GitHub (a pull request's branch name), the model and the repository;
    # the worker's log is read on a terminal.
    stream = io.StringIO()
    configure_logging(fmt, "INFO", stream=stream)
    log = get_logger("frognano.test")
    log.warning("followup.not_ours", branch=HOSTILE)
    try:
        _fail_with(HOSTILE)
    except ValueError:
        log.exception("run.failed")  # the traceback quotes the text too
    out = stream.getvalue()
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in out
    assert "pwned" in out
