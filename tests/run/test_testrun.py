"""One test run in a real local sandbox: the collector, the log, and runs that must not count."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from frognano.run.collector import COLLECTOR_FILE, collector_files
from frognano.run.testrun import REMOVED_HINT, install_collector, keep_collector, run_tests
from frognano.sandbox.isolation import choose_mechanism
from frognano.sandbox.local import LocalSandbox
from frognano.sandbox.paths import TOOLS
from frognano.sandbox.tree import FileSpec
from tests.conftest import options_for

TOOL = collector_files()
TESTS = (
    "def test_ok():\n    assert True\n\n\n"
    "def test_bad():\n    assert 1 == 2\n\n\n"
    "def test_skip():\n    import pytest\n    pytest.skip('later')\n"
)
FAST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider"


async def _sandbox(tool_files: tuple[tuple[str, bytes], ...] = TOOL) -> LocalSandbox:
    return await LocalSandbox.create(options_for(choose_mechanism("auto"), tool_files=tool_files))


@pytest.fixture
async def box() -> AsyncIterator[LocalSandbox]:
    sandbox = await _sandbox()
    await sandbox.upload_files([FileSpec("tests/test_a.py", TESTS.encode())])
    try:
        yield sandbox
    finally:
        await sandbox.close()


async def test_outcomes_come_from_the_collector(box: LocalSandbox) -> None:
    run, note = await run_tests(box, "patched", FAST, 120)
    assert note == ""  # the read-only copy at /opt/frognano was used
    assert run.complete
    assert run.clean
    assert dict(run.outcomes) == {
        "tests/test_a.py::test_ok": "passed",
        "tests/test_a.py::test_bad": "failed",
        "tests/test_a.py::test_skip": "skipped",
    }
    assert run.crashes["tests/test_a.py::test_bad"].startswith("assert 1 == 2")
    assert run.exit_code == 1
    assert "1 failed, 1 passed, 1 skipped" in run.output  # pytest's own log, for people
    assert not run.passed


async def test_the_collector_copy_cannot_be_changed_from_inside(box: LocalSandbox) -> None:
    changed = await box.exec(f"echo x >> {TOOLS}/{COLLECTOR_FILE} || rm -f {TOOLS}/*; ls {TOOLS}")
    assert COLLECTOR_FILE in changed.output
    assert "Read-only file system" in changed.output


async def test_without_the_read_only_copy_it_is_copied_in_and_said(tmp_path: Path) -> None:
    sandbox = await _sandbox(tool_files=())
    try:
        await sandbox.upload_files([FileSpec("tests/test_a.py", b"def test_ok():\n    pass\n")])
        folder, note = await install_collector(sandbox)
        assert folder.startswith("/tmp/.frognano-collector-")
        assert "copied into the sandbox's writable /tmp" in note
        run, note = await run_tests(sandbox, "patched", FAST, 120)
        assert "copied" in note
        assert dict(run.outcomes) == {"tests/test_a.py::test_ok": "passed"}
    finally:
        await sandbox.close()


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("true", "reported nothing"),
        ("exit 0", "reported nothing"),
        ("python -I -m pytest -q", "reported nothing"),  # -I drops PYTHONPATH: no collector
        (f"{FAST}; exit 0", "though"),
        (f"{FAST} -x", "never reported"),
    ],
)
async def test_runs_that_do_not_count(box: LocalSandbox, command: str, problem: str) -> None:
    run, _ = await run_tests(box, "patched", command, 120)
    assert not run.complete
    assert any(problem in text for text in run.problems), run.problems
    assert "results cannot be trusted" in run.trouble()


async def test_a_timeout_is_a_result(box: LocalSandbox) -> None:
    await box.upload_files(
        [FileSpec("tests/test_slow.py", b"import time\n\n\ndef test_slow():\n    time.sleep(60)\n")]
    )
    run, _ = await run_tests(box, "patched", FAST, 3)
    assert run.timed_out
    assert not run.complete
    assert run.summary == "timed out after 3 s"


async def test_a_long_log_keeps_its_head_and_tail(box: LocalSandbox) -> None:
    noisy = b"def test_noisy():\n    print('x' * 100_000)\n    assert False\n"
    await box.upload_files([FileSpec("tests/test_noisy.py", noisy)])
    run, _ = await run_tests(box, "patched", FAST, 120)
    assert "bytes left out" in run.output
    assert run.output.rstrip().endswith("in " + run.output.rstrip().rsplit(" in ", 1)[1])
    assert len(run.output) < 30_000


async def test_a_selection_runs_only_the_named_files(box: LocalSandbox) -> None:
    await box.upload_files([FileSpec("tests/test_new.py", b"def test_new():\n    pass\n")])
    run, _ = await run_tests(box, "new_on_patched", FAST, 120, select=["tests/test_new.py"])
    assert run.clean
    assert dict(run.outcomes) == {"tests/test_new.py::test_new": "passed"}


async def test_no_bytecode_lands_in_the_tree(box: LocalSandbox) -> None:
    test = b"from mod import X\n\n\ndef test_x():\n    assert X == 1\n"
    await box.upload_files([FileSpec("mod.py", b"X = 1\n"), FileSpec("tests/test_mod.py", test)])
    run, _ = await run_tests(box, "patched", FAST + " tests/test_mod.py", 120)
    assert run.clean
    found = await box.exec("find /workspace -name '*.pyc' -o -name __pycache__")
    assert found.output.strip() == ""


async def test_bytecode_in_the_tree_is_never_run(box: LocalSandbox) -> None:
    """A .pyc CPython would trust (unchecked hash, or matching mtime and size) of other code
    than the source beside it: the tree's bytecode is removed before the tests start."""
    test = b"from mod import X\n\n\ndef test_x():\n    assert X == 1\n"
    await box.upload_files([FileSpec("mod.py", b"X = 2\n"), FileSpec("tests/test_mod.py", test)])
    planted = await box.exec(
        "python3 - <<'EOF'\nimport importlib.util, py_compile\n"
        "py_compile.compile('mod.py', cfile=importlib.util.cache_from_source('mod.py'),"
        " invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\nEOF\n"
        "printf 'X = 1\\n' > mod.py && ls __pycache__"
    )
    assert planted.ok, planted.output
    run, _ = await run_tests(box, "patched", FAST + " tests/test_mod.py", 120)
    assert dict(run.outcomes) == {"tests/test_mod.py::test_x": "passed"}


