"""`frognano eval` as a real process against the test dataset and a scripted model server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes.model_server import ScriptedModelServer


@dataclass(frozen=True)
class EvalRun:
    returncode: int
    stderr: str
    out: Path

    @property
    def summary(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.out / "summary.json").read_text())
        return data

    def result(self, instance_id: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(
            (self.out / "instances" / instance_id / "result.json").read_text()
        )
        return data

    def predictions(self) -> list[dict[str, Any]]:
        text = (self.out / "predictions.jsonl").read_text()
        return [json.loads(line) for line in text.splitlines()]


def eval_env(scratch: Path, server: ScriptedModelServer | None) -> dict[str, str]:
    """The environment of a `frognano eval` process: the model server (if any), a baseline
    cache and the sandboxes' temporary folders of its own, logs kept quiet."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    if server is not None:
        env["FROGNANO_MODEL_BASE_URL"] = server.base_url
    env["FROGNANO_LOG_LEVEL"] = "WARNING"
    env["FROGNANO_BASELINE_CACHE"] = str(scratch / "baselines")
    sandboxes = scratch / "sandboxes"
    sandboxes.mkdir(parents=True, exist_ok=True)
    env["TMPDIR"] = str(sandboxes)
    return env


def eval_argv(instances: Path, repos: Path, out: Path, *more: str) -> list[str]:
    return [
        sys.executable, "-m", "frognano", "eval", str(instances), "--repos", str(repos),
        "--out", str(out), "--sandbox", "local", *more,
    ]  # fmt: skip


def run_eval(
    instances: Path,
    repos: Path,
    out: Path,
    *more: str,
    server: ScriptedModelServer | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> EvalRun:
    done = subprocess.run(
        eval_argv(instances, repos, out, *more),
        env={**eval_env(out.parent / f"{out.name}-scratch", server), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return EvalRun(done.returncode, done.stderr, out)
