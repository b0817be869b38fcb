"""Mutation testing of the verdict, diff and gate modules with mutmut: the share of mutants killed.

The issue's target is that the fast test suite kills at least 90% of the mutants of each
group. mutmut (3.x) mutates the body of every function of the listed modules, one change at a
time (a comparison flipped, a constant changed, a call's argument dropped, a return value
replaced), and runs the tests that reached that function against each mutant; a mutant the
tests still pass "survived". Module-level constants are not mutated by mutmut 3.

mutmut wants the code under `src/` next to `tests/`, so the script stages a copy of the
repository in a temporary folder (`service/frognano` as `src/frognano`, the tests, the policies
and docs the tests read) and runs mutmut there with the interpreter that runs this script,
which must have FrogNano's dev dependencies and mutmut installed
(`pip install -e ".[dev,mutation]"`). Usage:

    python benchmarks/mutation.py [--groups verdict diff gate] [--jobs 2] [--keep DIR]
                                  [--survivors] [--rerun [--sample SHARE]]

It prints, per group and per module, killed / total and the share, then exits 1 when a group
is under 90%. `--survivors` also lists each surviving mutant's name (`mutmut show NAME` in the
kept folder prints its diff); `--keep DIR` stages there and keeps it, so a second run reuses
the finished results of unchanged functions; `--rerun` (with `--keep` of an earlier run)
tests only that run's survivors (and what it did not get to) again, against the current
tests (which may only have gained tests since, the code under test unchanged); `--sample
0.3` tests a seeded random 30% of what it did not get to, and the shares are then of the
mutants tested ("not tested" counts the rest).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.90

GROUPS: dict[str, tuple[str, ...]] = {
    "verdict": (
        "run/evidence.py",
        "run/outcomes.py",
        "run/results.py",
        "run/records.py",
        "run/collected.py",
    ),
    "diff": (
        "policy/gate/diff.py",
        "policy/gate/gitquote.py",
        "run/apply.py",
        "policy/gate/gitbinary.py",
    ),
    "gate": (
        "policy/gate/check.py",
        "policy/gate/findings.py",
        "policy/gate/scan.py",
        "policy/gate/secrets.py",
        "policy/gate/python/code.py",
        "policy/gate/python/resolve.py",
        "policy/gate/python/const.py",
        "policy/gate/python/rules.py",
        "policy/gate/textcode.py",
        "policy/gate/automation.py",
        "run/gatecheck.py",
    ),
}
# The unit tests of these modules. Those that start pytest, git or a sandbox take seconds each, and
# mutmut reruns every test that reaches a function for each of its surviving mutants, so they
# are left out: what they alone would catch counts as surviving here.
TESTS = ("tests/run", "tests/policy")
SLOW = (
    "tests/run/test_apply_git.py",
    "tests/run/test_testrun.py",
    "tests/run/test_collector.py",
    "tests/run/test_collector_commands.py",
    "tests/run/test_collector_tampering.py",
)
# Read by the tests through paths relative to the repository root.
ALSO_COPY = ("policies", "docs", "charts", "examples", "README.md", "service")

# mutmut's exit codes per mutant (mutmut.stats.status_by_exit_code).
KILLED = {1, 3, 37}
SURVIVED = {0}
TIMEOUT = {36, 24, -24, 152, 255}


@dataclass
class Tally:
    """Mutant counts of one module or group."""

    counts: Counter[str] = field(default_factory=Counter)
    survivors: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.counts.update(other.counts)
        self.survivors.extend(other.survivors)

    @property
    def total(self) -> int:
        """The mutants tested (a sampled `--rerun` leaves some out)."""
        return sum(n for kind, n in self.counts.items() if kind != "not tested")

    @property
    def share(self) -> float:
        # A timeout is the test run noticing the mutant (an endless loop): counted as killed.
        caught = self.counts["killed"] + self.counts["timeout"]
        return caught / self.total if self.total else 1.0

    def line(self, name: str) -> str:
        parts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        return f"{name:28} {self.share:6.1%} of {self.total:4}  ({parts})"


def stage(into: Path, modules: list[str]) -> None:
    """A copy of the repository in mutmut's layout, configured to mutate `modules`."""
    source = into / "src" / "frognano"
    if source.exists():
        shutil.rmtree(source)
    shutil.copytree(ROOT / "service" / "frognano", source,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    for name in ("tests", *ALSO_COPY):
        path = ROOT / name
        target = into / name
        if target.is_dir():
            shutil.rmtree(target)
        if path.is_dir():
            shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__"))
        elif path.exists():
            shutil.copy2(path, target)
    config = {
        "source_paths": ["src"],
        "only_mutate": [f"src/frognano/{module}" for module in modules],
        "pytest_add_cli_args_test_selection": [*TESTS, *(f"--ignore={path}" for path in SLOW)],
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q"],
        "also_copy": list(ALSO_COPY),
    }
    text = (ROOT / "pyproject.toml").read_text()
    text += "\n[tool.mutmut]\n" + "".join(
        f"{key} = {json.dumps(value)}\n" for key, value in config.items()
    )
    (into / "pyproject.toml").write_text(text)


def codes_of(into: Path, module: str) -> dict[str, int | None]:
    """mutmut's exit code per mutant of `module` (None: not tested), from its results file."""
    meta = into / "mutants" / "src" / "frognano" / f"{module}.meta"
    if not meta.exists():  # no function to mutate, or mutmut did not get to it
        return {}
    codes: dict[str, int | None] = json.loads(meta.read_text())["exit_code_by_key"]
    return codes


def keep_earlier(into: Path, module: str, earlier: dict[str, int | None]) -> dict[str, int | None]:
    """The module's verdicts, each one mutmut left untested taken from `earlier`, and saved
    so that the kept folder stays whole for the next `--rerun`."""
    codes = codes_of(into, module)
    untested = {name: code for name, code in earlier.items() if codes.get(name) is None}
    if untested:
        meta = into / "mutants" / "src" / "frognano" / f"{module}.meta"
        data = json.loads(meta.read_text())
        data["exit_code_by_key"].update(untested)
        meta.write_text(json.dumps(data))
        codes.update(untested)
    return codes


def tally(codes: dict[str, int | None], survivors: bool) -> Tally:
    found = Tally()
    for name, code in codes.items():
        if code in KILLED:
            found.counts["killed"] += 1
        elif code in TIMEOUT:
            found.counts["timeout"] += 1
        elif code in SURVIVED:
            found.counts["survived"] += 1
            if survivors:
                found.survivors.append(name)
        elif code in (5, 33):
            found.counts["no tests"] += 1
            if survivors:
                found.survivors.append(name + " (no test reaches it)")
        elif code is None:
            found.counts["not tested"] += 1
        else:
            found.counts[f"exit status {code}"] += 1
    return found


def survivors(earlier: dict[str, dict[str, int | None]], sample: float) -> list[str]:
    """The names of the mutants an earlier run left alive or reached by no test, and of those
    it did not get to (it was stopped): all of them, or a `sample` share picked at random
    (seeded, so a rerun picks the same)."""
    pick = random.Random(0)  # noqa: S311 - a sample, not a secret
    return [name for codes in earlier.values() for name, code in sorted(codes.items())
            if code in (*SURVIVED, 5, 33) or (code is None and pick.random() < sample)]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", nargs="+", choices=list(GROUPS), default=list(GROUPS))
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once")
    parser.add_argument("--keep", type=Path, help="stage in this folder and keep it")
    parser.add_argument("--survivors", action="store_true", help="list surviving mutants")
    parser.add_argument("--rerun", action="store_true", help="retest the kept run's survivors")
    parser.add_argument("--sample", type=float, default=1.0, metavar="SHARE",
                        help="with --rerun: the share of untested mutants to test")  # fmt: skip
    args = parser.parse_args()
    if shutil.which("mutmut") is None and not (Path(sys.executable).parent / "mutmut").exists():
        print('mutmut is not installed here: pip install -e ".[dev,mutation]"', file=sys.stderr)
        return 2
    if args.rerun and args.keep is None:
        parser.error("--rerun needs --keep DIR of an earlier run")
    if not 0 <= args.sample <= 1:
        parser.error(f"--sample is a share from 0 to 1, not {args.sample}")
    modules = [module for group in args.groups for module in GROUPS[group]]
    into = args.keep or Path(tempfile.mkdtemp(prefix="frognano-mutation-"))
    into.mkdir(parents=True, exist_ok=True)
    # mutmut forgets the other verdicts when it retests named mutants; a mutant the earlier
    # tests killed stays killed (tests were only added), so those verdicts are kept here.
    earlier = {module: codes_of(into, module) for module in modules} if args.rerun else {}
    again = survivors(earlier, args.sample)
    stage(into, modules)
    mutmut = Path(sys.executable).parent / "mutmut"
    command = [str(mutmut) if mutmut.exists() else "mutmut", "run",
               "--max-children", str(args.jobs), *again]  # fmt: skip
    print(f"mutating {len(modules)} modules in {into}", flush=True)
    done = subprocess.run(command, cwd=into, stdout=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        print(f"mutmut exited with status {done.returncode} (run it in {into} to see why)")
        return 2
    below = []
    for group in args.groups:
        total = Tally()
        lines = []
        for module in GROUPS[group]:
            codes = keep_earlier(into, module, earlier.get(module, {}))
            found = tally(codes, args.survivors)
            total.add(found)
            lines.append("  " + found.line(module))
            lines.extend(f"      {name}" for name in found.survivors)
        print(total.line(group))
        print("\n".join(lines))
        if total.share < TARGET:
            below.append(group)
    if args.keep is None:
        shutil.rmtree(into, ignore_errors=True)
    if below:
        print(f"under the {TARGET:.0%} target: {', '.join(below)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
