"""A plain-HTTP index on a host that is not this machine's loopback, as an in-cluster index
is: the admin's policy approving its URL is what makes pip and uv trust it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_solve_environment import (
    BUILD_WHEELS,
    MATHHELP,
    env_for,
    make_repo,
)
from tests.conftest import STRICT
from tests.packageindex import (
    PROXPI_ENV_VAR,
    PYTEST_WHEELS,
    WHEEL_CACHE,
    build_wheel,
    download_wheels,
    serve_package_index,
)


def _outside_address() -> str | None:
    """An address of this machine that is not loopback (pip trusts loopback by itself)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: it only picks a route
        address = str(probe.getsockname()[0])
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") else address


def test_an_approved_http_index_off_loopback_is_trusted(tmp_path: Path) -> None:
    python, address = os.environ.get(PROXPI_ENV_VAR), _outside_address()
    if not python or address is None:
        message = f"needs {PROXPI_ENV_VAR} and an address of this machine that is not loopback"
        if STRICT:
            pytest.fail(message)
        pytest.skip(message)
    wheels = tmp_path / "wheels"
    demo = build_wheel(wheels, "fn-httpdemo", "1.0", modules={"httpdemo.py": "V = 1\n"})
    mathhelp = build_wheel(wheels, "fn-mathhelp", "1.0", modules={"mathhelp.py": MATHHELP})
    with serve_package_index(Path(python), tmp_path / "index", host=address) as index:
        index.add_wheels(
            [demo, mathhelp, *download_wheels(WHEEL_CACHE, (*PYTEST_WHEELS, *BUILD_WHEELS))]
        )
        repo = make_repo(tmp_path / "project", {"requirements.txt": "fn-httpdemo==1.0\n"})
        done = subprocess.run(
            [sys.executable, "-m", "frognano", "env", "build", str(repo), "--index-url",
             index.url],
            env=env_for(None, tmp_path, tmp_path / "envcache"),
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    assert index.url.startswith(f"http://{address}:")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not a trusted or secure host" not in done.stdout + done.stderr
    installed = {p.name for p in (tmp_path / "envcache").glob("*/lib/*/site-packages/*")}
    assert "httpdemo.py" in installed, installed
