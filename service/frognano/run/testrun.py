"""One run of the test command in a sandbox, with outcomes from FrogNano's own collector."""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
import shlex
import time
from collections.abc import Awaitable, Sequence
from typing import Any

from frognano.errors import SandboxError
from frognano.run import results
from frognano.run.collector import (
    COLLECTOR_MODULE,
    DEFAULT_FD,
    collector_env,
    collector_files,
    new_token,
)
from frognano.run.outcomes import Role, TestRun
from frognano.sandbox.base import ExecResult, Sandbox
from frognano.sandbox.hostpaths import host_paths_of
from frognano.sandbox.paths import TMP, TOOLS, WORKSPACE

COLLECTOR_FD = DEFAULT_FD
"""The descriptor the collector writes to: the exec's own stdout, which the test output
never reaches (it goes to a log file), and which nothing can take back once written."""
RECORDS_LIMIT = 64 * 1024 * 1024
OUTPUT_KEPT = 12_000
"""Bytes of the log's head and of its tail kept for the report."""


async def install_collector(sandbox: Sandbox) -> tuple[str, str]:
    """The folder holding the collector, and a note when it is not FrogNano's read-only copy.

    A local sandbox binds it read-only at TOOLS; a Kubernetes pod has it there when its
    image carries this exact version. Otherwise it is written to a fresh folder in /tmp just
    before the tests start: only FrogNano and the base's setup have run in this sandbox then.
    """
    files = collector_files()
    names = " ".join(f"{TOOLS}/{name}" for name, _ in files)
    found = await sandbox.exec(f"sha256sum -- {names}", cwd="/", timeout=60)
    wanted = [hashlib.sha256(data).hexdigest() for _, data in files]
    if found.ok and [line.split()[0] for line in found.output.splitlines() if line] == wanted:
        return TOOLS, ""
    folder = f"{TMP}/.frognano-collector-{secrets.token_hex(8)}"
    for name, data in files:
        await sandbox.write_file(f"{folder}/{name}", data, mode=0o444)
    return folder, (
        "FrogNano's pytest collector is not in this sandbox's image at "
        f"{TOOLS}, so it was copied into the sandbox's writable /tmp before the tests started"
    )


def shell_script(
    command: str,
    *,
    collector_dir: str,
    token: str,
    log: str,
    select: str | None,
    cover: str | None = None,
    wait: str | None = None,
) -> str:
    """The shell text that runs `command` with the collector loaded and its output logged."""
    variables = collector_env(
        plugin_dir=collector_dir,
        token=token,
        fd=COLLECTOR_FD,
        select_file=select,
        cover_file=cover,
        wait_file=wait,
        pythonpath="$PYTHONPATH",
        pytest_plugins="$PYTEST_PLUGINS",
    )
    # No bytecode is written during the run, and none the tree held survives (purge_bytecode):
    # CPython would run a .pyc whose recorded source mtime (whole seconds) and size match a
    # changed source. The environment's own bytecode, read-only outside the tree, stays in use:
    # a PYTHONPYCACHEPREFIX would hide the tree's too, but recompiles pytest every run.
    variables["PYTHONDONTWRITEBYTECODE"] = "1"
    exports = " ".join(f'{name}="{value}"' for name, value in variables.items())
    return (
        f"exec {COLLECTOR_FD}>&1 >{shlex.quote(log)} 2>&1 </dev/null\n"
        # Empty values left by the expansions above would put '' on sys.path: drop them.
        f"export {exports}\n"
        "PYTHONPATH=${PYTHONPATH%:}; PYTEST_PLUGINS=${PYTEST_PLUGINS%,}\n"
        f"{keep_collector(command, collector_dir)}\n"
    )


_ASSIGNS = re.compile(r"""(^|[\s;&|(`"'])(PYTHONPATH|PYTEST_PLUGINS)=((?:""|'')?(?=$|[\s;&|)]))?""")
"""An assignment to either variable, where a command, `export` or `env` can make one; group 3
matches an empty value."""


