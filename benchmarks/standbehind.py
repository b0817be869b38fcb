"""What the hunk checks and the changed-line coverage cost, on the real projects of verify_real.

For each project of `verify_real_tasks.py` (the same sdists, injected bugs and test
environment), two patches: the gold fix, and the gold fix plus a crafted extra hunk (a small
function appended to another part of the code, which no test needs or runs). Each goes
through FrogNano's verification three ways: with both checks off, with the hunk checks only
(`verify.hunks: report`), and with the changed-line coverage only
(`verify.changed_line_coverage: report`), next to one plain run of the test command in a
prepared sandbox. It prints each time and the targets:

- hunk checks add at most one plain run's time in total for patches of up to 5 hunks;
- coverage adds at most 30% to the patched run on suites over 5 s.

It also checks what the checks say: the extra hunk is "not needed by any test" and its lines
are listed as executed by none, the fix's hunk is needed. Exit 1 if a verdict or a finding is
wrong; a missed time target is only printed. Usage:

    python benchmarks/standbehind.py [--projects NAME ...] [--runs 1] [--cache DIR]
                                     [--mechanism auto|bwrap|unshare] [--python PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from frognano.policy.models import EffectivePolicy, VerifyPolicy
from frognano.run.verification import Verification

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verify_real import plain_run, sandbox_options, verify_patch
from verify_real_tasks import PROJECTS, Task, _apply, _diff, ensure_env, fetch_sdist, make_task

RIDER = '\n\ndef _frognano_extra_hunk(name):\n    return name == "mallory"\n'
MODES: dict[str, tuple[Literal["off", "report"], Literal["off", "report"]]] = {
    "off": ("off", "off"),
    "hunks": ("report", "off"),
    "coverage": ("off", "report"),
}
"""mode -> (verify.hunks, verify.changed_line_coverage)."""
HUNK_TARGET = 1.0
"""Extra time of the hunk checks, in plain runs."""
COVERAGE_TARGET = 1.3
LONG_SUITE_S = 5.0


@dataclass
class Row:
    task: Task
    plain_s: list[float] = field(default_factory=list)
    seconds: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    """(patch, mode) -> wall time of the whole verification."""
    patched_s: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    """(patch, mode) -> the patched run's own duration."""
    found: dict[tuple[str, str], Verification] = field(default_factory=dict)

    def median(self, patch: str, mode: str, patched: bool = False) -> float:
        table = self.patched_s if patched else self.seconds
        return statistics.median(table[patch, mode])


def rider_patch(task: Task) -> bytes:
    """The gold fix plus one more hunk, as git diff text against the base."""
    root = task.root
    _apply(root, (task.project.bug.reverted(),))
    target = root / task.project.null_path
    target.write_bytes(target.read_bytes() + RIDER.encode())
    return _diff(root)


def policy_for(command: str, mode: str) -> EffectivePolicy:
    hunks, coverage = MODES[mode]
    return EffectivePolicy(
        verify=VerifyPolicy(command=command, hunks=hunks, changed_line_coverage=coverage)
    )


async def measure(task: Task, env: Path, runs: int, mechanism: str) -> Row:
    row = Row(task)
    patches = {"gold": task.patches["gold"], "gold+extra": rider_patch(task)}
    plain_policy = policy_for(task.project.command, "off")
    options = sandbox_options(env, mechanism, plain_policy)
    for _ in range(runs):  # interleaved, so drift in machine load hits every mode alike
        seconds, _ = await plain_run(task, options, plain_policy)
        row.plain_s.append(seconds)
        for patch, diff in patches.items():
            for mode in MODES:
                policy = policy_for(task.project.command, mode)
                found, seconds = await verify_patch(task, diff, options, policy, None)
                row.seconds.setdefault((patch, mode), []).append(seconds)
                duration = found.runs.patched.duration if found.runs else float("nan")
                row.patched_s.setdefault((patch, mode), []).append(duration)
                row.found[patch, mode] = found
    return row


