"""Harness time per agent step, per tool and peak memory, next to the same operations done
directly on the host in the same run.

A scripted model server with no latency drives a full run (default 150 steps) over a generated
repository of about 1,000 files, through the real model client, tools, loop, trajectory and
local sandbox. Afterwards the same tool calls are replayed directly on a host copy of the
repository (plain file reads and writes, `glob`, `bash -c`), and both are printed side by side.
Usage:

    python benchmarks/harness_overhead.py [--steps 150] [--files 1000] [--mechanism auto]

"harness per step" is a step's wall time minus the model call: tools (sandbox included),
the loop and the trajectory. The model call (request building, HTTP to the zero-latency server,
response parsing) is printed separately.
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
import itertools
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from frognano.agent.loop import AgentLimits, AgentLoop
from frognano.agent.model import ModelClient
from frognano.agent.tools.box import ToolBox
from frognano.agent.tools.schema import TOOL_DEFINITIONS, TOOLS_JSON
from frognano.agent.trajectory import TrajectoryWriter
from frognano.agent.turns import AssistantTurn, Conversation, ToolCall, ToolResult
from frognano.sandbox import SandboxOptions
from frognano.sandbox.local import LocalSandbox
from tests.fakes.model_server import ScriptedModelServer, Turn

WORKSPACE = "/workspace"


def make_repo(root: Path, files: int) -> None:
    """Packages of small modules with functions and constants, plus a test per package."""
    packages = max(1, files // 25)
    for p in range(packages):
        package = root / f"pkg{p:02d}"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(f'"""Package {p}."""\n')
        for m in range(24):
            lines = [f'"""Module {m} of package {p}."""', "", f"VALUE_{m} = {m}", ""]
            for f in range(40):
                lines += [f"def func_{f}(x):", f"    return x * {f} + VALUE_{m}", "", ""]
            (package / f"mod{m:02d}.py").write_text("\n".join(lines))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


def plan(steps: int, packages: int) -> list[tuple[str, dict[str, Any]]]:
    """A deterministic mix of calls shaped like a real run: mostly reads and shell commands."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for i in range(steps - 1):
        choice = i % 10
        # An Edit (choices 2 and 9) changes the file the step before it read (1 and 8).
        at = i - 1 if choice in (2, 9) else i
        p, m = at % packages, (at * 7) % 24
        path = f"{WORKSPACE}/pkg{p:02d}/mod{m:02d}.py"
        if choice == 0:
            calls.append(("Glob", {"pattern": f"pkg{p:02d}/**/*.py"}))
        elif choice in (1, 5, 8):
            calls.append(("Read", {"file_path": path}))
        elif choice in (2, 9):
            old = f"return x * {(i // 10) % 40} + VALUE_{m}\n"  # never the same line twice
            new = f"{old[:-1]} + {i}\n"
            calls.append(("Edit", {"file_path": path, "old_string": old, "new_string": new}))
        elif choice in (3, 6):
            calls.append(
                ("Bash", {"command": f"grep -rn 'def func_{i % 40}' pkg{p:02d} | head -5"})
            )
        elif choice == 4:
            calls.append(("Bash", {"command": f"ls pkg{p:02d} | wc -l"}))
        else:
            note = f"/tmp/notes_{i}.md"  # noqa: S108 - the sandbox's own /tmp
            calls.append(("Write", {"file_path": note, "content": f"step {i}\n" * 20}))
    return calls


class Timed:
    """Wraps the model client and the tool box to time each part of each step."""

    def __init__(self, model: ModelClient, tools: ToolBox) -> None:
        self.model, self.tools = model, tools
        self.model_times: list[float] = []
        self.tool_times: dict[str, list[float]] = defaultdict(list)
        self.request_starts: list[float] = []
        self.errors: list[str] = []

    async def complete(
        self,
        conversation: Conversation,
        *,
        extra: list[dict[str, Any]] | None = None,
        with_tools: bool = True,
    ) -> AssistantTurn:
        started = time.perf_counter()
        self.request_starts.append(started)
        turn = await self.model.complete(conversation, extra=extra, with_tools=with_tools)
        self.model_times.append(time.perf_counter() - started)
        return turn

    async def call(self, call: ToolCall) -> ToolResult:
        started = time.perf_counter()
        result = await self.tools.call(call)
        self.tool_times[call.name].append(time.perf_counter() - started)
        if result.is_error:
            self.errors.append(f"{call.name}: {result.content[:200]}")
        return result


