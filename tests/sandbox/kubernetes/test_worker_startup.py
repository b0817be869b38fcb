"""`frognano worker` with the Kubernetes backend proves the sandbox network is closed first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes.kube import FakeKube, running_fake_kube

pytestmark = pytest.mark.timeout(120)
POLICIES = Path(__file__).resolve().parents[3] / "policies"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeKube]:
    with running_fake_kube() as server:
        yield server


def worker_env(tmp_path: Path, kubeconfig: Path, **extra: str) -> dict[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    (tmp_path / "app.pem").write_bytes(pem)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    env.update(
        FROGNANO_SANDBOX="kubernetes",
        FROGNANO_K8S_KUBECONFIG=str(kubeconfig),
        FROGNANO_GITHUB_APP_ID="12345",
        FROGNANO_GITHUB_PRIVATE_KEY_PATH=str(tmp_path / "app.pem"),
        FROGNANO_POLICY_DIR=str(POLICIES),
        # Nothing listens here: a worker that got past its checks keeps retrying Redis, which
        # is where these tests stop it.
        FROGNANO_REDIS_URL="redis://127.0.0.1:9/0",
        FROGNANO_LOG_FORMAT="json",
        **extra,
    )
    return env


def start(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "frognano", "worker"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(proc: subprocess.Popen[str], needle: str, seconds: float = 90) -> list[str]:
    """Lines the worker printed up to the one containing `needle`; then it is stopped."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if needle in line:
                return lines
        raise AssertionError(f"{needle!r} never appeared:\n{''.join(lines)}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def test_the_worker_starts_once_the_probe_pod_reaches_nothing(
    fake: FakeKube, tmp_path: Path
) -> None:
    env = worker_env(tmp_path, fake.kubeconfig(tmp_path / "kubeconfig"))
    before = set(fake.pods)
    lines = wait_for(start(env), "worker.network_check_passed")
    assert "probes blocked" in lines[-1]
    assert set(fake.pods) <= before  # the probe pod is gone


def test_the_worker_refuses_to_start_when_the_check_cannot_prove_isolation(
    tmp_path: Path,
) -> None:
    env = worker_env(tmp_path, tmp_path / "missing-kubeconfig")
    done = subprocess.run(
        [sys.executable, "-m", "frognano", "worker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "could not prove that the sandbox namespace" in done.stderr
    assert "FROGNANO_K8S_NETWORK_CHECK=warn" in done.stderr


def test_an_admin_can_override_the_check_explicitly(tmp_path: Path) -> None:
    env = worker_env(tmp_path, tmp_path / "missing-kubeconfig", FROGNANO_K8S_NETWORK_CHECK="warn")
    lines = wait_for(start(env), "worker.network_check_failed")
    assert "FROGNANO_K8S_NETWORK_CHECK=warn" in lines[-1]
