"""`frognano serve` as a real process: it answers, and SIGTERM stops it cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.app.web.conftest import POLICIES, REDIS_URL, SECRET, free_port


def environment(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("FROGNANO_")}
    return {
        **clean,
        "FROGNANO_POLICY_DIR": str(POLICIES),
        "FROGNANO_REDIS_URL": REDIS_URL,
        "FROGNANO_LOG_FORMAT": "json",
        **extra,
    }


def wait_for_health(url: str, proc: subprocess.Popen[str], within: float = 30) -> httpx.Response:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"serve exited early: {proc.communicate()}"
        try:
            return httpx.get(f"{url}/healthz", timeout=1)
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("serve never answered /healthz")


def test_serve_answers_then_stops_cleanly_on_sigterm() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "frognano", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env={**environment(), "FROGNANO_WEBHOOK_SECRET": SECRET},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        health = wait_for_health(url, proc)
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        assert httpx.get(f"{url}/readyz", timeout=5).status_code == 200
        metrics = httpx.get(f"{url}/metrics", timeout=5).text
        assert "frognano_policy_generation 1.0" in metrics
        assert "process_cpu_seconds_total" in metrics
        unsigned = httpx.post(f"{url}/webhooks/github", content=b"{}", timeout=5)
        assert unsigned.status_code == 401
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    assert "web.stopped" in stderr
    assert SECRET not in stderr


def test_serve_without_a_webhook_secret_exits_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "frognano", "serve", "--port", str(free_port())],
        env={**environment(), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "FROGNANO_WEBHOOK_SECRET" in done.stderr


def test_serve_with_an_invalid_policy_exits_2(tmp_path: Path) -> None:
    (tmp_path / "10-bad.yaml").write_text("version: 1\nbogus: 1\n")
    done = subprocess.run(
        [sys.executable, "-m", "frognano", "serve", "--port", str(free_port())],
        env={
            **environment(),
            "FROGNANO_WEBHOOK_SECRET": SECRET,
            "FROGNANO_POLICY_DIR": str(tmp_path),
            "COLUMNS": "200",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "bogus" in done.stderr
