"""A built environment in a sandbox: read-only where the agent and the tests run, first on PATH,
writable only in the sandbox that builds it; the egress folder only where it is given."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from frognano.sandbox.local import LocalSandbox
from frognano.sandbox.paths import EGRESS, ENVIRONMENT
from tests.conftest import options_for


@pytest.fixture
def environment() -> Iterator[Path]:
    # Under /tmp with searchable parents: root's bwrap mechanism runs as another uid.
    folder = Path(tempfile.mkdtemp(prefix="fn-env-", dir="/tmp"))
    folder.chmod(0o755)
    (folder / "bin").mkdir()
    tool = folder / "bin" / "envtool"
    tool.write_text("#!/bin/sh\necho from-the-environment\n")
    tool.chmod(0o755)
    yield folder
    for path in sorted(folder.rglob("*"), reverse=True):
        path.unlink() if not path.is_dir() or path.is_symlink() else path.rmdir()
    folder.rmdir()


async def test_the_environment_is_read_only_and_first_on_path(
    mechanism: str, environment: Path
) -> None:
    async with await LocalSandbox.create(options_for(mechanism, environment=environment)) as box:
        found = await box.exec("envtool; echo $VIRTUAL_ENV; echo $PATH")
        lines = found.output.splitlines()
        assert lines[0] == "from-the-environment"
        assert lines[1] == ENVIRONMENT
        assert lines[2].startswith(f"{ENVIRONMENT}/bin:")
        wrote = await box.exec(f"echo planted > {ENVIRONMENT}/bin/planted")
        assert not wrote.ok
        assert "Read-only file system" in wrote.output
        gone = await box.exec(f"rm -f {ENVIRONMENT}/bin/envtool")
        assert not gone.ok
        assert not (await box.exec(f"test -e {EGRESS}")).ok, "no way out was given"
    assert not (environment / "bin" / "planted").exists()
    assert (environment / "bin" / "envtool").exists()


async def test_only_the_building_sandbox_may_write_the_environment(
    mechanism: str, environment: Path
) -> None:
    options = options_for(mechanism, environment=environment, environment_writable=True)
    async with await LocalSandbox.create(options) as box:
        wrote = await box.exec(f"echo built > {ENVIRONMENT}/marker && ls -ln {ENVIRONMENT}")
        assert wrote.ok, wrote.output
    assert (environment / "marker").read_text() == "built\n"


async def test_the_egress_folder_is_bound_read_only_where_given(mechanism: str) -> None:
    folder = Path(tempfile.mkdtemp(prefix="fn-egress-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        (folder / "note").write_text("hello")
        async with await LocalSandbox.create(options_for(mechanism, egress=folder)) as box:
            seen = await box.exec(f"cat {EGRESS}/note; touch {EGRESS}/x")
            assert seen.output.startswith("hello")
            assert not seen.ok
        assert sorted(os.listdir(folder)) == ["note"]
    finally:
        (folder / "note").unlink()
        folder.rmdir()
