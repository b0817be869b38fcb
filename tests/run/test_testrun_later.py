"""A run started before its selection is known: pytest starts, then waits to be told what."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from frognano.run.testrun import run_tests
from frognano.sandbox.isolation import choose_mechanism
from frognano.sandbox.local import LocalSandbox
from frognano.sandbox.tree import FileSpec
from tests.conftest import options_for
from tests.run.test_testrun import FAST, TOOL

CONFTEST = "open('/tmp/conftest-loaded', 'w').close()\n"
TESTS = (
    "def test_ok():\n    open('/tmp/test-ran', 'w').close()\n\n\n"
    "def test_other():\n    open('/tmp/test-ran', 'w').close()\n"
)
WAIT_FOR = "for _ in $(seq 600); do [ -e {0} ] && exit 0; sleep 0.1; done; exit 1"


async def _box(files: dict[str, str]) -> LocalSandbox:
    box = await LocalSandbox.create(options_for(choose_mechanism("auto"), tool_files=TOOL))
    await box.upload_files([FileSpec(path, text.encode()) for path, text in files.items()])
    return box


@pytest.fixture
async def box() -> AsyncIterator[LocalSandbox]:
    sandbox = await _box({"tests/conftest.py": CONFTEST, "tests/test_a.py": TESTS})
    try:
        yield sandbox
    finally:
        await sandbox.close()


async def test_pytest_loads_the_conftest_then_waits_and_runs_only_what_comes(
    box: LocalSandbox,
) -> None:
    later: asyncio.Future[Sequence[str]] = asyncio.get_running_loop().create_future()
    run = asyncio.ensure_future(run_tests(box, "hunk", FAST, 120, later=later))
    # The session has started (its conftest.py is imported) while the selection is unknown.
    loaded = await box.exec(WAIT_FOR.format("/tmp/conftest-loaded"), cwd="/", timeout=90)
    assert loaded.ok
    ran = await box.exec("test -e /tmp/test-ran", cwd="/", timeout=30)
    assert not ran.ok  # and no test has run: it waits
    assert not run.done()
    later.set_result(["tests/test_a.py::test_ok"])
    result, _ = await asyncio.wait_for(run, timeout=120)
    assert result.complete, result.problems
    assert dict(result.outcomes) == {"tests/test_a.py::test_ok": "passed"}


async def test_a_pytest_that_ends_before_it_is_told_is_not_waited_for() -> None:
    box = await _box({"tests/conftest.py": "raise SystemExit(3)\n", "tests/test_a.py": TESTS})
    try:
        never: asyncio.Future[Sequence[str]] = asyncio.get_running_loop().create_future()
        result, _ = await asyncio.wait_for(
            run_tests(box, "hunk", FAST, 120, later=never), timeout=120
        )
    finally:
        await box.close()
    assert not never.done()
    assert not result.passed
    assert result.outcomes == {}


async def test_a_run_cancelled_while_it_waits_leaves_nothing_running(box: LocalSandbox) -> None:
    later: asyncio.Future[Sequence[str]] = asyncio.get_running_loop().create_future()
    run = asyncio.ensure_future(run_tests(box, "hunk", FAST, 120, later=later))
    loaded = await box.exec(WAIT_FOR.format("/tmp/conftest-loaded"), cwd="/", timeout=90)
    assert loaded.ok
    run.cancel()  # verification did not hold
    with pytest.raises(asyncio.CancelledError):
        await run
    left = await box.exec("ps -eo args", cwd="/", timeout=30)
    assert left.ok
    assert not [line for line in left.output.splitlines() if "-m pytest" in line]


# The repository's conftest.py runs before the session waits, and can find the FIFO's path in
# /proc/self/environ: it says "go" itself, before FrogNano has written the selection.
EARLY_GO = """
import os
environ = open("/proc/self/environ", "rb").read().split(b"\\0")
for entry in environ:
    if entry.startswith(b"FROGNANO_COLLECTOR_WAIT="):
        # Read-write, kept open: no reader is needed and the line waits in the pipe.
        KEPT = os.open(entry.split(b"=", 1)[1], os.O_RDWR)
        os.write(KEPT, b"go\\n")
open("/tmp/conftest-loaded", "w").close()
"""


async def test_a_conftest_that_says_go_itself_gets_doubt_not_a_run() -> None:
    box = await _box({"tests/conftest.py": EARLY_GO, "tests/test_a.py": TESTS})
    try:
        later: asyncio.Future[Sequence[str]] = asyncio.get_running_loop().create_future()
        # FrogNano has not written the selection (verification is still running, say).
        result, _ = await asyncio.wait_for(
            run_tests(box, "hunk", FAST, 120, later=later), timeout=120
        )
    finally:
        await box.close()
    assert not later.done()
    # The session went on before the selection existed: it ran nothing and said why, which
    # makes the check "could not tell", never a result.
    assert not result.complete
    assert any("selection" in problem for problem in result.problems), result.problems
    assert result.outcomes == {}
