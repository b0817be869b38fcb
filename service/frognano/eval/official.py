"""SWE-bench's evaluation of one patch: the test patch after it, the named tests, graded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from frognano.errors import FrogNanoError
from frognano.eval.instances import Instance
from frognano.eval.records import Official, TestsStatus
from frognano.policy.gate.diff import parse_diff
from frognano.run.apply import AppliedFile, MemoryTree, apply_diff
from frognano.run.collected import Outcome
from frognano.run.testrun import run_tests
from frognano.run.trees import HostTree, build_tree, overlay
from frognano.run.workspace import run_setup
from frognano.sandbox.base import Sandbox

SUCCESS: frozenset[Outcome] = frozenset({"passed", "xfailed"})
"""What SWE-bench's grading counts as a test passing (PASSED, XFAIL)."""
FAILURE: frozenset[Outcome] = frozenset({"failed", "error", "xpassed"})
"""What it counts as failing; a test that did not run fails too. A skipped test is neither:
its list is graded without it (SWE-bench's `test_passed`/`test_failed`)."""


@dataclass(frozen=True)
class EvalCommand:
    """How the instance's tests run: its command, setup and time limit."""

    command: str
    setup: Sequence[str]
    timeout: float


MakeSandbox = Callable[[], Awaitable[Sandbox]]


def _trees(base: HostTree, model_patch: str, test_patch: str) -> tuple[AppliedFile, ...]:
    """The model's patch on the base, then the files the test patch touches put back to the
    base (SWE-bench checks them out again) and the test patch applied: what the tests run in.
    ValueError names which patch does not apply."""
    try:
        fixed = apply_diff(parse_diff(model_patch.encode("utf-8", "surrogateescape")), base)
    except ValueError as exc:
        raise ValueError(f"the patch does not apply to the base commit: {exc}") from None
    if not test_patch.strip():
        return fixed
    tests = parse_diff(test_patch.encode("utf-8", "surrogateescape"))
    touched = {change.path for change in tests}
    kept = {f.path: f for f in fixed if f.path not in touched}
    files: dict[str, tuple[str, bytes]] = {}
    for path in base.paths:
        entry = base.entry(path)
        if entry is not None and path not in kept:
            files[path] = (entry.mode, base.read(path))
    for change in kept.values():
        if change.content is None:
            files.pop(change.path, None)
        else:
            files[change.path] = (change.mode, change.content)
    try:
        added = apply_diff(tests, MemoryTree(files))
    except ValueError as exc:
        raise ValueError(f"the test patch does not apply after the patch: {exc}") from None
    return (*kept.values(), *added)


def grade(ids: Sequence[str], outcomes: Mapping[str, Outcome]) -> TestsStatus:
    success = [t for t in ids if outcomes.get(t) in SUCCESS]
    failure = [t for t in ids if t not in outcomes or outcomes[t] in FAILURE]
    return TestsStatus(success=success, failure=failure)


async def evaluate(
    instance: Instance,
    base: HostTree,
    model_patch: str,
    how: EvalCommand,
    make_sandbox: MakeSandbox,
) -> Official:
    """Grade `model_patch` as SWE-bench does: resolved when every FAIL_TO_PASS and every
    PASS_TO_PASS test passes. An empty patch is not run; a run that cannot say (the sandbox,
    the setup, a timeout, the collector's doubts) is an error, never a result."""
    empty = TestsStatus(success=[], failure=[])
    started = time.monotonic()

    def result(status: str, reason: str, applied: bool, **more: object) -> Official:
        return Official.model_validate(
            {
                "status": status,
                "reason": reason,
                "patch_applied": applied,
                "fail_to_pass": more.get("f2p", empty),
                "pass_to_pass": more.get("p2p", empty),
                "seconds": round(time.monotonic() - started, 3),
                "test_seconds": more.get("tests", 0.0),
                "test_output": more.get("output", ""),
            }
        )

    if not model_patch.strip():
        return result("empty_patch", "the patch is empty", False)
    if not instance.fail_to_pass:
        return result("error", "the instance names no FAIL_TO_PASS test", False)
    try:
        files = await asyncio.to_thread(_trees, base, model_patch, instance.test_patch)
    except ValueError as exc:
        return result("error", str(exc), False)
    ids = [*instance.fail_to_pass, *instance.pass_to_pass]
    try:
        async with await make_sandbox() as box:
            await build_tree(box, base, overlay(files))
            await run_setup(box, how.setup)
            run, _ = await run_tests(box, "evaluation", how.command, how.timeout, select=ids)
    except FrogNanoError as exc:
        return result("error", f"the evaluation could not run: {exc}", True)
    ran = {"output": run.output, "tests": round(run.duration, 3)}
    if not run.complete:
        return result("error", f"the test run {run.trouble()}", True, **ran)
    f2p = grade(instance.fail_to_pass, run.outcomes)
    p2p = grade(instance.pass_to_pass, run.outcomes)
    status, reason = _verdict([*f2p.failure, *p2p.failure])
    return result(status, reason, True, f2p=f2p, p2p=p2p, **ran)


def _verdict(failed: Sequence[str]) -> tuple[str, str]:
    if not failed:
        return "resolved", "every named test passed"
    shown = ", ".join(failed[:5]) + (" ..." if len(failed) > 5 else "")
    return "unresolved", f"{len(failed)} of the named tests did not pass: {shown}"
