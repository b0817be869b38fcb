"""Harness files of a patch: whole harness files (rule 1), test modules as plugins (rule 4), and
what every hit looks like (one reason, sorted, deletions and additions alike)."""

from __future__ import annotations

import pytest

from frognano.policy.gate.harness.files import Change, HarnessHit, HarnessRule, harness_changes
from frognano.policy.gate.harness.plugins import plugin_name

PYTEST = "python -m pytest -q"


def judge(
    changes: list[Change], command: str = PYTEST, base: frozenset[str] | None = None
) -> list[HarnessHit]:
    base_paths = (
        base if base is not None else frozenset(p for p, old, _ in changes if old is not None)
    )
    return harness_changes(changes, command=command, base_paths=base_paths)


def rule_of(change: Change, command: str = PYTEST) -> HarnessRule | None:
    hits = judge([change], command)
    assert len(hits) <= 1
    return hits[0].rule if hits else None


KINDS: dict[str, tuple[bytes | None, bytes | None]] = {
    "modified": (b"old = 1\n", b"new = 1\n"),
    "added": (None, b"new = 1\n"),
    "deleted": (b"old = 1\n", None),
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("conftest.py", "harness_file"),
        ("tests/unit/conftest.py", "harness_file"),
        ("pytest.ini", "harness_file"),
        ("sub/.pytest.ini", "harness_file"),
        ("pytest.toml", "harness_file"),
        ("pkg/.pytest.toml", "harness_file"),
        ("tox.ini", "harness_file"),
        ("services/api/tox.ini", "harness_file"),
        ("noxfile.py", "harness_file"),
        ("sitecustomize.py", "harness_file"),
        ("lib/usercustomize.py", "harness_file"),
        ("evil.pth", "harness_file"),
        ("deep/er/.pth", "harness_file"),
        ("frog_plugin-1.0.dist-info/entry_points.txt", "harness_file"),
        ("frog_plugin-1.0.dist-info/METADATA", "harness_file"),
        ("vendor/frog.egg-info/entry_points.txt", "harness_file"),
        ("frog.egg-info", "harness_file"),
        ("tests/__init__.py", "harness_file"),
        ("tests/unit/deep/__init__.py", "harness_file"),
        ("src/pkg/tests/__init__.py", "harness_file"),
        ("test/__init__.py", "harness_file"),
        ("testing/__init__.py", "harness_file"),
        # FrogNano's collector's name: it would be imported in place of FrogNano's.
        ("frognano_collector.py", "harness_file"),
        ("src/frognano_collector.py", "harness_file"),
        ("lib/frognano_collector.cpython-311-x86_64-linux-gnu.so", "harness_file"),
        ("frognano_collector/__init__.py", "harness_file"),
        ("src/frognano_collector/sub.py", "harness_file"),
        ("my_frognano_collector.py", None),
        # Not harness files by these rules.
        ("src/pkg/__init__.py", None),
        ("tests_old/__init__.py", None),
        ("mytests/__init__.py", None),
        ("Tests/__init__.py", None),  # case-sensitive, like every policy glob
        ("src/testing_utils/__init__.py", None),
        ("tests/data/x.json", None),  # a test data file: protected_paths' business
        ("tests/test_app.py", None),  # a test file without plugins
        ("my_conftest.py", None),
        ("conftest.py.orig", None),
        ("noxfile.py.bak", None),
        ("docs/pytest.ini.txt", None),
        ("pth", None),
        ("setup.py", None),
        ("README.md", None),
        ("dist-info/entry_points.txt", None),
    ],
)
def test_whole_harness_files(kind: str, path: str, expected: HarnessRule | None) -> None:
    assert rule_of((path, *KINDS[kind])) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("caf\udce9/conftest.py", "harness_file"),
        ("tests/\udcff\udcfe/__init__.py", "harness_file"),
        ("tests/test_\udce9.py", "test_plugin"),
        ("src/\udcff.py", None),
        ("tests/data/\udcff.json", None),
    ],
)
def test_paths_that_are_not_utf8(path: str, expected: HarnessRule | None) -> None:
    hits = judge([(path, b"", b"pytest_plugins = ['x']\n")])
    assert [hit.rule for hit in hits] == ([expected] if expected else [])
    assert [hit.path for hit in hits] == ([path] if expected else [])
    for hit in hits:
        hit.reason.encode("utf-8")  # a reason is always printable text


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("pytest_plugins = ['tests.helpers']\n", "pytest_plugins"),
        ("pytest_plugins: list[str] = []\n", "pytest_plugins"),
        ("pytest_plugins = []\npytest_plugins += ['x']\n", "pytest_plugins"),
        ("pytest_plugins = 'x'\ndef pytest_configure(c): pass\n", "pytest_plugins"),
        ("def pytest_configure(config):\n    pass\n", "pytest_configure"),
        ("async def pytest_runtest_setup(item):\n    pass\n", "pytest_runtest_setup"),
        (
            "import pytest\n\n@pytest.hookimpl(tryfirst=True)\n"
            "def pytest_collection_modifyitems(items):\n    items.clear()\n",
            "pytest_collection_modifyitems",
        ),
        ("def pytest_generate_tests(metafunc):\n    pass\n", "pytest_generate_tests"),
        ("import sys\nif sys.platform:\n    def pytest_configure(c): pass\n", "pytest_configure"),
        ("try:\n    import x\nexcept ImportError:\n    pytest_plugins = []\n", "pytest_plugins"),
        ("try:\n    pass\nfinally:\n    pytest_plugins = []\n", "pytest_plugins"),
        ("with open('f') as pytest_x:\n    pass\n", "pytest_x"),
        ("for pytest_x in []:\n    pass\n", "pytest_x"),
        ("while False:\n    pytest_plugins = []\n", "pytest_plugins"),
        ("match 1:\n    case pytest_y:\n        pass\n", "pytest_y"),
        ("match 1:\n    case 1:\n        pytest_plugins = []\n", "pytest_plugins"),
        ("try:\n    pass\nexcept Exception as pytest_e:\n    pass\n", "pytest_e"),
        ("(pytest_x := 1)\n", "pytest_x"),
        ("from helpers import pytest_configure\n", "pytest_configure"),
        ("from helpers import configure as pytest_configure\n", "pytest_configure"),
        ("from helpers import pytest_plugins\n", "pytest_plugins"),
        ("pytest_configure = make_hook()\n", "pytest_configure"),
        ("a = pytest_unconfigure = None\n", "pytest_unconfigure"),
        ("def setup():\n    global pytest_plugins\n    pytest_plugins = ['x']\n", "pytest_plugins"),
        ("# -*- coding: latin-1 -*-\npytest_plugins = ['caf\xe9']\n", "pytest_plugins"),
        # Fixtures, locals, methods and modules are no hooks.
        ("import pytest\n\n@pytest.fixture\ndef pytest_thing():\n    return 1\n", None),
        ("import pytest\n\n@pytest.fixture(scope='module')\ndef pytest_thing():\n    pass\n", None),
        ("from pytest import fixture\n\n@fixture\ndef pytest_thing():\n    pass\n", None),
        (
            "import pytest_asyncio\n\n@pytest_asyncio.fixture\nasync def pytest_x():\n    pass\n",
            None,
        ),
        ("import pytest\nimport pytest_asyncio\nimport pytest_mock as pm\n", None),
        ("from pytest_mock import MockerFixture\n", None),
        ("def test_a():\n    pytest_configure = 1\n    assert pytest_configure\n", None),
        ("class TestX:\n    def pytest_configure(self):\n        pass\n", None),
        ("class pytest_thing:\n    pass\n", None),
        ("import pytest\npytestmark = pytest.mark.slow\n", None),
        ("def helper_pytest_configure():\n    pass\n", None),
        ("x = [pytest_y for pytest_y in range(3)]\n", None),
        ("f = lambda pytest_x: pytest_x\n", None),
        ("def test_a():\n    assert 'pytest_configure'\n", None),
        ("def pytest_configure(:\n", None),  # a syntax error is no plugin
        ("pytest_plugins = ['x']\n\0", None),
    ],
)
def test_plugin_name(source: str, expected: str | None) -> None:
    encoding = "latin-1" if "latin-1" in source else "utf-8"
    assert plugin_name(source.encode(encoding)) == expected


