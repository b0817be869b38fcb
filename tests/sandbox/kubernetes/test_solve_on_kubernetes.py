"""`frognano solve --sandbox kubernetes`: the whole pipeline in sandbox pods, through the real
client, against the fake API server and the scripted model server."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_solve import BUGGY, FIX, environment, issue, repo, solve_argv
from tests.fakes.kube import FakeKube, running_fake_kube
from tests.fakes.model_server import ScriptedModelServer

__all__ = ["issue", "repo"]  # fixtures shared with tests/cli/test_solve.py

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with running_fake_kube() as server:
        yield server


def test_solve_runs_every_stage_in_sandbox_pods(
    fake: FakeKube, repo: Path, issue: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with ScriptedModelServer(FIX) as server:
        env = environment(server, tmp_path)
        env["FROGNANO_K8S_KUBECONFIG"] = str(fake.kubeconfig(tmp_path / "kubeconfig"))
        env["FROGNANO_K8S_NAMESPACE"] = "sandboxes"
        done = subprocess.run(
            solve_argv(repo, issue, out, "--sandbox", "kubernetes"),
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=240,
        )
    assert done.returncode == 0, done.stderr
    assert "Patch ready for review: 1 file(s), +2 -0; tests: 2 passed" in done.stdout
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    assert report["sandbox"]["backend"] == "kubernetes"
    assert report["verification"]["comparison"]["fixed"] == ["tests/test_calc.py::test_empty"]
    assert (
        '+        raise ValueError("mean() of an empty list")' in (out / "patch.diff").read_text()
    )
    assert (repo / "calc.py").read_text() == BUGGY
    # One pod for the agent, a fresh one for each test run (the fix's one hunk reverted
    # included), all gone at the end.
    pods = {record.pod for record in fake.execs}
    assert len(pods) == 4
    assert not [key for key in fake.pods if key[0] == "sandboxes"]
    created = [record for record in fake.created if record["metadata"]["namespace"] == "sandboxes"]
    purposes = sorted(pod["metadata"]["labels"]["frognano.dev/purpose"] for pod in created)
    assert purposes == ["agent", "verify-baseline", "verify-hunk", "verify-patched"]
    assert all(pod["metadata"]["labels"]["frognano.dev/run-id"] for pod in created)
    # The policy's defaults shaped each pod.
    (container,) = created[0]["spec"]["containers"]
    assert container["image"] == "ghcr.io/frognano/sandbox-python:3.11"
    assert container["resources"]["limits"]["memory"] == "4Gi"
