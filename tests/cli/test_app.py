"""The `frognano` command, run as a real process the way users run it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from frognano import __version__
from tests.conftest import require_mechanism

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "calculator"


def frognano(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("FROGNANO_")}
    return subprocess.run(
        [sys.executable, "-m", "frognano", *args],
        capture_output=True,
        text=True,
        env={**clean, "COLUMNS": "200", **(env or {})},
        timeout=300,
        check=False,
    )


def test_help_lists_the_commands_that_exist() -> None:
    top = frognano("--help")
    assert top.returncode == 0
    assert "sandbox" in top.stdout
    sandbox = frognano("sandbox", "--help")
    assert "check-network" in sandbox.stdout
    assert "run" in sandbox.stdout


def test_version() -> None:
    done = frognano("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"frognano {__version__}"


def test_bad_settings_exit_2_with_the_fix() -> None:
    done = frognano(
        "sandbox", "run", str(EXAMPLE), "--", "true", env={"FROGNANO_LOG_FORMAT": "xml"}
    )
    assert done.returncode == 2
    assert "FROGNANO_LOG_FORMAT" in done.stderr
    assert "'json' or 'console'" in done.stderr


def test_unknown_backend_is_bad_usage() -> None:
    done = frognano("sandbox", "run", "--sandbox", "docker", str(EXAMPLE), "--", "true")
    assert done.returncode == 2
    assert "'docker' is not one of 'local', 'kubernetes'" in done.stderr


def test_kubernetes_without_a_cluster_says_what_to_set(tmp_path: Path) -> None:
    missing = tmp_path / "no-kubeconfig"
    env = {"FROGNANO_K8S_KUBECONFIG": str(missing)}
    done = frognano(
        "sandbox", "run", "--sandbox", "kubernetes", str(EXAMPLE), "--", "true", env=env
    )
    assert done.returncode == 2
    assert "FROGNANO_K8S_KUBECONFIG" in done.stderr
    assert str(missing) in done.stderr


def test_sandbox_run_exits_with_the_example_tests_status() -> None:
    require_mechanism("unshare" if os.geteuid() == 0 else "bwrap")
    done = frognano(
        "sandbox",
        "run",
        str(EXAMPLE),
        "--",
        "python",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
    )
    # The example ships one failing test: the bug its ISSUE.md describes.
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 3 passed" in done.stdout


def test_sandbox_run_reports_exit_status_and_timeout(tmp_path: Path) -> None:
    require_mechanism("unshare" if os.geteuid() == 0 else "bwrap")
    (tmp_path / "marker.txt").write_text("inside\n")
    done = frognano("sandbox", "run", str(tmp_path), "--", "cat marker.txt; exit 7")
    assert done.returncode == 7
    assert done.stdout == "inside\n"
    slow = frognano("sandbox", "run", "--timeout", "1", str(tmp_path), "--", "sleep 30")
    assert slow.returncode == 124
    assert "killed after 1s" in slow.stderr


def test_sandbox_run_missing_directory() -> None:
    done = frognano("sandbox", "run", "/nonexistent/repo", "--", "true")
    assert done.returncode == 2
    assert "does not exist" in done.stderr


@pytest.mark.parametrize("redis_url", [None, "redis://localhost:6379/0"])
def test_check_network_passes(redis_url: str | None) -> None:
    require_mechanism("unshare" if os.geteuid() == 0 else "bwrap")
    env = {"FROGNANO_REDIS_URL": redis_url} if redis_url else None
    done = frognano("sandbox", "check-network", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No probe got out" in done.stdout
    assert "REACHED" not in done.stdout
    for probe in ("1.1.1.1:443", "169.254.169.254:80", "github.com", "server on the host"):
        assert probe in done.stdout


@pytest.mark.parametrize(
    ("content", "says"),
    [(b"", "is empty"), (b'garbage\n{"x": 1}\n', "has no readable event (2 unreadable")],
)
def test_trajectory_show_refuses_a_file_with_no_event(
    tmp_path: Path, content: bytes, says: str
) -> None:
    path = tmp_path / "trajectory.jsonl"
    path.write_bytes(content)
    done = frognano("trajectory", "show", str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert says in done.stderr
    assert "one JSON event per line" in done.stderr


def test_an_unreachable_kubernetes_api_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
    )
    done = frognano(
        "sandbox", "reap", env={"FROGNANO_K8S_KUBECONFIG": str(kubeconfig),
                                "FROGNANO_LOG_LEVEL": "ERROR"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        line for line in done.stderr.splitlines() if line.startswith("error: cannot reach ")
    ]
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert f"https://127.0.0.1:{port}" in done.stderr
