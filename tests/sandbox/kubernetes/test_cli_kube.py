"""`frognano sandbox reap` and `frognano sandbox check-network --sandbox kubernetes` as real
processes against the fake API server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from frognano.sandbox.kubernetes.pod import EXPIRES, SELECTOR
from tests.fakes.kube import FakeKube, running_fake_kube

pytestmark = pytest.mark.timeout(120)
NAMESPACE = "cli-sandboxes"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeKube]:
    with running_fake_kube() as server:
        yield server


def frognano(fake: FakeKube, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    env["FROGNANO_K8S_KUBECONFIG"] = str(fake.kubeconfig(tmp_path / "kubeconfig"))
    env["FROGNANO_K8S_NAMESPACE"] = NAMESPACE
    env["COLUMNS"] = "200"  # one table row per line
    return subprocess.run(
        [sys.executable, "-m", "frognano", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def add(fake: FakeKube, name: str, phase: str, expires: datetime) -> None:
    labels = dict(pair.split("=") for pair in SELECTOR.split(","))
    labels[EXPIRES] = str(int(expires.timestamp()))
    fake.add_pod(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
            "spec": {"containers": [{"name": "sandbox", "image": "x"}]},
            "status": {"phase": phase},
        }
    )


def test_reap_lists_then_deletes(fake: FakeKube, tmp_path: Path) -> None:
    now = datetime.now(UTC)
    add(fake, "live", "Running", now + timedelta(hours=1))
    add(fake, "stale", "Running", now - timedelta(minutes=5))
    add(fake, "done", "Succeeded", now + timedelta(hours=1))
    dry = frognano(fake, tmp_path, "sandbox", "reap", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would delete" in dry.stdout
    assert "stale" in dry.stdout
    assert "done" in dry.stdout
    assert "live" not in dry.stdout
    assert {name for (ns, name) in fake.pods if ns == NAMESPACE} == {"live", "stale", "done"}
    done = frognano(fake, tmp_path, "sandbox", "reap")
    assert done.returncode == 0, done.stderr
    assert {name for (ns, name) in fake.pods if ns == NAMESPACE} == {"live"}
    again = frognano(fake, tmp_path, "sandbox", "reap")
    assert again.returncode == 0
    assert f"No sandbox pod to reap in {NAMESPACE}" in again.stdout


def test_reap_without_a_cluster_exits_2_with_what_to_set(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    env["FROGNANO_K8S_KUBECONFIG"] = str(tmp_path / "missing")
    done = subprocess.run(
        [sys.executable, "-m", "frognano", "sandbox", "reap"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "FROGNANO_K8S_KUBECONFIG" in done.stderr


def test_check_network_through_a_probe_pod(fake: FakeKube, tmp_path: Path) -> None:
    done = frognano(fake, tmp_path, "sandbox", "check-network", "--sandbox", "kubernetes")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "Kubernetes API server" in done.stdout
    assert "cloud metadata service" in done.stdout
    assert "REACHED" not in done.stdout
    assert "No probe got out" in done.stdout
    assert not [key for key in fake.pods if key[0] == NAMESPACE and key[1].startswith("frognano")]