def keep_collector(command: str, collector_dir: str) -> str:
    """`command` with FrogNano's entry put first in every value it assigns to PYTHONPATH or
    PYTEST_PLUGINS (`PYTHONPATH=src` becomes `PYTHONPATH=/opt/frognano:src`), so a command that
    sets them as repositories do still loads the collector, and nothing it names comes before
    it on the path. The collector takes its entries out again as it loads."""

    def first(match: re.Match[str]) -> str:
        ours, separator = {
            "PYTHONPATH": (collector_dir, ":"),
            "PYTEST_PLUGINS": (COLLECTOR_MODULE, ","),
        }[match[2]]
        lead = f"{match[1]}{match[2]}={ours}"
        return lead if match[3] is not None else lead + separator

    return _ASSIGNS.sub(first, command)


async def run_tests(
    sandbox: Sandbox,
    role: Role,
    command: str,
    timeout: float,
    *,
    select: Sequence[str] = (),
    cover: Sequence[str] = (),
    later: Awaitable[Sequence[str]] | None = None,
) -> tuple[TestRun, str]:
    """Run the test command in /workspace; returns the run and a note about the collector.
    Failures, crashes and timeouts are results; only a failing sandbox raises. What the
    run prints names the host folders the sandbox shows by their placeholders (hostpaths.py):
    it is published, and it is kept in the baseline cache that other workers read.

    With `later`, the selection is not known yet: pytest starts now (its plugins and the
    conftest.py files load) and waits before collecting until `later` gives the node ids to
    run; `timeout` then counts from that moment (the wait may take up to another `timeout`:
    the runs it waits for have the same limit)."""
    collector_dir, note = await install_collector(sandbox)
    await purge_bytecode(sandbox)
    token = new_token()
    log = f"{TMP}/.frognano-output-{token[:16]}.log"
    chosen = f"{TMP}/.frognano-select-{token[:16]}" if select or later is not None else None
    if select and chosen is not None:
        await sandbox.write_file(chosen, _listing(select), mode=0o444)
    measured = None
    if cover:
        measured = f"{TMP}/.frognano-cover-{token[:16]}"
        await sandbox.write_file(measured, _listing(cover), mode=0o444)
    signal = None
    if later is not None:
        signal = f"{TMP}/.frognano-go-{token[:16]}"
        made = await sandbox.exec(f"mkfifo -m 600 {signal}", cwd="/", timeout=60)
        if not made.ok:
            raise SandboxError(f"could not make the selection's signal: {made.output.strip()}")
    script = shell_script(command, collector_dir=collector_dir, token=token, log=log,
                         select=chosen, cover=measured, wait=signal)  # fmt: skip
    limit = timeout if later is None else 2 * timeout
    running = asyncio.ensure_future(
        sandbox.exec(script, cwd=WORKSPACE, timeout=limit, output_limit=RECORDS_LIMIT)
    )
    started = time.monotonic()
    try:
        if later is not None and chosen is not None and signal is not None:
            started = await _release(sandbox, running, later, chosen, signal)
        result = await running
    finally:
        running.cancel()  # a no-op once it is done; else (cancelled) the command is killed
    duration = min(result.duration, time.monotonic() - started)
    hide = host_paths_of(sandbox).hide
    output = hide(await _read_log(sandbox, log))
    if result.timed_out or duration > timeout:
        return TestRun(role, command, None, True, duration, output), note
    report = results.check_exit_code(
        results.parse_records(result.output.encode(), token), result.exit_code
    )
    problems = [hide(problem.message) for problem in report.problems]
    if not report.sessions and (form := removes_collector(command)) is not None:
        problems.append(f"{REMOVED_HINT} (here `{form}`)")
    if result.truncated:
        problems.append(f"the collector's records exceeded {RECORDS_LIMIT // 2**20} MiB")
    return (
        TestRun(
            role=role,
            command=command,
            exit_code=result.exit_code,
            timed_out=False,
            duration=duration,
            output=output,
            outcomes=dict(report.outcomes),
            crashes={test: hide(crash) for test, crash in report.crashes.items()},
            collection_errors={error.id: hide(error.message) for error in report.collect_errors},
            problems=tuple(dict.fromkeys(problems)),
            executed=report.executed if cover else None,
            coverage_error=(
                (hide(report.coverage_error) or "no pytest session reported its measurement")
                if cover and (report.coverage_error or report.executed is None)
                else ""
            ),
        ),
        note,
    )