def direct(root: Path, name: str, args: dict[str, Any]) -> float:
    """The same operation done plainly on the host copy; returns its duration."""

    def host(path: str) -> Path:
        if path.startswith(WORKSPACE):
            return root / path[len(WORKSPACE) + 1 :]
        return root / ".tmp" / Path(path).name

    started = time.perf_counter()
    if name == "Read":
        text = host(args["file_path"]).read_text()
        "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(text.splitlines()[:2000], 1))
    elif name == "Edit":
        target = host(args["file_path"])
        text = target.read_text()
        if text.count(args["old_string"]) != 1:
            raise SystemExit(f"direct replay: {args['old_string']!r} not unique in {target}")
        target.write_text(text.replace(args["old_string"], args["new_string"]))
    elif name == "Write":
        target = host(args["file_path"])
        target.parent.mkdir(exist_ok=True)
        target.write_text(args["content"])
    elif name == "Glob":
        pattern = re.compile(fnmatch.translate(args["pattern"].replace("**/", "")))
        found = [
            path
            for path in root.rglob("*")
            if ".git" not in path.parts and path.is_file() and pattern.match(path.name)
        ]
        sorted(found, key=lambda path: path.stat().st_mtime, reverse=True)[:100]
    elif name == "Bash":
        subprocess.run(
            ["bash", "-c", args["command"]],
            cwd=root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    return time.perf_counter() - started


async def main() -> None:  # noqa: PLR0915 - a linear script reads best
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--mechanism", default="auto", choices=("auto", "bwrap", "unshare"))
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="frognano-bench-"))
    try:
        repo = work / "repo"
        make_repo(repo, args.files)
        packages = max(1, args.files // 25)
        calls = plan(args.steps, packages)
        script = [Turn(reasoning=f"Step {i}: next.", calls=[call]) for i, call in enumerate(calls)]
        script.append(Turn(reasoning="Done.", content="Finished the benchmark run."))
        python_env = Path("/usr") if args.mechanism == "bwrap" and os.geteuid() == 0 else None
        options = SandboxOptions(local_mechanism=args.mechanism, python_env=python_env)
        with ScriptedModelServer(script, keep_requests=1) as server:
            async with await LocalSandbox.create(options) as box:
                await box.upload_tree(repo, exclude=[".git"])
                async with ModelClient(
                    base_url=server.base_url,
                    model="frognano",
                    api_key=None,
                    tools_json=TOOLS_JSON,
                    tool_definitions=TOOL_DEFINITIONS,
                ) as client:
                    timed = Timed(client, ToolBox(box))
                    with TrajectoryWriter(work / "trajectory.jsonl") as trajectory:
                        loop = AgentLoop(
                            timed,
                            timed,
                            title="Benchmark",
                            body="A scripted run.",
                            limits=AgentLimits(max_steps=args.steps),
                            trajectory=trajectory,
                        )
                        started = time.perf_counter()
                        result = await loop.run()
                        finished = time.perf_counter()
                    history_bytes = len(loop.conversation.messages_json())
        peak_self_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if timed.errors:
            print("tool errors during the run (the plan is wrong):", *timed.errors, sep="\n  ")
        # Replay directly on a host copy, in the same order, so edits see the same state.
        (repo / ".tmp").mkdir()
        direct_times: dict[str, list[float]] = defaultdict(list)
        for name, call_args in calls:
            direct_times[name].append(direct(repo, name, call_args))
    finally:
        shutil.rmtree(work)

    starts = [*timed.request_starts, finished]
    steps = [b - a for a, b in itertools.pairwise(starts)]
    harness = [step - model for step, model in zip(steps, timed.model_times, strict=False)]
    position: dict[str, int] = defaultdict(int)
    direct_per_step = []
    for name, _ in calls:
        direct_per_step.append(direct_times[name][position[name]])
        position[name] += 1
    tool_steps = harness[: len(direct_per_step)]
    overhead = [h - d for h, d in zip(tool_steps, direct_per_step, strict=False)]

    def ms(values: list[float]) -> str:
        return f"{1000 * statistics.median(values):7.2f} ms" if values else "      -   "

    print(
        f"run: {result.stop_reason.value} after {result.stats.steps} steps in "
        f"{finished - started:.1f} s; {args.files} files; "
        f"final history {history_bytes / 1e6:.2f} MB"
    )
    print(f"mechanism: {box.mechanism}")
    print()
    print(f"{'per step (median)':28} {'harness':>10} {'direct':>10} {'overhead':>10}")
    print(f"{'all tool steps':28} {ms(tool_steps)} {ms(direct_per_step)} {ms(overhead)}")
    for name in sorted(timed.tool_times):
        own, plain = timed.tool_times[name], direct_times[name]
        extra = [a - b for a, b in zip(own, plain, strict=False)]
        print(f"  {name + f' ({len(own)} calls)':26} {ms(own)} {ms(plain)} {ms(extra)}")
    print(f"{'model call (zero latency)':28} {ms(timed.model_times)}")
    print()
    print(f"peak RSS of the harness process: {peak_self_mb:.0f} MB")
    print(json.dumps({
        "median_harness_step_ms": round(1000 * statistics.median(tool_steps), 2),
        "median_direct_step_ms": round(1000 * statistics.median(direct_per_step), 2),
        "median_overhead_step_ms": round(1000 * statistics.median(overhead), 2),
        "median_model_call_ms": round(1000 * statistics.median(timed.model_times), 2),
        "peak_rss_mb": round(peak_self_mb, 1),
    }))  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
