"""Test-weakening Python on the syntax tree: the exact hits and strings of small sources."""

from __future__ import annotations

import pytest

from frognano.policy.gate.python import rules
from frognano.policy.gate.python.code import PyAnalysis, PyHit, PyString, analyse, analyse_added


def analysed(source: str) -> PyAnalysis:
    """`source` analysed with every line added."""
    return analyse(source, list(range(1, source.count("\n") + 2)))


def hits(source: str) -> list[tuple[int, str]]:
    return [(hit.line, hit.label) for hit in analysed(source).hits]


HIT_CASES: list[tuple[str, list[tuple[int, str]]]] = [
    # assignments of equality methods
    ("__ne__ = lambda self, other: False", [(1, rules.ALWAYS_EQUAL)]),
    ("__eq__ = lambda self, other: True", [(1, rules.ALWAYS_EQUAL)]),
    ("__eq__ = lambda self, other: False", []),
    ("__eq__ = lambda self, other: other", []),
    ("__eq__ = True", []),
    ("f = lambda: False", []),
    ("C.__ne__ = lambda self, other: False", [(1, rules.ALWAYS_EQUAL)]),
    ("C.__eq__ = lambda self, other: 1", [(1, rules.ALWAYS_EQUAL)]),
    ("C.f = lambda: False", []),
    ("C.__eq__ = eq", []),
    # attributes of sys and of results
    ("import sys\nsys.excepthook = f", [(2, rules.PATCH)]),
    ("import sys\nsys.stdout = f", [(2, rules.STREAMS)]),
    ("import sys\nsys.foo = 1", []),
    ("x.exit = 1", []),
    ("x.stdout = 1", []),
    ("report.outcome = 1", [(1, rules.RESULTS)]),
    ("self.outcome = 1", []),
    ("cls.outcome = 1", []),
    ("self.x.outcome = 1", [(1, rules.RESULTS)]),
    ("import sys\nsys.modules['pytest'] = m", [(2, rules.UNDER_TEST), (2, rules.PATCH)]),
    ("import sys\nsys.modules['json'] = m", [(2, rules.IMPORTS)]),
    # raises, augmented and annotated assignments, deletions
    ("raise SystemExit(1)", [(1, rules.RAISE)]),
    ("raise KeyboardInterrupt", [(1, rules.RAISE)]),
    ("e = SystemExit(1)\nraise e", [(2, rules.RAISE)]),
    ("raise ValueError()", []),
    ("raise", []),
    ("collect_ignore += ['x']", [(1, rules.COLLECT)]),
    ("collect_ignore: list = []", [(1, rules.COLLECT)]),
    ("import sys\ndel sys.modules['json']", [(2, rules.IMPORTS)]),
    # imports
    ("from ctypes import CDLL", [(1, rules.CTYPES)]),
    ("from .pytest import skip", []),
    ("from . import ctypes", []),
    ("from ..ctypes import x", []),
    ("import ctypes.util", [(1, rules.CTYPES)]),
    # dynamic imports
    ("import importlib\nimportlib.import_module(name)", [(2, rules.DYNAMIC_IMPORT)]),
    ("import importlib\nimportlib.import_module('json')", []),
    ("import importlib\nimportlib.import_module()", []),
    # method calls
    ("collect_ignore.append('x')", [(1, rules.COLLECT)]),
    ("pytest_plugins.append('x')", [(1, rules.PLUGIN)]),
    ("other.append('x')", []),
    ("self.skipTest('later')", [(1, rules.UNITTEST_SKIP)]),
    ("monkeypatch.setattr('pytest.main', f)", [(1, rules.PATCH)]),
    ("monkeypatch.delattr('_pytest.runner.x')", [(1, rules.PATCH)]),
    ("mock.patch('unittest.TestCase.run')", [(1, rules.PATCH)]),
    ("mock.patch('unittest.mock.x')", []),
    ("monkeypatch.setattr('json.dumps', f)", []),
    ("monkeypatch.setattr('builtins', 'open', f)", []),
    ("monkeypatch.setattr(target, 'x', f)", []),
    ("x.foo('pytest.main')", []),
    ("import sys\nmonkeypatch.setitem(sys.modules, 'json', m)", [(2, rules.IMPORTS)]),
    ("import sys\nmonkeypatch.delitem(sys.modules, 'json')", [(2, rules.IMPORTS)]),
    ("monkeypatch.setitem(d, 'k', 1)", []),
    ("monkeypatch.setitem()", []),
    ("import sys\nx.get(sys.modules)", []),
    # getattr and its kin
    ("import os\ngetattr(os, name)", [(2, rules.DYNAMIC_ATTRIBUTE.format("os"))]),
    ("import json\ngetattr(json, name)", []),
    ("import os\nsetattr(os, '_exit', f)", [(2, rules.EXIT)]),
    ("import os\nhasattr(os, '_exit')", []),
    ("import os\nhasattr(os, name)", [(2, rules.DYNAMIC_ATTRIBUTE.format("os"))]),
    ("import pytest\ngetattr(pytest, 'x')", []),
    ("import pytest\nsetattr(pytest, 'x', 1)", [(2, rules.PATCH)]),
    ("import pytest\ndelattr(pytest, 'x')", [(2, rules.PATCH)]),
    ("import json\nsetattr(json, 'x', 1)", []),
    ("setattr(C, '__ne__', lambda self, other: False)", [(1, rules.ALWAYS_EQUAL)]),
    ("setattr(C, '__eq__', lambda self, other: True)", [(1, rules.ALWAYS_EQUAL)]),
    ("setattr(C, '__eq__', lambda self, other: False)", []),
    ("setattr(C, 'f', lambda: False)", []),
    ("setattr(C, '__eq__', eq)", []),
    ("getattr(C, '__eq__', lambda self, other: True)", []),
    # lookups by computed names
    ("import sys\nsys.modules[name]", [(2, rules.DYNAMIC_ATTRIBUTE.format("sys.modules"))]),
    ("import sys\nsys.modules[f()]", [(2, rules.DYNAMIC_ATTRIBUTE.format("sys.modules"))]),
    ("import sys\nsys.modules[__name__]", []),
    ("import sys\nsys.modules['json']", []),
    ("import os\nvars(os)[name]", [(2, rules.DYNAMIC_ATTRIBUTE.format("os"))]),
    ("import json\nvars(json)[name]", []),
    ("import os\nos[name]", []),
    ("table[name]", []),
    # signals to the own process
    ("import os\nos.kill(0, 9)", [(2, rules.SIGNAL)]),
    ("import os\nos.kill(-1, 9)", [(2, rules.SIGNAL)]),
    ("import os\nos.kill(os.getpid(), 9)", [(2, rules.SIGNAL)]),
    ("import os\nos.kill(1, 9)", []),
    ("import os\nos.kill(-2, 9)", []),
    ("import os\nos.kill(pid, 9)", []),
    ("import os\nos.kill()", []),
    # raw file descriptors
    ("open(1)", [(1, rules.RAW_FD)]),
    ("open(f.fileno())", [(1, rules.RAW_FD)]),
    ("open(True)", []),
    ("open(path)", []),
    ("open(f.name())", []),
    ("open(fileno())", []),
    ("open()", []),
    # code that checks whether it runs under the tests
    ("import sys\nif 'unittest' in sys.modules: pass", [(2, rules.UNDER_TEST)]),
    ("import sys\nif 'py.test' in sys.modules: pass", [(2, rules.UNDER_TEST)]),
    ("import sys\nif 'PyTest' in sys.modules: pass", [(2, rules.UNDER_TEST)]),
    ("import sys\nif 'unittests' in sys.modules: pass", []),
    ("import sys\nif 'json' in sys.modules: pass", []),
    ("if 'pytest' in modules: pass", []),
    # equality methods that always answer the same
    ("def __ne__(self, other): pass", [(1, rules.ALWAYS_EQUAL)]),
    ("def __ne__(self, other):\n    'doc'", [(1, rules.ALWAYS_EQUAL)]),
    ("def __eq__(self, other): pass", []),
    ("def __eq__(self, other):\n    return True", [(1, rules.ALWAYS_EQUAL)]),
    ("def __eq__(self, other):\n    'doc'\n    return True", [(1, rules.ALWAYS_EQUAL)]),
    ("def __ne__(self, other):\n    return", [(1, rules.ALWAYS_EQUAL)]),
    ("def __eq__(self, other): x = 1", []),
    ("def __eq__(self, other):\n    return True\n    x = 1", []),
    ("def __eq__(self, other):\n    x = 1\n    return True", []),
    ("def __eq__(self, other):\n    return other", []),
    ("def equal(self, other):\n    return True", []),
]


