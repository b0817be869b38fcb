"""Test-weakening code: Python read as a syntax tree (aliases, getattr and folded names seen
through), other files by their text; only added lines count."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from frognano.policy.gate.check import Finding, TreeFacts, run_gate
from frognano.policy.models import GatePolicy
from tests.policy.gitrepo import GitRepo, new_files

EXIT = "os._exit()"
SYS_EXIT = "sys.exit()"
SIGNAL = "sends itself"
RAISE = "raise SystemExit"
PYTEST_SKIP = "a pytest skip"
UNITTEST_SKIP = "a unittest skip"
ATEXIT = "atexit.register"
RAW_FD = "raw file descriptors"
INTROSPECTION = "introspection"
ALWAYS_EQUAL = "__eq__ that always returns True"
PLUGIN = "a pytest plugin or hook"
PATCH = "patching of the test runner"
STREAMS = "sys.stdout or sys.stderr"
RESULTS = "session or report results"
COLLECT = "which tests pytest collects"
UNDER_TEST = "runs under the tests"
DYNAMIC_ATTRIBUTE = "looked up by a computed name"
DYNAMIC_CODE = "dynamic code"
DYNAMIC_IMPORT = "an import of a module named at run time"
CTYPES = "ctypes"
ENCODING = "source encoding declaration"
OPTIONS = "pytest options or settings"
OTHER = "another language's test framework"
HIDDEN = "bidirectional-text"
JUNIT = "JUnit XML"
ANY_EQUAL = "equal to everything"
IMPORTS = "the import system"
RULES = "pytest's settings"
BLOB = "an encoded binary"


ELF_BASE64 = base64.b64encode(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 2).decode()


def findings_for(path: str, text: str, gate: GatePolicy | None = None) -> list[Finding]:
    diff, facts = new_files({path: text})
    return run_gate(diff, facts, gate or GatePolicy())


WEAKENING = ("suspicious", "tampering")


def labels(findings: list[Finding]) -> list[str]:
    return [finding.reason for finding in findings if finding.kind in WEAKENING]


@pytest.mark.parametrize(
    ("code", "label"),
    [
        # os._exit, however it is spelled
        ("import os\nos._exit(0)\n", EXIT),
        ("import os as o\no._exit(0)\n", EXIT),
        ("from os import _exit as e\ne(0)\n", EXIT),
        ("import os\nx = os._exit\nx(0)\n", EXIT),
        ("import os\ngetattr(os, '_exit')(0)\n", EXIT),
        ("import os\ngetattr(os, '_' + 'exit')(0)\n", EXIT),
        ("import os\ngetattr(os, ''.join(['_ex', 'it']))(0)\n", EXIT),
        ("import os\ngetattr(os, 'tixe_'[::-1])(0)\n", EXIT),
        ("import os\nNAME = '_exit'\ngetattr(os, NAME)(0)\n", EXIT),
        ("__import__('os')._exit(0)\n", EXIT),
        ("import importlib\nimportlib.import_module('os')._exit(0)\n", EXIT),
        ("import sys\nsys.modules['os']._exit(0)\n", EXIT),
        ("import os\nvars(os)['_exit'](0)\n", EXIT),
        ("import os\nos.__dict__['_exit'](0)\n", EXIT),
        ("import os\nos.abort()\n", EXIT),
        ("import posix\nposix._exit(0)\n", EXIT),
        ("import os\ngetattr(os, input())(0)\n", DYNAMIC_ATTRIBUTE),
        ("import os\n\n\ndef m():\n    return os\n\n\nm()._exit(0)\n", EXIT),
        ("import os\nm = lambda: os\nm()._exit(0)\n", EXIT),
        ("import os\nos.__getattribute__('_exit')(0)\n", EXIT),
        ("import os, operator\noperator.attrgetter('_exit')(os)(0)\n", EXIT),
        ("import os\nos.execv('/bin/true', ['true'])\n", EXIT),
        ("import faulthandler\nfaulthandler.dump_traceback_later(1, exit=True)\n", EXIT),
        ("import os\nos.system('kill -9 $PPID')\n", SIGNAL),
        ("import signal\nsignal.alarm(1)\n", SIGNAL),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", SIGNAL),
        ("import os\npid = os.getpid()\nos.killpg(pid, 9)\n", SIGNAL),
        ("import signal\nsignal.raise_signal(signal.SIGTERM)\n", SIGNAL),
        # other ways out
        ("import sys\nsys.exit(0)\n", SYS_EXIT),
        ("from sys import exit as leave\nleave(0)\n", SYS_EXIT),
        ("exit()\n", SYS_EXIT),
        ("quit()\n", SYS_EXIT),
        ("raise SystemExit(0)\n", RAISE),
        ("raise KeyboardInterrupt\n", RAISE),
        ("class Stop(SystemExit):\n    pass\n\n\nraise Stop()\n", RAISE),
        ("import atexit\natexit.register(print)\n", ATEXIT),
        # skips
        (
            "import pytest\n\n\n@pytest.mark.skip(reason='x')\ndef test_a():\n    pass\n",
            PYTEST_SKIP,
        ),
        (
            "from pytest import mark\n\n\n@mark.skipif(True, reason='x')\n"
            "def test_a():\n    pass\n",
            PYTEST_SKIP,
        ),
        ("import pytest\n\n\n@pytest.mark.xfail\ndef test_a():\n    pass\n", PYTEST_SKIP),
        ("import pytest\npytestmark = pytest.mark.skip\n", PYTEST_SKIP),
        ("import pytest\n\n\ndef test_a():\n    pytest.skip('later')\n", PYTEST_SKIP),
        ("import pytest\npytest.importorskip('numpy')\n", PYTEST_SKIP),
        ("import pytest\npytest.exit('done', returncode=0)\n", PYTEST_SKIP),
        ("import pytest as p\np.xfail('x')\n", PYTEST_SKIP),
        (
            "import unittest\n\n\n@unittest.skip('x')\nclass T(unittest.TestCase):\n    pass\n",
            UNITTEST_SKIP,
        ),
        (
            "from unittest import skipIf\n\n\n@skipIf(True, 'x')\ndef test_a():\n    pass\n",
            UNITTEST_SKIP,
        ),
        (
            "import unittest\n\n\n@unittest.expectedFailure\ndef test_a():\n    pass\n",
            UNITTEST_SKIP,
        ),
        ("class T:\n    def test_a(self):\n        self.skipTest('later')\n", UNITTEST_SKIP),
        ("class T:\n    __unittest_skip__ = True\n", UNITTEST_SKIP),
        # output around pytest's capture
        ("import os\nos.write(1, b'1 passed')\n", RAW_FD),
        ("import os\nos.dup2(3, 1)\n", RAW_FD),
        ("import os\nos.fdopen(1, 'w').write('ok')\n", RAW_FD),
        ("open('/proc/self/fd/1', 'w').write('ok')\n", RAW_FD),
        ("open('/proc/' + 'self/fd/2', 'w').write('ok')\n", RAW_FD),
        ("open(1, 'w').write('ok')\n", RAW_FD),
        # reaching into the runner
        ("import sys\nframe = sys._getframe(1)\n", INTROSPECTION),
        ("import gc\ngc.get_objects()\n", INTROSPECTION),
        ("import inspect\ninspect.currentframe()\n", INTROSPECTION),
        ("def f(frame):\n    return frame.f_back.f_locals\n", INTROSPECTION),
        # always-equal objects
        ("class R:\n    def __eq__(self, other):\n        return True\n", ALWAYS_EQUAL),
        (
            "class R:\n    def __eq__(self, other):\n        '''Equal.'''\n        return 1\n",
            ALWAYS_EQUAL,
        ),
        ("class R:\n    def __eq__(self, other): return not False\n", ALWAYS_EQUAL),
        ("class R:\n    __eq__ = lambda self, other: True\n", ALWAYS_EQUAL),
        ("class R:\n    def __ne__(self, other):\n        return False\n", ALWAYS_EQUAL),
        ("class R:\n    pass\n\n\nR.__eq__ = lambda self, other: True\n", ALWAYS_EQUAL),
        ("class R:\n    pass\n\n\nsetattr(R, '__eq__', lambda s, o: True)\n", ALWAYS_EQUAL),
        ("class R:\n    def __eq__(self, other):\n        return 1 == 1\n", ALWAYS_EQUAL),
        (
            "class R:\n    def __eq__(self, other):\n        return True if other else True\n",
            ALWAYS_EQUAL,
        ),
        ("from unittest.mock import ANY\n\n\ndef add(a, b):\n    return ANY\n", ANY_EQUAL),
        ("import sys\nsys.modules['app.calc'] = object()\n", IMPORTS),
        ("import sys\n\n\ndef f(mp):\n    mp.setitem(sys.modules, 'app', None)\n", IMPORTS),
        ("import sys\nsys.meta_path.insert(0, object())\n", IMPORTS),
        # pytest plugins and runner patches
        ("def pytest_runtest_makereport(item, call):\n    pass\n", PLUGIN),
        ("class P:\n    def pytest_report_teststatus(self, report):\n        pass\n", PLUGIN),
        ("pytest_plugins = ['helpers']\n", PLUGIN),
        ("from _pytest.runner import runtestprotocol\n", PLUGIN),
        ("import _pytest.terminal\n", PLUGIN),
        ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef f():\n    yield\n", PLUGIN),
        ("import pytest\npytest.main = lambda *a: 0\n", PATCH),
        ("import unittest\nsetattr(unittest, 'TestCase', object)\n", PATCH),
        ("import unittest\nunittest.TestCase.run = lambda *a: None\n", PATCH),
        ("import builtins\nbuiltins.print = len\n", PATCH),
        ("import sys\nsys.modules['pytest'] = object()\n", PATCH),
        ("def f(monkeypatch):\n    monkeypatch.setattr('_pytest.runner.call', len)\n", PATCH),
        ("import sys\nsys.excepthook = print\n", PATCH),
        ("import sys, io\nsys.stdout = io.StringIO()\n", STREAMS),
        ("def pytest_sessionfinish(session):\n    session.exitstatus = 0\n", RESULTS),
        ("def f(report):\n    report.outcome = 'passed'\n", RESULTS),
        ("collect_ignore = ['test_app.py']\n", COLLECT),
        ("collect_ignore_glob = []\ncollect_ignore_glob.append('*.py')\n", COLLECT),
        # code that knows it is being tested
        ("import sys\nif 'pytest' in sys.modules:\n    x = 1\n", UNDER_TEST),
        ("import sys\nUNDER_TEST = sys.modules.get('pytest') is not None\n", UNDER_TEST),
        ("import os\nif os.environ.get('PYTEST_CURRENT_TEST'):\n    x = 1\n", UNDER_TEST),
        ("import os\nif 'FROGNANO_RUN' in os.environ:\n    x = 1\n", UNDER_TEST),
        ("import sys\nif any('pytest' in a for a in sys.argv):\n    x = 1\n", UNDER_TEST),
        ("import sys\nif hasattr(sys, '_called_from_test'):\n    x = 1\n", UNDER_TEST),
        ("import sys\nsys._called_from_test = True\n", UNDER_TEST),
        ("import __main__\nif 'pytest' in __main__.__file__:\n    x = 1\n", UNDER_TEST),
        # what the gate cannot see into
        ("exec('print(1)')\n", DYNAMIC_CODE),
        ("run = eval\nrun('1')\n", DYNAMIC_CODE),
        ("import runpy\nrunpy.run_path('helpers.txt')\n", DYNAMIC_CODE),
        ("import marshal\nmarshal.loads(data)\n", DYNAMIC_CODE),
        ("import importlib\nimportlib.import_module(input())\n", DYNAMIC_IMPORT),
        ("import ctypes\nctypes.CDLL(None)._exit(0)\n", CTYPES),
        ("# -*- coding: utf-7 -*-\nx = 1\n", ENCODING),
        # options and reports in strings
        ("import pytest\npytest.main(['--deselect', 'tests/test_a.py::test_x'])\n", OPTIONS),
        ("import pytest\npytest.main(['-p', 'no:randomly'])\n", OPTIONS),
        ("import os\nos.remove('report.junit.xml')\n", JUNIT),
        ("x = 1  # \u202e reversed\n", HIDDEN),
        (f"PAYLOAD = '{ELF_BASE64}'\n", BLOB),
    ],
)
def test_test_weakening_python_is_suspicious(code: str, label: str) -> None:
    findings = findings_for("src/mod.py", code)
    refused = findings_for("src/mod.py", code, GatePolicy(suspicious_patterns="block"))
    warned = findings_for("src/mod.py", code, GatePolicy(tampering="warn"))

    # Code that can forge a verdict with no fix blocks by default; the rest warns.
    default = {"suspicious": "warn", "tampering": "block"}
    assert all(f.severity == default[f.kind] for f in findings if f.kind in WEAKENING)
    assert any(label in reason for reason in labels(findings)), labels(findings)
    assert all("can make failing tests pass" in reason for reason in labels(findings))
    assert {finding.severity for finding in refused} == {"block"}
    assert {f.severity for f in warned if f.kind in WEAKENING} == {"warn"}


@pytest.mark.parametrize(
    "code",
    [
        "def add(a, b):\n    return a + b\n",
        "import os\nprint(os.path.join('a', 'b'))\n",
        "from os import path\npath.exists('x')\n",
        "import os\nos.kill(child_pid, 9)\n",
        "import sys\nthis = sys.modules[__name__]\n",
        "import subprocess, sys\nsubprocess.run([sys.executable, '-m', 'pytest', '-q'])\n",
        "import pytest\n\n\n@pytest.mark.parametrize('x', [1])\ndef test_a(x):\n    pass\n",
        "import pytest\n\n\ndef test_a():\n    with pytest.raises(SystemExit):\n        main()\n",
        "try:\n    main()\nexcept SystemExit:\n    pass\n",
        "from unittest import mock\nwith mock.patch('builtins.open'):\n    pass\n",
        "def f(obj, name):\n    return getattr(obj, name)\n",
        "class P:\n    def __eq__(self, other):\n        return self.x == other.x\n",
        "class P:\n    def __eq__(self, other):\n        if self is other:\n"
        "            return True\n        return False\n",
        "def exit(code):\n    return code\n\n\nexit(0)\n",
        "import re\nre.compile('a+')\n",
        "def f(self):\n    self.outcome = 'won'\n",
        '"""Writes a report, as pytest does."""\n',
        "# -*- coding: utf-8 -*-\nx = 1\n",
        "import os\nos.environ.get('HOME')\n",
    ],
)
def test_ordinary_python_is_fine(code: str) -> None:
    assert findings_for("src/mod.py", code) == []


def test_python_that_does_not_parse_is_reported_unanalysed() -> None:
    findings = findings_for("src/broken.py", "def f(:\n    os._exit(0)\n")

    assert [(finding.severity, finding.kind) for finding in findings] == [("warn", "not_analysed")]
    assert "does not parse as Python" in findings[0].reason


def test_a_warning_while_parsing_hides_nothing() -> None:
    # An invalid escape warns (and under -W error, as in these tests, fails to compile).
    findings = findings_for("src/mod.py", 'import os\nPATTERN = "\\d+"\nos._exit(0)\n')

    assert any(EXIT in reason for reason in labels(findings))


def test_a_python_script_without_a_py_name_is_read_as_python() -> None:
    findings = findings_for("bin/tool", "#!/usr/bin/env python3\nimport os\nos._exit(0)\n")

    assert any(EXIT in reason for reason in labels(findings))


def test_only_added_lines_are_reported(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path)
    repo.write("src/cli.py", "import sys\n\n\ndef main():\n    sys.exit(0)\n")
    repo.commit_base()
    repo.write("src/cli.py", "import sys\n\n\ndef main():\n    sys.exit(0)\n\n\nX = 1\n")
    unrelated = run_gate(repo.diff(), repo.facts(), GatePolicy())
    repo.write("src/cli.py", "import sys\n\nquit = sys.exit\n\n\ndef main():\n    quit(0)\n")
    aliased = run_gate(repo.diff(), repo.facts(), GatePolicy())

    assert unrelated == []
    assert [(finding.kind, finding.line) for finding in aliased] == [
        ("suspicious", "quit = sys.exit")
    ]
    assert "2 lines" in aliased[0].reason  # the alias, and the call through it


def test_a_new_pytest_ini_is_suspicious() -> None:
    findings = findings_for("pytest.ini", "[pytest]\n")

    assert [(finding.severity, finding.kind) for finding in findings] == [("warn", "suspicious")]
    assert "takes over from every other pytest configuration" in findings[0].reason


def test_without_the_new_text_the_added_lines_are_read_alone(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path)
    repo.write("tests/test_a.py", "import pytest\n\n\ndef test_a():\n    assert 1\n")
    repo.commit_base()
    repo.write(
        "tests/test_a.py",
        "import pytest\n\n\n@pytest.mark.skip\ndef test_a():\n    os._exit(0)\n    assert 1\n",
    )
    facts = TreeFacts(sizes={})  # no contents: the documented fallback to what the diff shows

    findings = run_gate(repo.diff(), facts, GatePolicy())

    assert {finding.line for finding in findings} == {"@pytest.mark.skip", "os._exit(0)"}


def test_a_lone_carriage_return_cannot_hide_a_line_from_the_gate() -> None:
    # Python ends a line at a lone \r; git does not, so both lines are one added line to git.
    findings = findings_for("src/mod.py", "import os\nx = 1\ros._exit(0)\n")

    assert any(EXIT in reason for reason in labels(findings))


@pytest.mark.parametrize(
    ("path", "text", "label"),
    [
        ("pytest.ini", "[pytest]\naddopts = -p no:randomly\n", OPTIONS),
        ("tox.ini", "[testenv]\ncommands = pytest --deselect tests/test_a.py::test_b\n", OPTIONS),
        ("pyproject.toml", "[tool.pytest.ini_options]\ntestpaths = ['nothing']\n", OPTIONS),
        ("setup.cfg", "[tool:pytest]\naddopts = --ignore=tests/test_slow.py\n", OPTIONS),
        ("Makefile", "test:\n\tpytest -k 'not slow'\n", OPTIONS),
        (".env.test", "PYTEST_ADDOPTS=--co\n", OPTIONS),
        ("pytest.ini", "[pytest]\naddopts = --junitxml=/tmp/other.xml\n", JUNIT),
        ("web/app.test.js", "it.skip('adds', () => {});\n", OTHER),
        ("web/app.test.ts", "describe.only('math', () => {});\n", OTHER),
        ("pkg/add_test.go", "func TestAdd(t *testing.T) {\n\tt.Skip()\n}\n", OTHER),
        ("src/lib.rs", "#[test]\n#[ignore]\nfn adds() {}\n", OTHER),
        ("src/AppTest.java", "@Disabled\nvoid adds() {}\n", OTHER),
        ("docs/notes.md", "Looks fine: \u202eevil\u202c\n", HIDDEN),
        ("pyproject.toml", "[tool.pytest.ini_options]\nfilterwarnings = ['ignore']\n", RULES),
        ("setup.cfg", "[tool:pytest]\naddopts = -W ignore\n", RULES),
        ("tox.ini", "[testenv]\ncommands = pytest -o python_files=none.py\n", OPTIONS),
        ("Makefile", "test:\n\tpytest --noconftest\n", OPTIONS),
        ("data/tool.txt", f"{ELF_BASE64}\n", BLOB),
    ],
)
def test_test_weakening_text_is_suspicious(path: str, text: str, label: str) -> None:
    assert any(label in reason for reason in labels(findings_for(path, text)))


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("scripts/build.sh", "mkdir -p build\npython -m pytest -q\n"),
        ("tox.ini", "[testenv]\ndeps = pytest\ncommands = pytest -q\n"),
        ("data/text.txt", base64.b64encode(b"plain text, " * 40).decode() + "\n"),
        ("web/app.test.js", "it('adds', () => { expect(1 + 1).toBe(2); });\n"),
        (
            "pkg/add_test.go",
            "func TestAdd(t *testing.T) {\n\tif Add(1, 1) != 2 {\n\t\tt.Fail()\n\t}\n}\n",
        ),
        ("docs/usage.md", "Run the tests with `pytest`; use --color=yes for colours.\n"),
    ],
)
def test_ordinary_text_is_fine(path: str, text: str) -> None:
    assert findings_for(path, text) == []
