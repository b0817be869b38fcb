"""Verification on real projects: right verdicts, and its wall time next to one plain run.

For each project (pure-Python sdists from PyPI with a real pytest suite, versions and hashes
pinned in `verify_real_tasks.py`), the benchmark downloads the sdist with pip into `--cache`,
makes it a git checkout whose base commit carries one injected bug, and builds three patches
as `git diff --binary --full-index --no-renames` text against it:

- gold: the exact revert of the bug; verification must hold;
- null: a comment added to a source file; verification must not hold (nothing fixed);
- wrong: breaks another passing test (with or without fixing the bug); must not hold.

Each patch goes through FrogNano's own path, in this process: `HostTree.scan`, `parse_diff`,
`apply_diff`, `make_plan` and `verify`, with fresh local sandboxes carrying the collector,
the default policy (but the project's test command) and no baseline cache. The suites run
offline with a virtual environment the benchmark makes once in `--cache` (every test
dependency, pinned), mounted as `--python-env` would. Next to the gold patch's verification
time it prints one plain run of the same command on the same tree, in one local sandbox
that is already prepared (the command alone), interleaved with the verifications, medians
of `--runs`. The target: every verdict right, and verification at most 1.3x one plain run on
suites over 5 s. It exits 1 if a verdict is wrong; a missed time target is only printed.
Usage:

    python benchmarks/verify_real.py [--projects NAME ...] [--runs 3] [--cache DIR] [--keep]
                                     [--mechanism auto|bwrap|unshare] [--baseline-cache]
                                     [--explain]

`--baseline-cache` lets a project's verifications share its baseline (a FileCache in the
temporary folder), as repeated runs on one base do in production. `--explain` also times the
plain run as each verification run gets it (the tree's bytecode removed first, none written:
PYTHONDONTWRITEBYTECODE), and two of those at once, as verification runs the baseline and the
patched run: what is left of the verification time is FrogNano's own (sandboxes, uploads,
collector). Per patch it prints each run's summary and duration, what the comparison found and
the reason. The first run needs PyPI (pip download and pip install; default cache:
$TMPDIR/frognano-verify-real); later runs reuse the cache.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from frognano.policy.gate.diff import parse_diff
from frognano.policy.models import EffectivePolicy, VerifyPolicy, quantity_bytes
from frognano.run.apply import apply_diff
from frognano.run.baselines import BaselineCache, FileCache
from frognano.run.collector import collector_files
from frognano.run.outcomes import Role, TestRun
from frognano.run.plan import make_plan
from frognano.run.testrun import purge_bytecode
from frognano.run.trees import HostTree, build_tree, overlay
from frognano.run.verification import Verification, verify
from frognano.run.workspace import upload_excludes
from frognano.sandbox import WORKSPACE, SandboxLimits, SandboxOptions, create_sandbox
from frognano.sandbox.base import Sandbox
from frognano.sandbox.local import LocalSandbox

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.sdists

from verify_real_tasks import PROJECTS, Task, ensure_env, fetch_sdist, make_task

TARGET_RATIO = 1.3
LONG_SUITE_S = 5.0
EXPECTED = {"gold": True, "null": False, "wrong": False}


@dataclass
class Outcome:
    """One project's results."""

    task: Task
    verdicts: dict[str, Verification]
    verify_s: list[float]
    plain_s: list[float]
    plain_exit: int | None
    pycache_s: list[float]
    """Plain runs without bytecode, as verification runs them (`--explain`), else empty."""
    pair_s: list[float]
    """Two of those at once, the slower one's time (`--explain`), else empty."""

    def right(self, name: str) -> bool:
        """The expected verdict, from trustworthy runs (a broken run proves nothing)."""
        found = self.verdicts[name]
        if found.held != EXPECTED[name]:
            return False
        runs = found.runs
        return runs is not None and runs.patched.complete and found.evidence.baseline_usable

    @property
    def tests(self) -> int:
        runs = self.verdicts["gold"].runs
        return 0 if runs is None else len(runs.patched.outcomes)

    @property
    def ratio(self) -> float:
        return statistics.median(self.verify_s) / statistics.median(self.plain_s)


def policy_for(command: str) -> EffectivePolicy:
    # Verification itself: the checks that follow a verdict that holds (the hunk runs, the
    # changed-line measurement) are timed by benchmarks/standbehind.py, beside this.
    verify = VerifyPolicy(command=command, hunks="off", changed_line_coverage="off")
    return EffectivePolicy(verify=verify)