@pytest.mark.parametrize(("source", "expected"), HIT_CASES)
def test_a_source_has_exactly_its_hits(source: str, expected: list[tuple[int, str]]) -> None:
    assert hits(source) == expected


def test_strings_built_on_one_line_are_each_reported_once() -> None:
    assert set(analysed("x = 'a' + 'b'; y = 'c' + 'd'; z = 'a' + 'b'").strings) == {
        PyString(1, "ab", ("a", "b")),
        PyString(1, "cd", ("c", "d")),
    }


def test_a_literal_spanning_lines_is_no_built_string() -> None:
    assert analysed("x = '''ab\ncd'''\ny = 1").strings == ()


def test_a_built_string_spanning_lines_is_reported_on_its_first_added_line() -> None:
    assert analysed("x = (\n    'ab'\n    'cd' + 'ef'\n)").strings == (
        PyString(2, "abcdef", ("abcd", "ef")),
    )


def test_added_fragments_keep_the_strings_and_hits_of_every_fragment() -> None:
    lines = ["x = 'a' + 'b'", "import os", "y = 'c' + 'd'", "os._exit(1)"]
    found = analyse_added(lines, [1, 2, 4, 5])
    assert found.strings == (PyString(1, "ab", ("a", "b")), PyString(4, "cd", ("c", "d")))
    assert found.hits == (PyHit(5, rules.EXIT),)
    assert found.error is None


