"""The toolchain inside: a repository's tests run with the chosen Python environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from frognano.sandbox import SandboxOptions, create_sandbox
from frognano.sandbox.local import LocalSandbox
from frognano.sandbox.netcheck import (
    CONNECT,
    DEFAULT_PROBES,
    check_network,
    host_listener,
    loopback_service,
)
from tests.conftest import require_mechanism

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "calculator"


async def test_pytest_runs_inside_with_default_environment() -> None:
    require_mechanism("auto")
    async with await create_sandbox("local", SandboxOptions()) as box:
        await box.upload_tree(EXAMPLE)
        result = await box.exec("python -m pytest -q -p no:cacheprovider", timeout=300)
        assert result.exit_code == 1, result.output  # the example's one failing test
        assert "1 failed, 3 passed" in result.output
        failing = await box.exec("python -c 'import calc; calc.mean([])'", timeout=60)
        assert "ZeroDivisionError" in failing.output


async def test_repository_venv_is_used_when_asked(tmp_path: Path) -> None:
    require_mechanism("auto")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)
    async with await create_sandbox("local", SandboxOptions(repo_venv=repo / ".venv")) as box:
        assert isinstance(box, LocalSandbox)
        result = await box.exec("python -c 'import sys; print(sys.prefix)'; echo $VIRTUAL_ENV")
        assert result.output.split() == [str(repo / ".venv")] * 2


async def test_network_check_blocks_everything(tmp_path: Path) -> None:
    require_mechanism("auto")
    async with host_listener() as (port, reached):
        host_probe = loopback_service(f"tcp://localhost:{port}", "host server")
        assert host_probe is not None
        # The probe itself works: from the host it reaches the listener.
        done = subprocess.run(
            ["bash", "-c", CONNECT, "probe", "127.0.0.1", str(port)],
            check=False,
            capture_output=True,
        )
        assert done.returncode == 0
        import asyncio

        for _ in range(50):
            if reached:
                break
            await asyncio.sleep(0.02)
        assert reached
        reached.clear()
        async with await create_sandbox("local", SandboxOptions()) as box:
            results = await check_network(box, [*DEFAULT_PROBES, host_probe])
    assert [r.name for r in results][:2] == ["network interfaces", "DNS resolution"]
    assert len(results) == 2 + len(DEFAULT_PROBES) + 1
    assert all(r.blocked for r in results), results
    assert reached == []
