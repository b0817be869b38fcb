"""Median latency of trivial commands through the local sandbox versus plain subprocess.

Runs, interleaved in one process so the machine's state is the same for each: a plain
subprocess, a sandboxed command as FrogNano runs it (seccomp filter, capped /dev/shm, fresh
keyring), and the same sandbox with a filter that allows everything, which shows what the
filter itself costs. Prints the medians and their ratios. Usage:

    python benchmarks/sandbox_exec.py [--runs 200] [--mechanism auto|bwrap|unshare]

docs/sandbox.md records these beside the figures from before the hardening.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import pyseccomp

from frognano.sandbox import SandboxOptions
from frognano.sandbox.local import LocalSandbox


def allow_all() -> bytes:
    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


async def plain(command: str) -> float:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        "/bin/bash", "-c", command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    await proc.communicate()
    return time.perf_counter() - started


async def sandboxed(box: LocalSandbox, command: str) -> float:
    started = time.perf_counter()
    result = await box.exec(command)
    elapsed = time.perf_counter() - started
    if not result.ok:
        raise SystemExit(f"sandboxed command failed: {result.output}")
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--mechanism", default="auto", choices=("auto", "bwrap", "unshare"))
    parser.add_argument("--command", default="true")
    args = parser.parse_args()

    python_env = Path("/usr") if args.mechanism == "bwrap" and os.geteuid() == 0 else None
    options = SandboxOptions(local_mechanism=args.mechanism, python_env=python_env)
    started = time.perf_counter()
    box = await LocalSandbox.create(options)
    create_s = time.perf_counter() - started
    open_box = await LocalSandbox.create(options)
    open_box.layout.seccomp.write_bytes(allow_all())
    try:
        for _ in range(5):  # warm every path (page cache, first exec of each binary)
            await plain(args.command)
            await sandboxed(box, args.command)
            await sandboxed(open_box, args.command)
        base: list[float] = []
        boxed: list[float] = []
        unfiltered: list[float] = []
        for _ in range(args.runs):  # interleaved, so drift in machine load hits all alike
            base.append(await plain(args.command))
            boxed.append(await sandboxed(box, args.command))
            unfiltered.append(await sandboxed(open_box, args.command))
    finally:
        await box.close()
        await open_box.close()

    def ms(values: list[float]) -> str:
        quartiles = statistics.quantiles(values, n=4)
        return (
            f"median {statistics.median(values) * 1000:7.2f} ms   "
            f"p25 {quartiles[0] * 1000:6.2f}   p75 {quartiles[2] * 1000:6.2f}"
        )

    print(
        f"command: {args.command!r}   runs: {args.runs}   mechanism: {box.mechanism}   "
        f"sandbox creation: {create_s * 1000:.0f} ms"
    )
    print(f"plain subprocess          {ms(base)}")
    print(f"local sandbox             {ms(boxed)}")
    print(f"  with an allow-all filter {ms(unfiltered)}")
    ratio = statistics.median(boxed) / statistics.median(base)
    print(f"ratio (sandbox / plain, medians): {ratio:.1f}x")
    cost = statistics.median(boxed) / statistics.median(unfiltered)
    print(f"ratio (sandbox / allow-all filter, medians): {cost:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
