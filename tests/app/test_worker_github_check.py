"""`frognano worker` checks GitHub at start: wrong App credentials or no answer is one line."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

from frognano.cli.worker import _require_github
from frognano.settings import Settings
from tests.app.web.conftest import REDIS_URL
from tests.fakes.github import FakeGitHub

POLICIES = Path(__file__).resolve().parents[2] / "policies"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        yield server


def _other_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _worker(
    tmp_path: Path, api_url: str, app_id: int, key: str
) -> subprocess.CompletedProcess[str]:
    """`frognano worker` on the machine's Redis (its check comes first and must pass)."""
    pem = tmp_path / "app.pem"
    pem.write_text(key)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROGNANO_")}
    env.update(
        FROGNANO_GITHUB_APP_ID=str(app_id),
        FROGNANO_GITHUB_PRIVATE_KEY_PATH=str(pem),
        FROGNANO_GITHUB_API_URL=api_url,
        FROGNANO_POLICY_DIR=str(POLICIES),
        FROGNANO_REDIS_URL=REDIS_URL,
        FROGNANO_LOG_LEVEL="WARNING",  # the start-up's info lines are not the point here
        COLUMNS="300",
    )
    return subprocess.run(
        [sys.executable, "-m", "frognano", "worker"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert done.stdout == ""
    assert lines[0].startswith("error: ")
    return lines[0]


def test_a_key_of_another_app_stops_the_worker_naming_the_settings(
    fake: FakeGitHub, tmp_path: Path
) -> None:
    line = _one_line(_worker(tmp_path, fake.base_url, fake.app_id, _other_key()), 2)
    assert f"GitHub at {fake.base_url} refused the App's credentials (HTTP 401 on GET /app" in line
    assert "FROGNANO_GITHUB_APP_ID" in line
    assert "FROGNANO_GITHUB_PRIVATE_KEY" in line
    assert "BEGIN" not in line  # never the key


def test_a_wrong_app_id_stops_the_worker_naming_the_settings(
    fake: FakeGitHub, tmp_path: Path
) -> None:
    key = fake.app_private_key.decode()
    line = _one_line(_worker(tmp_path, fake.base_url, fake.app_id + 41, key), 2)
    assert "Integration not found" in line  # GitHub's own words
    assert "FROGNANO_GITHUB_APP_ID" in line


def test_a_404_names_the_api_url_too(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.fail_next("GET", r"^/app$", status=404, body={"message": "Not Found"})
    key = fake.app_private_key.decode()
    line = _one_line(_worker(tmp_path, fake.base_url, fake.app_id, key), 2)
    assert "(HTTP 404 on GET /app)" in line
    assert "FROGNANO_GITHUB_PRIVATE_KEY" in line
    assert "FROGNANO_GITHUB_API_URL" in line


def test_a_github_that_fails_is_one_retryable_line(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.fail_next("GET", r"^/app$", status=502)
    key = fake.app_private_key.decode()
    line = _one_line(_worker(tmp_path, fake.base_url, fake.app_id, key), 1)
    assert line == (
        f"error: cannot reach GitHub at {fake.base_url} (HTTP 502 on GET /app); start the "
        "worker again once it answers, or fix FROGNANO_GITHUB_API_URL"
    )


def test_a_github_that_does_not_answer_is_one_retryable_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    line = _one_line(_worker(tmp_path, url, 12345, _other_key()), 1)
    assert line.startswith(f"error: cannot reach GitHub at {url} (no connection on GET /app)")


async def test_credentials_github_accepts_pass_the_check(
    fake: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(
        github_app_id=fake.app_id,
        github_private_key=SecretStr(fake.app_private_key.decode()),
        github_api_url=fake.base_url,
    )
    with caplog.at_level(logging.INFO, logger="frognano.cli.worker"):
        await _require_github(settings)
    assert "worker.github_check_passed" in caplog.text
    fake.fail_next("GET", r"^/app$", status=401, body={"message": "Bad credentials"})
    with pytest.raises(typer.Exit) as stopped:
        await _require_github(settings)
    assert stopped.value.exit_code == 2