def test_plugin_name_of_bytes_that_are_not_python_text() -> None:
    assert plugin_name(b"\xff\xfe pytest_plugins = []\n") is None


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_app.py", "test_plugin"),
        ("tests/helpers.py", "test_plugin"),
        ("src/pkg/testing/support.py", "test_plugin"),
        ("test_top.py", "test_plugin"),
        ("pkg/app_test.py", "test_plugin"),
        ("src/pkg/plugin.py", None),  # not a test module: a real plugin of the package
        ("tests/test_app.pyi", None),
        ("tests/data/hooks.txt", None),
        ("tests/conftest.py", "harness_file"),  # rule 1 first
    ],
)
def test_test_modules_with_plugins(path: str, expected: HarnessRule | None) -> None:
    source = b"import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    items.clear()\n"
    assert rule_of((path, b"", source)) == expected
    assert rule_of((path, None, source)) == expected


def test_a_test_module_with_only_fixtures_and_tests_is_not_harness() -> None:
    source = (
        b"import pytest\n\n@pytest.fixture\ndef app():\n    return 1\n\n"
        b"def test_app(app):\n    assert app\n"
    )
    assert judge([("tests/test_app.py", b"", source)]) == []


@pytest.mark.parametrize(
    ("base", "new", "expected"),
    [
        (b"def pytest_configure(c): pass\n", b"def test_a(): pass\n", "changes it"),
        (b"pytest_plugins = ['x']\n", None, "deletes it"),
        (b"def test_a(): pass\n", None, None),
        (b"def test_a(): pass\n", b"def test_a(): assert 1\n", None),
    ],
)
def test_a_patch_that_removes_a_plugin_from_a_test_module(
    base: bytes, new: bytes | None, expected: str | None
) -> None:
    hits = judge([("tests/test_app.py", base, new)])
    if expected is None:
        assert hits == []
    else:
        [hit] = hits
        assert hit.rule == "test_plugin"
        assert "before the patch" in hit.reason
        assert hit.reason.endswith(f"and the patch {expected}")