def sandbox_options(env: Path, mechanism: str, policy: EffectivePolicy) -> SandboxOptions:
    """As `frognano solve` builds them: the policy's memory, the collector under TOOLS."""
    return SandboxOptions(
        limits=SandboxLimits(memory_bytes=quantity_bytes(policy.sandbox.memory)),
        python_env=env,
        local_mechanism=mechanism,
        tool_files=collector_files(),
    )


async def verify_patch(
    task: Task,
    diff: bytes,
    options: SandboxOptions,
    policy: EffectivePolicy,
    cache: BaselineCache | None,
) -> tuple[Verification, float]:
    """The pipeline's `_check_and_verify` without the gate: the wall time of all of it."""
    started = time.perf_counter()
    base = await HostTree.scan(task.root, upload_excludes(task.root))
    applied = await asyncio.to_thread(apply_diff, parse_diff(diff), base)
    plan = make_plan(applied, base, base.paths, policy)

    async def sandbox_for(role: Role) -> Sandbox:
        del role  # a local sandbox has no labels to put it in
        return await create_sandbox("local", options)

    found = await verify(plan, base, policy, sandbox_for, identity="local", cache=cache)
    return found, time.perf_counter() - started


async def plain_run(
    task: Task, options: SandboxOptions, policy: EffectivePolicy, *, no_bytecode: bool = False
) -> tuple[float, int | None]:
    """The test command alone, with no collector, on the gold tree in a prepared sandbox;
    `no_bytecode`: the tree's bytecode removed and none written, as in every verification."""
    base = await HostTree.scan(task.root, upload_excludes(task.root))
    applied = await asyncio.to_thread(apply_diff, parse_diff(task.patches["gold"]), base)
    box = await LocalSandbox.create(options)
    try:
        await build_tree(box, base, overlay(applied))
        prefix = ""
        started = time.perf_counter()
        if no_bytecode:
            await purge_bytecode(box)
            prefix = "export PYTHONDONTWRITEBYTECODE=1\n"
        result = await box.exec(
            prefix + policy.verify.command, cwd=WORKSPACE, timeout=policy.verify.timeout_seconds
        )
        return time.perf_counter() - started, result.exit_code
    finally:
        await box.close()


async def run_task(
    task: Task, env: Path, args: argparse.Namespace, cache_dir: Path | None
) -> Outcome:
    policy = policy_for(task.project.command)
    options = sandbox_options(env, args.mechanism, policy)
    cache = FileCache(cache_dir / task.project.name) if cache_dir is not None else None
    verify_s: list[float] = []
    plain_s: list[float] = []
    pycache_s: list[float] = []
    pair_s: list[float] = []
    plain_exit: int | None = None
    gold: Verification | None = None
    for _ in range(args.runs):  # interleaved, so drift in machine load hits both alike
        seconds, plain_exit = await plain_run(task, options, policy)
        plain_s.append(seconds)
        if args.explain:
            seconds, _ = await plain_run(task, options, policy, no_bytecode=True)
            pycache_s.append(seconds)
            pair = [plain_run(task, options, policy, no_bytecode=True) for _ in range(2)]
            pair_s.append(max(seconds for seconds, _ in await asyncio.gather(*pair)))
        gold, seconds = await verify_patch(task, task.patches["gold"], options, policy, cache)
        verify_s.append(seconds)
    assert gold is not None
    verdicts = {"gold": gold}
    for name in ("null", "wrong"):
        verdicts[name], _ = await verify_patch(task, task.patches[name], options, policy, cache)
    return Outcome(task, verdicts, verify_s, plain_s, plain_exit, pycache_s, pair_s)


def verdict_cell(outcome: Outcome, name: str) -> str:
    found = outcome.verdicts[name]
    return f"{'held' if found.held else 'not held'} {'RIGHT' if outcome.right(name) else 'WRONG'}"


def timings(outcome: Outcome) -> str:
    text = (
        f"verify s {_seconds(outcome.verify_s)}; plain s {_seconds(outcome.plain_s)} "
        f"(exit status {outcome.plain_exit})"
    )
    if outcome.pycache_s:
        text += "; without bytecode s " + _seconds(outcome.pycache_s)
        text += "; two of those at once s " + _seconds(outcome.pair_s)
    return text


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{s:.2f}" for s in values)


def _run_text(run: TestRun | None) -> str:
    if run is None:
        return "-"
    return f"{run.summary} in {run.duration:.2f} s" + (" (cached)" if run.cached else "")


