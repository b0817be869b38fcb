"""What the host and the plugin file agree on: names, version, the file and its variables."""

from __future__ import annotations

import ast
import hashlib

import pytest

from frognano.run import collector
from frognano.run.collector import frognano_collector as plugin
from frognano.run.records import RECORD_VERSION
from frognano.run.results import (
    parse_records,
)


def test_a_token_is_required() -> None:
    with pytest.raises(ValueError, match="token"):
        parse_records(b"", "")


def test_the_plugin_and_the_host_agree_on_the_format() -> None:
    assert plugin.RECORD_VERSION == RECORD_VERSION
    assert plugin.MODULE == collector.COLLECTOR_MODULE == plugin.__name__.rsplit(".", 1)[1]
    assert (
        plugin.ENV_FD,
        plugin.ENV_TOKEN,
        plugin.ENV_ROOT,
        plugin.ENV_SELECT,
        plugin.ENV_COVER,
    ) == (
        collector.ENV_FD,
        collector.ENV_TOKEN,
        collector.ENV_ROOT,
        collector.ENV_SELECT,
        collector.ENV_COVER,
    )
    # Imported here, without its variables, it took nothing and will report nothing.
    assert plugin._SETTINGS is None


def test_the_plugin_file_for_the_sandbox() -> None:
    source = collector.collector_source()
    assert source.startswith(b'"""FrogNano\'s pytest plugin')
    assert collector.collector_sha256() == hashlib.sha256(source).hexdigest()
    assert (collector.collector_dir() / collector.COLLECTOR_FILE).read_bytes() == source
    # Standard library and pytest only: it runs in the tested repository's environment;
    # coverage.py only where a run asks, loaded by its helper (and never from the tree).
    for name, data in collector.collector_files():
        tree = ast.parse(data)
        imports = {
            name.split(".")[0]
            for node in ast.walk(tree)
            for name in (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
        }
        allowed = {"__future__", "collections", "contextlib", "importlib", "json", "math"}
        allowed |= {"os", "posixpath", "sys", "typing", "pytest"}
        if name == "frognano_coverage.py":
            allowed.add("coverage")
        assert imports <= allowed, name


def test_the_environment_for_the_test_command() -> None:
    env = collector.collector_env(
        plugin_dir="/opt/frognano",
        token="abc",  # noqa: S106
        select_file="/tmp/select",
        pythonpath="src",
    )
    assert env == {
        "PYTHONPATH": "/opt/frognano:src",
        "PYTEST_PLUGINS": "frognano_collector",
        "FROGNANO_COLLECTOR_FD": "87",
        "FROGNANO_COLLECTOR_TOKEN": "abc",
        "FROGNANO_COLLECTOR_ROOT": "/workspace",
        "FROGNANO_COLLECTOR_SELECT": "/tmp/select",
    }
    assert collector.new_token() != collector.new_token()