def test_reasons_of_whole_files_and_plugins() -> None:
    hits = judge(
        [
            ("tests/conftest.py", b"import pytest\n", None),
            ("tests/test_app.py", b"", b"def pytest_configure(config):\n    pass\n"),
            ("pkg-1.0.dist-info/entry_points.txt", None, b"[pytest11]\nx = x\n"),
        ]
    )
    assert hits == [
        HarnessHit(
            "pkg-1.0.dist-info/entry_points.txt",
            "pytest loads the plugins declared by the entry_points.txt of every distribution it "
            "finds on sys.path, and `python -m pytest` puts the repository on sys.path; this is "
            "such distribution metadata",
            "harness_file",
        ),
        HarnessHit(
            "tests/conftest.py",
            "pytest loads conftest.py files as plugins: their fixtures and hooks apply to every "
            "test beside and below them",
            "harness_file",
        ),
        HarnessHit(
            "tests/test_app.py",
            "this test module loads or defines pytest plugins (module-level `pytest_configure`), "
            "which change how tests are collected and run",
            "test_plugin",
        ),
    ]


def test_hits_are_sorted_by_path_with_one_reason_each_and_one_per_path() -> None:
    changes: list[Change] = [
        ("tox.ini", b"", b"[tox]\n"),
        ("tests/conftest.py", None, b"pytest_plugins = ['x']\n"),  # rules 1 and 4: rule 1
        ("src/app.py", b"a\n", b"b\n"),
        ("conftest.py", b"", None),
        ("tests/conftest.py", b"", None),  # listed twice: the first entry counts
        ("ghost/conftest.py", None, None),  # absent on both sides: nothing to judge
        ("Makefile", b"", b"test:\n\ttrue\n"),
    ]
    hits = judge(changes, command="make test")
    assert [(hit.path, hit.rule) for hit in hits] == [
        ("Makefile", "command_file"),
        ("conftest.py", "harness_file"),
        ("tests/conftest.py", "harness_file"),
        ("tox.ini", "harness_file"),
    ]
    assert judge(list(reversed(changes)), command="make test") == hits


def test_a_harness_file_the_command_also_names_keeps_its_rule_1_reason() -> None:
    [hit] = judge([("ci/tox.ini", b"", b"[tox]\n")], command="tox -c ci/tox.ini")
    assert hit.rule == "harness_file"


def test_no_changes_no_hits() -> None:
    assert harness_changes([], command=PYTEST, base_paths=frozenset()) == []


def test_hits_are_frozen() -> None:
    [hit] = judge([("conftest.py", b"", b"x = 1\n")])
    with pytest.raises(AttributeError):
        hit.reason = "other"  # type: ignore[misc]
