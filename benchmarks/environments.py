"""Per-repository environments through `frognano solve`: cold build, warm reuse, verification.

For each project (a real PyPI sdist whose test suite needs ten or more packages, version and
hash pinned in `environments_tasks.py`), the benchmark downloads the sdist with pip into
`--cache`, makes it a git checkout, and runs the whole `frognano solve` path on it as a
subprocess, `--index-url` pointing at proxpi, started here in front of the real PyPI (its
files cached in `--cache`). The model is the tests' scripted server: the agent reads a source
file, adds a comment line to it and finishes; verification then runs the project's suite on
the base and on the patch (policy `verify.require: no_regressions`). The first solve builds
the environment into a fresh `FROGNANO_ENVIRONMENT_CACHE`; `--runs` more solves reuse it.

Per project it prints the packages installed in the environment (its `*.dist-info`, the
venv's own pip and setuptools left out), the cold run's build time (`build_seconds`) and
environment phase (`durations.environment`), the warm runs' environment phase (cache hits
only, median), and their verification (`durations.verify`, median) next to one plain run of
the same test command, in a local sandbox that binds the built environment as the runs do
(the command alone, timed in a prepared sandbox, interleaved with the warm solves, median).
Each solve runs the baseline anew (`FROGNANO_BASELINE_CACHE=off`) unless `--baseline-cache`
lets a project's solves share one, as repeated runs on one base do in production.
The targets: a cache hit adds at most 1 s to a run, and verification takes at most 1.3x one
plain run on suites over 5 s (verification runs the base and the patch at once: a machine
with few cores may miss it). It exits 1 if a run ends without a ready patch or a build
fails; a missed time target is only printed. Usage:

    python benchmarks/environments.py [--projects NAME ...] [--runs 3] [--cache DIR] [--keep]
                                      [--baseline-cache]

The first run needs PyPI (pip download of the sdists, and proxpi's upstream; default cache:
$TMPDIR/frognano-environments); later runs reuse the sdists and proxpi's files, but always
build the environments anew. `--keep` keeps the checkouts, the solves' output folders and
the environment cache.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from frognano.run.trees import HostTree, build_tree, overlay
from frognano.run.workspace import upload_excludes
from frognano.sandbox import WORKSPACE, SandboxOptions
from frognano.sandbox.local import LocalSandbox

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.fakes

from environments_tasks import (
    COMMENT,
    PROJECTS,
    Project,
    make_checkout,
    serve_pypi_proxy,
    write_policy,
)
from tests.fakes.model_server import ScriptedModelServer, Turn
from verify_real_tasks import fetch_sdist

WARM_TARGET_S = 1.0
TARGET_RATIO = 1.3
LONG_SUITE_S = 5.0
SOLVE_TIMEOUT_S = 3600
VENV_OWN = ("pip", "setuptools")  # what `python -m venv` puts there before any install


@dataclass
class Solved:
    """One `frognano solve` run."""

    exit_code: int
    wall_s: float
    report: dict[str, Any]
    stderr: str

    @property
    def environment(self) -> dict[str, Any]:
        found: dict[str, Any] = (self.report.get("sandbox") or {}).get("environment") or {}
        return found

    @property
    def durations(self) -> dict[str, float]:
        found: dict[str, float] = self.report.get("durations") or {}
        return found

    @property
    def baseline_reused(self) -> bool:
        baseline = (self.report.get("verification") or {}).get("baseline") or {}
        return bool(baseline.get("cached"))

    @property
    def ready(self) -> bool:
        return self.exit_code == 0

    def why(self) -> str:
        error = self.report.get("error") or (self.report.get("verification") or {}).get("reason")
        return str(error or self.stderr.strip()[-1500:])


@dataclass
class Outcome:
    """One project's runs."""

    project: Project
    cold: Solved
    warm: list[Solved] = field(default_factory=list)
    plain_s: list[float] = field(default_factory=list)
    plain_exit: int | None = None
    dist_infos: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return not self.cold.ready or not all(run.ready for run in self.warm)

    @property
    def packages(self) -> int:
        return len([name for name in self.dist_infos if name not in VENV_OWN])

    @property
    def hits(self) -> list[float]:
        return [r.durations["environment"] for r in self.warm if r.environment.get("cache_hit")]

    @property
    def verify_s(self) -> list[float]:
        return [r.durations["verify"] for r in self.warm if "verify" in r.durations]

    @property
    def ratio(self) -> float:
        if not self.verify_s or not self.plain_s:
            return float("nan")
        return statistics.median(self.verify_s) / statistics.median(self.plain_s)


def turns(project: Project) -> list[Turn]:
    """Read the file, add a comment line after the anchor, finish."""
    path = f"/workspace/{project.edit_path}"
    return [
        Turn(reasoning="Read it first.", calls=[("Read", {"file_path": path})]),
        Turn(reasoning="A comment changes nothing.", calls=[("Edit", {
            "file_path": path, "old_string": project.anchor,
            "new_string": project.anchor + COMMENT,
        })]),
        Turn(content="Added a review comment; the code is unchanged."),
    ]  # fmt: skip


