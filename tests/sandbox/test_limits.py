"""Resource limits, timeouts and output caps, each pushed past its edge in a real sandbox."""

from __future__ import annotations

import asyncio
import resource
import secrets

from frognano.sandbox import SandboxLimits
from frognano.sandbox.local import LocalSandbox
from tests.conftest import MakeSandbox, processes_of_uid, processes_with, wait_until

MiB = 1024 * 1024


async def test_fork_bomb_contained(make_sandbox: MakeSandbox) -> None:
    box = await make_sandbox(SandboxLimits(processes=64))
    try:
        run = asyncio.create_task(box.exec("bomb() { bomb | bomb & }; bomb; sleep 100", timeout=8))
        peak = 0
        while not run.done():
            if box.host_uid is not None:
                peak = max(peak, len(processes_of_uid(box.host_uid)))
            await asyncio.sleep(0.05)
        result = run.result()
        assert result.timed_out
        assert "Resource temporarily unavailable" in result.output  # it hit the limit
        if box.host_uid is not None:
            # Root launches each sandbox as its own host uid, so the host can count them.
            assert 32 <= peak <= 64 + 4, peak
            assert wait_until(lambda: not processes_of_uid(box.host_uid or -1))
        after = await box.exec("echo alive")
        assert after.output == "alive\n"
    finally:
        await box.close()


async def test_memory_hog_contained(make_sandbox: MakeSandbox) -> None:
    box = await make_sandbox(SandboxLimits(memory_bytes=256 * MiB))
    try:
        result = await box.exec(
            "python3 -c 'x = bytearray(1024 * 1024 * 1024); print(\"got it\")'", timeout=60
        )
        assert result.exit_code != 0
        assert "got it" not in result.output
        assert "MemoryError" in result.output
        # A modest allocation under the limit still works.
        small = await box.exec("python3 -c 'x = bytearray(32 * 1024 * 1024); print(len(x))'")
        assert small.output.strip() == str(32 * MiB)
    finally:
        await box.close()


async def test_file_size_limited(make_sandbox: MakeSandbox) -> None:
    box = await make_sandbox(SandboxLimits(file_size_bytes=4 * MiB))
    try:
        result = await box.exec("head -c 10M /dev/zero > /tmp/big; stat -c %s /tmp/big")
        assert "File size limit exceeded" in result.output or "File too large" in result.output
        assert result.output.strip().endswith(str(4 * MiB))
    finally:
        await box.close()


async def test_open_files_limited(make_sandbox: MakeSandbox) -> None:
    box = await make_sandbox(SandboxLimits(open_files=64))
    try:
        limit = await box.exec("ulimit -n; ulimit -Hn")
        assert limit.output.split() == ["64", "64"]
        raised = await box.exec("ulimit -n 4096")
        assert raised.exit_code != 0  # the hard limit cannot be raised from inside
        many = await box.exec(
            "python3 -c \"fs = [open('/dev/null') for _ in range(200)]\"", timeout=30
        )
        assert "Too many open files" in many.output
    finally:
        await box.close()


async def test_limits_clamped_to_host_hard_limits(make_sandbox: MakeSandbox) -> None:
    # Asking for more than this process may have is clamped instead of failing the sandbox.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    box = await make_sandbox(SandboxLimits(open_files=hard * 4 if hard > 0 else 1))
    try:
        result = await box.exec("ulimit -Hn")
        expected = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
        assert result.output.strip() == expected
    finally:
        await box.close()


async def test_timeout_kills_grandchildren_and_setsid_escapees(sandbox: LocalSandbox) -> None:
    marker = f"{secrets.randbelow(10**6) + 10**6}.{secrets.randbelow(900) + 100}"
    result = await sandbox.exec(
        f"(sleep {marker}1 &) ; "  # orphaned grandchild
        f"setsid sleep {marker}2 </dev/null >/dev/null 2>&1 & "  # own session, no pipes
        f"nohup sleep {marker}3 >/dev/null 2>&1 & "
        f"sleep {marker}4",
        timeout=1,
    )
    assert result.timed_out
    assert result.exit_code is None
    assert 0.9 < result.duration < 30
    assert wait_until(lambda: not processes_with(f"sleep {marker}"))


async def test_background_processes_die_with_their_command(sandbox: LocalSandbox) -> None:
    marker = f"{secrets.randbelow(10**6) + 10**6}.5"
    result = await sandbox.exec(f"setsid sleep {marker} </dev/null >/dev/null 2>&1 & echo started")
    assert result.ok
    assert result.output == "started\n"
    assert wait_until(lambda: not processes_with(f"sleep {marker}"))


async def test_large_output_capped_keeping_head_and_tail(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec(
        "echo HEAD-MARKER; head -c 50000000 /dev/zero | tr '\\0' x; echo; echo TAIL-MARKER",
        output_limit=100_000,
        timeout=120,
    )
    assert result.ok
    assert result.truncated
    assert result.output.startswith("HEAD-MARKER\n")
    assert result.output.endswith("TAIL-MARKER\n")
    assert len(result.output) < 100_200
    assert "bytes of output omitted" in result.output


async def test_output_under_cap_is_whole(sandbox: LocalSandbox) -> None:
    result = await sandbox.exec("seq 1 20000", output_limit=1_000_000)
    assert not result.truncated
    assert result.output == "".join(f"{i}\n" for i in range(1, 20001))
