"""`frognano worker` with Redis unreachable: one error line and exit 1, no traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

POLICIES = Path(__file__).resolve().parents[2] / "policies"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_the_worker_says_in_one_line_that_redis_is_unreachable(tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "app.pem"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    url = f"redis://user:hunter2@127.0.0.1:{_closed_port()}/0"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    env.update(
        FROGNANO_GITHUB_APP_ID="12345",
        FROGNANO_GITHUB_PRIVATE_KEY_PATH=str(pem),
        FROGNANO_POLICY_DIR=str(POLICIES),
        FROGNANO_REDIS_URL=url,
        FROGNANO_LOG_LEVEL="WARNING",  # the start-up's info lines are not the point here
        COLUMNS="300",
    )
    done = subprocess.run(
        [sys.executable, "-m", "frognano", "worker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: cannot reach Redis at redis://user:***@127.0.0.1:")
    assert "FROGNANO_REDIS_URL" in lines[0]
    assert "hunter2" not in done.stderr
    assert done.stdout == ""