def solve(project: Project, checkout: Path, policies: Path, index_url: str, *, cache: Path,
          out: Path, baselines: Path | None) -> Solved:  # fmt: skip
    """`frognano solve` as a subprocess, as an operator runs it, with the scripted model."""
    issue = out.parent / f"{out.name}-issue.md"
    issue.write_text(f"# Review {project.edit_path}\n\nAdd a review comment; change no code.\n")
    sandboxes = out.parent / "sandboxes"
    sandboxes.mkdir(exist_ok=True)
    # None of this machine's FrogNano or pip settings: the policy and the index decide.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FROGNANO_", "PIP_"))}
    with ScriptedModelServer(turns(project)) as server:
        env.update(
            FROGNANO_MODEL_BASE_URL=server.base_url,
            FROGNANO_LOG_LEVEL="WARNING",
            FROGNANO_POLICY_DIR=str(policies),
            FROGNANO_ENVIRONMENT_CACHE=str(cache),
            FROGNANO_BASELINE_CACHE=str(baselines) if baselines is not None else "off",
            TMPDIR=str(sandboxes),
        )
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "frognano", "solve", str(checkout), "--issue-file",
             str(issue), "--index-url", index_url, "--out", str(out)],
            env=env, capture_output=True, text=True, timeout=SOLVE_TIMEOUT_S, check=False,
        )  # fmt: skip
        wall = time.perf_counter() - started
    try:
        report: dict[str, Any] = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        report = {}
    return Solved(done.returncode, wall, report, done.stderr)


async def plain_run(checkout: Path, environment: Path, command: str) -> tuple[float, int | None]:
    """The test command alone on the checkout, in a prepared local sandbox with the built
    environment bound as the runs bind it: only the command is timed."""
    base = await HostTree.scan(checkout, upload_excludes(checkout))
    box = await LocalSandbox.create(SandboxOptions(environment=environment))
    try:
        await build_tree(box, base, overlay(()))
        started = time.perf_counter()
        result = await box.exec(command, cwd=WORKSPACE, timeout=SOLVE_TIMEOUT_S)
        return time.perf_counter() - started, result.exit_code
    finally:
        await box.close()


def dist_infos(environment: Path) -> list[str]:
    found = environment.glob("lib/python*/site-packages/*.dist-info")
    return sorted(path.name.partition("-")[0].lower() for path in found)


def run_project(project: Project, checkout: Path, workdir: Path, index_url: str,
                args: argparse.Namespace) -> Outcome:  # fmt: skip
    policies = write_policy(project, workdir / f"{project.name}-policy")
    cache = workdir / "environments"  # shared by every project: each has its own key
    outs = workdir / f"{project.name}-runs"
    outs.mkdir()
    baselines = workdir / f"{project.name}-baselines" if args.baseline_cache else None
    cold = solve(
        project, checkout, policies, index_url, cache=cache, out=outs / "cold", baselines=baselines
    )
    outcome = Outcome(project, cold)
    print(f"  cold: exit {cold.exit_code} in {cold.wall_s:.1f} s; {_env_text(cold)}", flush=True)
    key = cold.environment.get("key")
    if not key or not (cache / key).is_dir():
        print(f"  no environment was built: {cold.why()}")
        return outcome
    outcome.dist_infos = dist_infos(cache / key)
    if not cold.ready:
        print(f"  the cold run has no ready patch: {cold.why()}")
    for number in range(args.runs):  # interleaved, so drift in machine load hits both alike
        seconds, outcome.plain_exit = asyncio.run(plain_run(checkout, cache / key, project.command))
        outcome.plain_s.append(seconds)
        warm = solve(
            project,
            checkout,
            policies,
            index_url,
            cache=cache,
            out=outs / f"warm-{number}",
            baselines=baselines,
        )
        outcome.warm.append(warm)
        print(
            f"  plain {seconds:.2f} s (exit status {outcome.plain_exit}); warm: exit "
            f"{warm.exit_code} in {warm.wall_s:.1f} s; {_env_text(warm)}",
            flush=True,
        )
        if not warm.ready:
            print(f"  no ready patch: {warm.why()}")
    return outcome