def _listing(paths: Sequence[str]) -> bytes:
    return "".join(f"{path}\n" for path in paths).encode("utf-8", "surrogateescape")


async def _release(
    sandbox: Sandbox,
    running: asyncio.Future[ExecResult],
    later: Awaitable[Sequence[str]],
    chosen: str,
    signal: str,
) -> float:
    """Wait for the selection, write it, then tell the waiting pytest to go; returns when it
    went. A pytest that ended before (its conftest.py failed, say) is not waited for."""
    wanted = asyncio.ensure_future(later)
    try:
        await _first(running, wanted)
        if running.done():
            return time.monotonic()
        await sandbox.write_file(chosen, _listing(await wanted), mode=0o444)
    finally:
        if wanted is not later:
            wanted.cancel()  # the task made for a coroutine is ours; a caller's future is not
    # The session holds the FIFO open from its start, so this write does not block once it is
    # there; before that it waits for it, and not past the command's end.
    go = asyncio.ensure_future(sandbox.exec(f"echo go > {signal}", cwd="/", timeout=600))
    try:
        await _first(running, go)
    finally:
        go.cancel()
    return time.monotonic()


async def _first(*futures: asyncio.Future[Any]) -> None:
    await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)


REMOVED_HINT = (
    "the test command takes away what loads FrogNano's collector, so no pytest reported to it: "
    "FrogNano keeps its entry in any PYTHONPATH or PYTEST_PLUGINS the command assigns, but not "
    "under `env -i`, `env -u` or `unset` of either variable, `python -I` or `-E`, or "
    "`-p no:frognano_collector`"
)
_REMOVES = re.compile(
    r"\benv\s+(?:-\S*\s+)*?(?:-i\b|--ignore-environment|(?:-u\s*|--unset[=\s])"
    r"(?:PYTHONPATH|PYTEST_PLUGINS)\b)|\bunset\s+(?:\S+\s+)*?(?:PYTHONPATH|PYTEST_PLUGINS)\b"
    r"|\bpython[\d.]*\s+-[A-Za-z]*[IE]|-p\s*no:frognano_collector\b"
)


def removes_collector(command: str) -> str | None:
    """The first form in `command` that takes away what loads the collector, if any."""
    found = _REMOVES.search(command)
    return None if found is None else found[0]


PURGE = (
    f"find {WORKSPACE} -xdev \\( -name __pycache__ -type d -o -name '*.py[co]' \\) -prune "
    "-exec rm -rf -- {} +"
)


async def purge_bytecode(sandbox: Sandbox) -> None:
    """Remove every bytecode file of the tree, so that none can be run in place of its source
    (the repository's own, or what setup compiled); a failure is the sandbox's, not a result."""
    result = await sandbox.exec(PURGE, cwd=WORKSPACE, timeout=300, split_stderr=True)
    if not result.ok:
        why = (result.stderr or "").strip()
        raise SandboxError(f"could not remove the tree's bytecode before the tests: {why}")


_READ_LOG = f"""
f=$1; size=$(stat -c %s -- "$f" 2>/dev/null || echo 0)
if [ "$size" -le {2 * OUTPUT_KEPT} ]; then cat -- "$f" 2>/dev/null
else head -c {OUTPUT_KEPT} -- "$f"; printf '\\n[... %s bytes left out ...]\\n' \\
  "$((size - {2 * OUTPUT_KEPT}))"; tail -c {OUTPUT_KEPT} -- "$f"; fi
"""


async def _read_log(sandbox: Sandbox, log: str) -> str:
    # For people only: the tests could have rewritten it, and nothing is decided from it.
    result = await sandbox.exec(
        f"bash -c {shlex.quote(_READ_LOG)} _ {shlex.quote(log)}",
        cwd="/",
        timeout=60,
        output_limit=4 * OUTPUT_KEPT,
    )
    return result.output