def details(outcome: Outcome) -> list[str]:
    """Per patch: the comparison and the reason, for reading a wrong verdict."""
    lines = [f"  {timings(outcome)}"]
    for name, found in outcome.verdicts.items():
        runs, c = found.runs, found.evidence.comparison
        shown = "no runs" if runs is None else (
            f"base {_run_text(runs.baseline)} | patched {_run_text(runs.patched)}"
        )  # fmt: skip
        counts = (
            f"fixed {len(c.fixed)}, broken {len(c.broken)}, still failing "
            f"{len(c.still_failing)}, fails differently {len(c.fails_differently)}"
        )
        lines.append(f"    {name:5} {shown}; {counts}")
        lines.append(f"          {found.reason[:300]}")
    return lines


def report(outcomes: list[Outcome]) -> bool:
    """Print the table and the target; True when every verdict was right."""
    header = (
        f"{'project':20} {'tests':>6}  {'gold':16} {'null':16} {'wrong':16} "
        f"{'verify s':>9} {'plain s':>8} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for o in outcomes:
        p = o.task.project
        print(
            f"{p.name + ' ' + p.version:20} {o.tests:>6}  {verdict_cell(o, 'gold'):16} "
            f"{verdict_cell(o, 'null'):16} {verdict_cell(o, 'wrong'):16} "
            f"{statistics.median(o.verify_s):9.2f} {statistics.median(o.plain_s):8.2f} "
            f"{o.ratio:5.2f}x"
        )
    print()
    for o in outcomes:
        p = o.task.project
        print(f"{p.name}: bug in {p.bug.path}; wrong patch {p.wrong_kind}; " + timings(o))
    all_right = all(o.right(name) for o in outcomes for name in EXPECTED)
    long = [o for o in outcomes if statistics.median(o.plain_s) > LONG_SUITE_S]
    fast = all(o.ratio <= TARGET_RATIO for o in long)
    print()
    cores, load = os.cpu_count(), os.getloadavg()
    print(
        f"machine: {cores} cores; load average now {load[0]:.1f} (5 min {load[1]:.1f}, "
        f"15 min {load[2]:.1f}): other work on the cores slows the concurrent runs most"
    )
    print(
        f"target: every verdict right, and verification <= {TARGET_RATIO}x one plain run on "
        f"suites over {LONG_SUITE_S:.0f} s"
    )
    print(f"  verdicts: {'all right' if all_right else 'SOME WRONG'}")
    if long:
        ratios = ", ".join(f"{o.task.project.name} {o.ratio:.2f}x" for o in long)
        print(f"  time: {'met' if fast else 'MISSED'} ({ratios})")
    else:
        print("  time: no suite over 5 s was run")
    return all_right


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [p.name for p in PROJECTS]
    parser.add_argument("--projects", nargs="+", choices=names, default=names, metavar="NAME",
                        help=f"some of: {' '.join(names)} (default: all)")  # fmt: skip
    parser.add_argument("--runs", type=int, default=3,
                        help="gold verifications and plain runs per project (medians)")  # fmt: skip
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "frognano-verify-real",
                        help="sdists and the test environment (kept between runs)")  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the checkouts")
    parser.add_argument("--mechanism", default="auto", choices=("auto", "bwrap", "unshare"))
    parser.add_argument("--explain", action="store_true",
                        help="also time plain runs without bytecode, as verified")  # fmt: skip
    parser.add_argument("--baseline-cache", action="store_true",
                        help="reuse a project's baseline across its verifications")  # fmt: skip
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    cache = args.cache.resolve()
    print(f"cache: {cache}; making the test environment and fetching sdists (once)")
    env = await asyncio.to_thread(ensure_env, cache)
    chosen = [p for p in PROJECTS if p.name in args.projects]
    workdir = Path(tempfile.mkdtemp(prefix="frognano-verify-real-"))
    outcomes: list[Outcome] = []
    try:
        tasks = []
        for project in chosen:  # all first: a bad download or edit stops before any run
            sdist = await asyncio.to_thread(fetch_sdist, project, cache)
            folder = workdir / project.name
            folder.mkdir()
            tasks.append(await asyncio.to_thread(make_task, project, sdist, folder))
        baselines = workdir / "baselines" if args.baseline_cache else None
        for task in tasks:
            print(f"{task.project.name} {task.project.version}: {task.project.command}")
            outcome = await run_task(task, env, args, baselines)
            print("\n".join(details(outcome)), flush=True)
            outcomes.append(outcome)
    finally:
        if args.keep:
            print(f"checkouts kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print()
    return 0 if report(outcomes) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