def _env_text(run: Solved) -> str:
    env, durations = run.environment, run.durations
    if not env:
        return "no environment in the report"
    nan = float("nan")
    reused = " (baseline reused)" if run.baseline_reused else ""
    return (
        f"{'hit' if env.get('cache_hit') else 'built'}, environment "
        f"{durations.get('environment', nan):.2f} s (build {env.get('build_seconds', nan):.1f} s), "
        f"verify {durations.get('verify', nan):.2f} s{reused}"
    )


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(outcomes: list[Outcome]) -> bool:
    """Print the table and the targets; True when every run had a ready patch."""
    header = (
        f"{'project':20} {'pkgs':>5} {'build s':>8} {'cold env s':>10} {'warm env s':>10} "
        f"{'verify s':>9} {'plain s':>8} {'ratio':>6}  ready"
    )
    print(header)
    print("-" * len(header))
    for o in outcomes:
        p = o.project
        ready = sum(r.ready for r in [o.cold, *o.warm])
        build = float(o.cold.environment.get("build_seconds", float("nan")))
        print(
            f"{p.name + ' ' + p.version:20} {o.packages:>5} {build:8.1f} "
            f"{o.cold.durations.get('environment', float('nan')):10.1f} {_median(o.hits):10.2f} "
            f"{_median(o.verify_s):9.2f} {_median(o.plain_s):8.2f} {o.ratio:5.2f}x  "
            f"{ready}/{1 + len(o.warm)}"
        )
    print()
    for o in outcomes:
        commands = "; ".join(o.cold.environment.get("commands") or ()) or "-"
        how = "given by the policy" if o.project.install else "detected"
        print(f"{o.project.name}: install ({how}): {commands}")
        print(f"  {len(o.dist_infos)} dist-info: {' '.join(o.dist_infos)}")
        print(
            f"  warm environment s {_seconds(o.hits)} ({len(o.hits)} hits of {len(o.warm)}); "
            f"verify s {_seconds(o.verify_s)}; plain s {_seconds(o.plain_s)} "
            f"(exit status {o.plain_exit}); solve wall s {o.cold.wall_s:.1f} cold, "
            f"{_seconds([r.wall_s for r in o.warm])} warm"
        )
    print()
    cores, load = os.cpu_count(), os.getloadavg()
    print(f"machine: {cores} cores; load average now {load[0]:.1f} (5 min {load[1]:.1f})")
    warm = [o for o in outcomes if o.hits]
    slow = [o for o in warm if _median(o.hits) > WARM_TARGET_S]
    shown = ", ".join(f"{o.project.name} {_median(o.hits):.2f} s" for o in warm)
    print(f"target: a cache hit adds <= {WARM_TARGET_S:.0f} s to a run: "
          f"{'MISSED' if slow or not warm else 'met'} ({shown or 'no hits'})")  # fmt: skip
    long = [o for o in outcomes if o.plain_s and _median(o.plain_s) > LONG_SUITE_S]
    if long:
        fast = all(o.ratio <= TARGET_RATIO for o in long)
        ratios = ", ".join(f"{o.project.name} {o.ratio:.2f}x" for o in long)
        print(f"target: verification <= {TARGET_RATIO}x one plain run on suites over "
              f"{LONG_SUITE_S:.0f} s: {'met' if fast else 'MISSED'} ({ratios})")  # fmt: skip
    else:
        print(f"target: verification <= {TARGET_RATIO}x: no suite over {LONG_SUITE_S:.0f} s")
    failed = [o.project.name for o in outcomes if o.failed]
    print(
        f"runs: {'every run had a ready patch' if not failed else 'FAILED: ' + ', '.join(failed)}"
    )
    return not failed


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{s:.2f}" for s in values) or "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [p.name for p in PROJECTS]
    parser.add_argument("--projects", nargs="+", choices=names, default=names, metavar="NAME",
                        help=f"some of: {' '.join(names)} (default: all)")  # fmt: skip
    parser.add_argument("--runs", type=int, default=3,
                        help="warm solves and plain runs per project (medians)")  # fmt: skip
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "frognano-environments",
                        help="sdists and proxpi's files (kept between runs)")  # fmt: skip
    parser.add_argument("--keep", action="store_true",
                        help="keep the checkouts, run folders and environments")  # fmt: skip
    parser.add_argument("--baseline-cache", action="store_true",
                        help="let a project's solves reuse its baseline test run")  # fmt: skip
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    cache = args.cache.resolve()
    chosen = [p for p in PROJECTS if p.name in args.projects]
    workdir = Path(tempfile.mkdtemp(prefix="frognano-environments-"))
    workdir.chmod(0o755)  # the sandboxes' user reads the checkouts under it
    outcomes: list[Outcome] = []
    try:
        checkouts = {}
        for project in chosen:  # all first: a bad download stops before any run
            sdist = fetch_sdist(project, cache)
            folder = workdir / project.name
            folder.mkdir()
            checkouts[project.name] = make_checkout(sdist, folder)
        with serve_pypi_proxy(workdir, cache / "proxpi") as index_url:
            print(f"cache: {cache}; index: proxpi at {index_url} in front of PyPI", flush=True)
            for project in chosen:
                print(f"{project.name} {project.version}: {project.command}", flush=True)
                checkout = checkouts[project.name]
                outcomes.append(run_project(project, checkout, workdir, index_url, args))
    finally:
        if args.keep:
            print(f"kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print()
    return 0 if report(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
