"""`frognano eval` throughput with a zero-latency scripted model, for 1 and N workers.

Builds the test dataset (tests/eval/dataset.py: real sdists with injected bugs), copies its
sound instances until there are `--instances`, and runs `frognano eval` as a process with a
scripted model server that answers at once (every agent applies the gold fix and adds its own
test: two model turns). It prints instances per hour for each worker count, and per instance
FrogNano's own overhead beside the test time any harness must spend:

- tests: the test commands' own run time on the instance's critical path: the longest of
  FrogNano's concurrent verification runs, then the official evaluation's run;
- wall: the instance from check-out to result; overhead = wall - tests (sandboxes, uploads,
  the agent loop and its two model calls, the gate, the reports);
- ratio: wall / tests.

Usage: python benchmarks/eval_throughput.py [--instances 8] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from frognano.eval.instances import load_instances
from tests.eval.agents import Agents
from tests.eval.dataset import build_dataset
from tests.eval.run import eval_argv, eval_env
from tests.fakes.model_server import ScriptedModelServer


def copies(source: Path, dest: Path, broken: set[str], count: int) -> list[str]:
    """`count` instances cycled from the sound ones of `source`, each id made unique."""
    rows = [
        json.loads(line)
        for line in source.read_text().splitlines()
        if line.strip() and json.loads(line)["instance_id"] not in broken
    ]
    made = []
    for n in range(count):
        row = dict(rows[n % len(rows)])
        row["instance_id"] = f"{row['instance_id']}-copy{n}"
        made.append(row)
    dest.write_text("".join(json.dumps(row) + "\n" for row in made))
    return [row["instance_id"] for row in made]


def critical_tests(report: dict[str, Any]) -> float:
    """The longest of the concurrent verification runs (the baseline may be cached: 0)."""
    verification = report.get("verification") or {}
    runs = [verification.get(key) for key in ("baseline", "verification", "new_on_patched",
                                              "new_on_base")]  # fmt: skip
    return max((run["duration"] for run in runs if run and not run["cached"]), default=0.0)


def measure(root: Path, instances: Path, repos: Path, workers: int) -> dict[str, Any]:
    out = root / f"workers-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    loaded = load_instances(instances)
    agents = Agents(loaded, {}, otherwise="right")
    with ScriptedModelServer(default=agents) as server:
        started = time.perf_counter()
        done = subprocess.run(
            eval_argv(instances, repos, out, "--workers", str(workers)),
            env=eval_env(root / f"scratch-{workers}", server),
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"frognano eval failed ({done.returncode}):\n{done.stderr}")
    walls, tests = [], []
    resolved = 0
    for instance in loaded:
        folder = out / "instances" / instance.instance_id
        result = json.loads((folder / "result.json").read_text())
        attempt = result["attempts"][0]
        report = json.loads((folder / attempt["run_dir"] / "report.json").read_text())
        walls.append(result["seconds"])
        tests.append(critical_tests(report) + attempt["official"]["test_seconds"])
        resolved += attempt["official"]["status"] == "resolved"
    return {
        "workers": workers,
        "instances": len(loaded),
        "resolved": resolved,
        "wall": wall,
        "per_hour": len(loaded) * 3600 / wall,
        "instance_wall": statistics.median(walls),
        "tests": statistics.median(tests),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--keep", action="store_true", help="Keep the runs' folders.")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="frognano-eval-bench-"))
    try:
        dataset = build_dataset(root / "dataset")
        instances = root / "instances.jsonl"
        copies(dataset.instances_path, instances, set(dataset.broken), args.instances)
        rows = [measure(root, instances, dataset.repos, w) for w in args.workers]
    finally:
        if args.keep:
            print(f"the runs are in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{'workers':>7} {'instances':>9} {'resolved':>8} {'wall s':>8} {'per hour':>9} "
          f"{'inst wall s':>11} {'tests s':>8} {'overhead s':>10} {'ratio':>6}")  # fmt: skip
    for row in rows:
        overhead = row["instance_wall"] - row["tests"]
        ratio = row["instance_wall"] / row["tests"] if row["tests"] else float("nan")
        print(
            f"{row['workers']:>7} {row['instances']:>9} {row['resolved']:>8} "
            f"{row['wall']:>8.1f} {row['per_hour']:>9.0f} {row['instance_wall']:>11.2f} "
            f"{row['tests']:>8.2f} {overhead:>10.2f} {ratio:>5.1f}x"
        )
    base = rows[0]
    for row in rows[1:]:
        print(f"{row['workers']} workers: {row['per_hour'] / base['per_hour']:.2f}x the "
              f"throughput of {base['workers']}")  # fmt: skip
    if any(row["resolved"] != row["instances"] for row in rows):
        raise SystemExit("an instance the scripted agent fixes was not resolved")


if __name__ == "__main__":
    main()