PLANTED = b"raise ImportError('a planted frognano_collector was imported')\n"
SRC_TEST = b"from mod import X\n\n\ndef test_src():\n    assert X == 1\n"


@pytest.mark.parametrize(
    "command",
    [
        "PYTHONPATH=src python -m pytest -q",
        "export PYTHONPATH=src; python -m pytest -q",
        "PYTHONPATH=/tmp/evil:src:$PYTHONPATH python -m pytest -q",
        "env PYTHONPATH=src python -m pytest -q",
        "PYTHONPATH=/tmp/evil:src python -m pytest -q",
        "PYTHONPATH= python -m pytest -q -o pythonpath=src",
        "PYTHONPATH=/tmp/evil PYTEST_PLUGINS=x_plug python -m pytest -q -o pythonpath=src",
        "bash -c 'PYTHONPATH=\"\" PYTHONPATH=src python -m pytest -q'",
    ],
)
async def test_a_command_that_sets_pythonpath_keeps_the_collector_first(
    box: LocalSandbox, command: str
) -> None:
    """Assignments to PYTHONPATH or PYTEST_PLUGINS neither drop the collector nor put a folder
    before it: /tmp/evil holds a module of its name that would fail the run if imported."""
    planted = await box.exec("mkdir -p /tmp/evil")
    assert planted.ok
    await box.write_file("/tmp/evil/frognano_collector.py", PLANTED)
    await box.write_file("/tmp/evil/x_plug.py", b"")
    await box.upload_files(
        [FileSpec("src/mod.py", b"X = 1\n"), FileSpec("tests/test_src.py", SRC_TEST)]
    )
    run, _ = await run_tests(box, "patched", command, 120)
    assert run.complete, (run.problems, run.output)
    assert run.outcomes["tests/test_src.py::test_src"] == "passed", run.output
    assert run.outcomes["tests/test_a.py::test_bad"] == "failed"


@pytest.mark.parametrize(
    ("command", "form"),
    [
        ("env -u PYTHONPATH python -m pytest -q", "env -u PYTHONPATH"),
        ("unset PYTEST_PLUGINS; python -m pytest -q", "unset PYTEST_PLUGINS"),
        ("env -i PATH=$PATH python -m pytest -q", "env -i"),
        ("python -E -m pytest -q", "python -E"),
        ("python -m pytest -q -p no:frognano_collector", "-p no:frognano_collector"),
    ],
)
async def test_what_removes_the_collector_does_not_count_and_is_named(
    box: LocalSandbox, command: str, form: str
) -> None:
    run, _ = await run_tests(box, "patched", command, 120)
    assert not run.complete
    assert f"{REMOVED_HINT} (here `{form}`)" in run.problems, run.problems


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("PYTHONPATH=src pytest", "PYTHONPATH=/c:src pytest"),
        ("PYTHONPATH= pytest", "PYTHONPATH=/c pytest"),
        ("PYTHONPATH='' pytest", "PYTHONPATH=/c pytest"),
        ("export PYTHONPATH=src;pytest", "export PYTHONPATH=/c:src;pytest"),
        ('env "PYTHONPATH=a b" pytest', 'env "PYTHONPATH=/c:a b" pytest'),
        ("PYTEST_PLUGINS=a,b pytest", "PYTEST_PLUGINS=frognano_collector,a,b pytest"),
        (
            "echo $PYTHONPATH=x; MYPYTHONPATH=src pytest",
            "echo $PYTHONPATH=x; MYPYTHONPATH=src pytest",
        ),
    ],
)
def test_assignments_keep_the_collector_first(command: str, expected: str) -> None:
    assert keep_collector(command, "/c") == expected