def problems(row: Row) -> list[str]:
    """What the checks said wrongly on this project, in words."""
    wrong: list[str] = []
    for (patch, mode), found in row.found.items():
        if not found.held:
            wrong.append(f"{patch} ({mode}) did not hold: {found.reason}")
    hunks = row.found["gold+extra", "hunks"].necessity
    if hunks is None or len(hunks.checks) != 2:
        wrong.append("the extra hunk's patch was not checked as two hunks")
    else:
        needed = [check.needed for check in hunks.checks]
        if sorted(needed) != [False, True]:
            wrong.append(f"hunks needed: {needed}; expected the fix needed, the extra not")
    changed = row.found["gold+extra", "coverage"].changed
    if changed is None or changed.error:
        wrong.append(f"no measurement: {changed.error if changed else 'none'}")
    elif not any(f.missed for f in changed.files):
        wrong.append("the extra hunk's lines were reported as executed")
    return wrong


def report(rows: list[Row]) -> bool:
    header = (
        f"{'project':14} {'plain s':>8} {'patch':11} {'off s':>7} {'hunks s':>8} "
        f"{'+plain runs':>11} {'cov s':>7} {'patched off':>11} {'patched cov':>11} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    hunk_ok, cov_ok, right = True, True, True
    for row in rows:
        plain = statistics.median(row.plain_s)
        for patch in ("gold", "gold+extra"):
            off, hunks = row.median(patch, "off"), row.median(patch, "hunks")
            cov = row.median(patch, "coverage")
            p_off, p_cov = row.median(patch, "off", True), row.median(patch, "coverage", True)
            extra_runs = (hunks - off) / plain
            ratio = p_cov / p_off
            hunk_ok &= extra_runs <= HUNK_TARGET
            if plain > LONG_SUITE_S:
                cov_ok &= ratio <= COVERAGE_TARGET
            print(
                f"{row.task.project.name:14} {plain:8.2f} {patch:11} {off:7.2f} {hunks:8.2f} "
                f"{extra_runs:11.2f} {cov:7.2f} {p_off:11.2f} {p_cov:11.2f} {ratio:5.2f}x"
            )
        for problem in problems(row):
            right = False
            print(f"  WRONG: {problem}")
    print()
    print(
        f"targets: hunk checks add <= {HUNK_TARGET:g} plain run(s) (patches of up to 5 "
        f"hunks): {'met' if hunk_ok else 'MISSED'}; coverage <= {COVERAGE_TARGET}x the "
        f"patched run on suites over {LONG_SUITE_S:g} s: {'met' if cov_ok else 'MISSED'}"
    )
    print(f"findings: {'all right' if right else 'SOME WRONG'}")
    return right


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [p.name for p in PROJECTS]
    parser.add_argument("--projects", nargs="+", choices=names, default=names, metavar="NAME")
    parser.add_argument("--runs", type=int, default=1, help="repetitions (medians)")
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "frognano-verify-real")  # fmt: skip
    parser.add_argument("--mechanism", default="auto", choices=("auto", "bwrap", "unshare"))
    parser.add_argument(
        "--python",
        help="the suites' interpreter (default: this one); coverage.py's fastest core "
        "depends on it (sys.monitoring from 3.12)",
    )
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    cache = args.cache.resolve()
    env = await asyncio.to_thread(ensure_env, cache, args.python)
    workdir = Path(tempfile.mkdtemp(prefix="frognano-standbehind-"))
    rows: list[Row] = []
    try:
        for project in (p for p in PROJECTS if p.name in args.projects):
            sdist = await asyncio.to_thread(fetch_sdist, project, cache)
            folder = workdir / project.name
            folder.mkdir()
            task = await asyncio.to_thread(make_task, project, sdist, folder)
            print(f"{project.name} {project.version}: {project.command}", flush=True)
            rows.append(await measure(task, env, args.runs, args.mechanism))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print()
    return 0 if report(rows) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