def test_a_lone_carriage_return_counts_lines_as_git_does() -> None:
    source = "a = 1\rimport os\nos._exit(0)\n"  # Python: 3 lines, git: 2
    assert analyse(source, [1]).hits == ()
    assert analyse(source, [2]).hits == (PyHit(2, rules.EXIT),)


def test_a_hook_is_reported_on_its_added_decorator() -> None:
    assert analyse("@hookimpl\ndef pytest_configure(config):\n    pass\n", [1]).hits == (
        PyHit(1, rules.PLUGIN),
    )


def test_only_expressions_on_added_lines_are_checked() -> None:
    assert analyse("x = [os._exit,\n     1]\n", [1]).hits == (PyHit(1, rules.EXIT),)
    assert analyse("x = [os._exit,\n     1]\n", [2]).hits == ()
    source = "import sys\nx = ('pytest',\n     'x' in sys.modules)\n"
    assert analyse(source, [3]).hits == ()  # `pytest` is named on a line not added
    assert analyse(source, [2, 3]).hits == (PyHit(2, rules.UNDER_TEST),)


def test_an_odd_source_encoding_is_a_hit_on_its_added_line() -> None:
    source = "# -*- coding: utf-7 -*-\nx = 1\n"
    assert analyse(source, [1, 2]).hits == (PyHit(1, rules.ENCODING.format("utf-7")),)
    assert analyse(source, [2]).hits == ()


def test_strings_and_hits_after_a_lone_carriage_return_get_git_line_numbers() -> None:
    source = "a = 1\rx = 'a' + 'b'\nimport os\nos._exit(1)\n"
    assert analyse(source, [1, 3]) == PyAnalysis(
        (PyHit(3, rules.EXIT),), (PyString(1, "ab", ("a", "b")),)
    )


def test_an_added_decorator_that_checks_for_pytest_is_reported_on_its_line() -> None:
    source = "import sys\n\n@mark('pytest' in sys.modules)\ndef f():\n    pass\n"
    assert analyse(source, [3]).hits == (PyHit(3, rules.UNDER_TEST),)  # the def line unchanged
    assert analyse(source, [3, 4]).hits == (PyHit(3, rules.UNDER_TEST),)
    assert analyse(source, [4]).hits == ()  # the check itself is on a line not added
