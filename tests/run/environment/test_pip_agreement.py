"""The scan reads requirements files as the pip in this venv does: same lines, same options."""

from __future__ import annotations

import importlib
import shlex
from typing import Any

import pytest

from frognano.run.environment.reqfile import logical_lines, parse_line

# pip's internals are no API: these tests compare against whichever pip is installed, and are
# skipped where there is none
req_file: Any = pytest.importorskip("pip._internal.req.req_file")


def pip_decode(data: bytes) -> str:
    """How pip decodes a requirements file: `_decode_req_file` since pip 25, `auto_decode`
    before."""
    decode = getattr(req_file, "_decode_req_file", None)
    if decode is not None:
        return str(decode(data, "requirements.txt"))
    # Older pips only; imported by name, since newer ones (and so the type checker) lack it.
    older: Any = importlib.import_module("pip._internal.utils.encoding")
    return str(older.auto_decode(data))


TEXTS = [
    "a \\\n-i x\n",
    "a \\\n# c \\\n-i x\n",
    "# c \\\n-i x\n",
    "a\\\n\\\n\\\n-i x",
    "a \\",
    "  # x\n\t#y\n-i x  # z\n",
    "a\r\n-i x\r\n",
    "a\x0c-i x\n",
    "a\u2028-i x\n",
    "a \\\r\n-i x\n",
    "a\\ \n-i x\n",
    "a # b \\\n-i x\n",
    "x \\\n  # comment\n",
]


@pytest.mark.parametrize("text", TEXTS)
def test_logical_lines_are_pips(text: str) -> None:
    assert logical_lines(text) == list(req_file.preprocess(text))


# pip's option destinations for the options the scan refuses or follows
DESTINATIONS = {
    "index_url": "--index-url",
    "extra_index_urls": "--extra-index-url",
    "find_links": "--find-links",
    "trusted_hosts": "--trusted-host",
    "requirements": "--requirement",
    "constraints": "--constraint",
    "editables": "--editable",
}

LINES = [
    "-i http://a",
    "--index-url=http://a",
    "-ihttp://a",
    "--pypi-url http://a",
    "--extra-index=http://a",
    "--ind http://a",
    "--ex http://a",
    "--f x",
    "--tr x",
    "foo --index-url http://a",
    "foo\t--index-url http://a",
    "foo  --index-url=http://a",
    "foo --hash=sha256:ab --extra-index-url=x",
    "--pre --index-url=x",
    "--no-index -i x",
    "--requirement x -i y",
    "-e . -f x",
    "-ex",
    "'--index-url' x",
    "-- -i x",
    "--only-binary :all: -i x",
    "--config-settings=-i=x -f y",
    "foo bar -i x",
    "-r a -r b -c c",
    "-i x#y",
]


@pytest.mark.parametrize("line", LINES)
def test_options_are_pips(line: str) -> None:
    args, rest = req_file.break_args_options(line)
    parser = req_file.build_parser()
    defaults = parser.get_default_values()
    defaults.index_url = None  # only what the line sets, not pip's default index
    options, _ = parser.parse_args(shlex.split(rest), defaults)
    pips: list[tuple[str, object]] = []
    for destination, name in DESTINATIONS.items():
        value = getattr(options, destination, None)
        values = value if isinstance(value, list) else [] if value is None else [value]
        pips.extend((name, item) for item in values)
    entry = parse_line(1, line)
    assert entry.error is None
    assert entry.requirement == args
    mine = [(name, value) for name, value in entry.options if name in DESTINATIONS.values()]
    assert sorted(mine) == sorted(pips)


def test_the_encoding_trick_the_scan_refuses_does_fool_pip() -> None:
    data = b"# -*- coding: utf-7 -*-\n+AC0ALQ-index-url http://evil.example\n"
    assert pip_decode(data).splitlines()[1] == "--index-url http://evil.example"
