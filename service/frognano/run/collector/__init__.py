"""FrogNano's pytest collector: the plugin file the sandbox loads, and how to load it."""

from __future__ import annotations

import hashlib
import secrets
from functools import cache
from pathlib import Path

COLLECTOR_MODULE = "frognano_collector"
"""The plugin's module name, as PYTEST_PLUGINS names it."""
COLLECTOR_FILE = f"{COLLECTOR_MODULE}.py"
DEFAULT_FD = 87
"""The descriptor the test command inherits the record stream on: high, so no shell
redirection or test runner uses it by chance."""
ENV_FD = "FROGNANO_COLLECTOR_FD"
ENV_TOKEN = "FROGNANO_COLLECTOR_TOKEN"  # noqa: S105 - a variable's name, not its value
ENV_ROOT = "FROGNANO_COLLECTOR_ROOT"
ENV_SELECT = "FROGNANO_COLLECTOR_SELECT"
ENV_COVER = "FROGNANO_COLLECTOR_COVER"
ENV_WAIT = "FROGNANO_COLLECTOR_WAIT"
HELPER_FILES = ("frognano_outcome.py", "frognano_coverage.py", "frognano_selection.py")
"""Modules the plugin loads by path from its own folder: they travel with it."""


def collector_dir() -> Path:
    """The directory holding the plugin file on this host."""
    return Path(__file__).resolve().parent


@cache
def collector_source() -> bytes:
    """The plugin file's bytes, to copy into the sandbox."""
    return (collector_dir() / COLLECTOR_FILE).read_bytes()


def collector_sha256() -> str:
    """The plugin file's SHA-256, to name the copy in the sandbox and check it."""
    return hashlib.sha256(collector_source()).hexdigest()


@cache
def collector_files() -> tuple[tuple[str, bytes], ...]:
    """(file name, bytes) of the plugin and the modules it loads, to put in the sandbox."""
    folder = collector_dir()
    return tuple((name, (folder / name).read_bytes()) for name in (COLLECTOR_FILE, *HELPER_FILES))


def collector_digest() -> str:
    """One SHA-256 over every file of `collector_files`: what the baseline cache keys on."""
    hasher = hashlib.sha256()
    for name, data in collector_files():
        hasher.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return hasher.hexdigest()


def new_token() -> str:
    """A fresh nonce for one test run: records carrying another one were not written by it."""
    return secrets.token_hex(16)


def collector_env(
    *,
    plugin_dir: str,
    token: str,
    root: str = "/workspace",
    fd: int = DEFAULT_FD,
    select_file: str | None = None,
    cover_file: str | None = None,
    wait_file: str | None = None,
    pythonpath: str | None = None,
    pytest_plugins: str | None = None,
) -> dict[str, str]:
    """The variables that load the collector in every pytest the test command starts.

    `plugin_dir` is where the plugin file lies where the command runs; `pythonpath` and
    `pytest_plugins` are the values those variables already had there, kept after ours.
    """
    env = {
        "PYTHONPATH": plugin_dir if not pythonpath else f"{plugin_dir}:{pythonpath}",
        "PYTEST_PLUGINS": (
            COLLECTOR_MODULE if not pytest_plugins else f"{COLLECTOR_MODULE},{pytest_plugins}"
        ),
        ENV_FD: str(fd),
        ENV_TOKEN: token,
        ENV_ROOT: root,
    }
    if select_file is not None:
        env[ENV_SELECT] = select_file
    if cover_file is not None:
        env[ENV_COVER] = cover_file
    if wait_file is not None:
        env[ENV_WAIT] = wait_file
    return env


__all__ = [
    "COLLECTOR_FILE",
    "COLLECTOR_MODULE",
    "DEFAULT_FD",
    "ENV_COVER",
    "ENV_FD",
    "ENV_ROOT",
    "ENV_SELECT",
    "ENV_TOKEN",
    "ENV_WAIT",
    "HELPER_FILES",
    "collector_digest",
    "collector_dir",
    "collector_env",
    "collector_files",
    "collector_sha256",
    "collector_source",
    "new_token",
]
