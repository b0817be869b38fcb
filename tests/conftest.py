"""Shared fixtures: real sandboxes of each mechanism, and helpers to inspect host processes."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import structlog

from frognano.errors import SandboxUnavailable
from frognano.sandbox import SandboxLimits, SandboxOptions
from frognano.sandbox.isolation import choose_mechanism
from frognano.sandbox.local import LocalSandbox
from tests.packageindex import PROXPI_ENV_VAR, PROXPI_VERSION, PackageIndex, serve_package_index

# Set by .ci/run: a mechanism that cannot run here fails the suite instead of being skipped,
# so CI always exercises both. (Not FROGNANO_*: that prefix is reserved for settings.)
STRICT = os.environ.get("FNTEST_REQUIRE_ALL_MECHANISMS") == "1"
MECHANISMS = ("unshare", "bwrap")

MakeSandbox = Callable[..., Awaitable[LocalSandbox]]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that run code as the host's `nobody` (they take `public_copy`) share one xdist
    worker: RLIMIT_NPROC counts every process of a uid host-wide, so two of them at once would
    each see the other's processes against their limit."""
    for item in items:
        if "public_copy" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("nobody"))


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """A command run in-process (typer's CliRunner) configures logging for the whole process;
    each test starts from the configuration the one before it found, so no test's result
    depends on which tests ran first."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.configure(**saved)
    root.handlers[:] = handlers
    root.setLevel(level)


def require_mechanism(name: str) -> None:
    try:
        choose_mechanism(name)
    except SandboxUnavailable as exc:
        if STRICT:
            pytest.fail(f"{name} sandbox unavailable in strict mode: {exc}")
        pytest.skip(f"{name} sandbox unavailable here: {exc}")


def options_for(mechanism: str, **kwargs: object) -> SandboxOptions:
    """Options for `mechanism` on this host."""
    return SandboxOptions(local_mechanism=mechanism, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(params=MECHANISMS)
def mechanism(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    require_mechanism(name)
    return name


@pytest.fixture
async def sandbox(mechanism: str) -> AsyncIterator[LocalSandbox]:
    box = await LocalSandbox.create(options_for(mechanism))
    try:
        yield box
    finally:
        await box.close()


@pytest.fixture
async def default_sandbox() -> AsyncIterator[LocalSandbox]:
    """A sandbox of this host's default mechanism, for tests of code above the sandbox."""
    name = choose_mechanism("auto")
    box = await LocalSandbox.create(options_for(name))
    try:
        yield box
    finally:
        await box.close()


@pytest.fixture
def make_sandbox(mechanism: str) -> MakeSandbox:
    """Factory for sandboxes with custom limits; each test closes what it makes."""

    async def make(limits: SandboxLimits | None = None, **kwargs: object) -> LocalSandbox:
        if limits is not None:
            kwargs["limits"] = limits
        return await LocalSandbox.create(options_for(mechanism, **kwargs))

    return make


@pytest.fixture(scope="session")
def package_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PackageIndex]:
    """proxpi in front of a static upstream index, one for the session (tests/packageindex.py).

    It starts empty; tests publish wheels with `add_wheels`, under names of their own, since
    every test of the session shares it.
    """
    python = os.environ.get(PROXPI_ENV_VAR)
    if not python or not Path(python).exists():
        message = (
            f"{PROXPI_ENV_VAR} must name the Python of an environment with proxpi=="
            f"{PROXPI_VERSION} (python3 -m venv /tmp/px && /tmp/px/bin/pip install "
            f"proxpi=={PROXPI_VERSION}; .ci/run builds one)"
        )
        if STRICT:
            pytest.fail(message)
        pytest.skip(message)
    with serve_package_index(Path(python), tmp_path_factory.mktemp("package-index")) as index:
        yield index


def processes_with(prefix: str) -> list[int]:
    """Host pids whose command line starts with `prefix` (the commands themselves, not the
    launchers whose arguments mention them)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if cmdline.startswith(prefix):
            found.append(int(entry))
    return found


def processes_of_uid(uid: int) -> list[int]:
    """Host pids whose real uid is `uid`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append(int(entry))
                        break
        except OSError:
            continue
    return found


def wait_until(predicate: Callable[[], bool], within: float = 10.0) -> bool:
    """Poll `predicate` until true or `within` seconds pass (processes die asynchronously)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
