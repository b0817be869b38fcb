"""Median cost the Kubernetes backend adds per command, against the same local sandbox.

There is no cluster here, so the pod is the test suite's fake API server
(tests/fakes/kube.py), which runs each exec in a local sandbox. Both paths end in the same
kind of sandbox; the difference is what the backend adds: the WebSocket exec stream through
the real `kubernetes` client, the in-pod wrapper, a thread per stream. A real API server and
kubelet add their own hops on top. Run from the repository root:

    python benchmarks/k8s_exec.py [--runs 100] [--payload-mib 8]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from frognano.sandbox import Sandbox, SandboxOptions
from frognano.sandbox.kubernetes.backend import KubernetesSandbox
from frognano.sandbox.local import LocalSandbox
from tests.fakes.kube import running_fake_kube


async def timed(action: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await action()
    return time.perf_counter() - started


async def measure(
    local: Sandbox, pod: Sandbox, runs: int, payload: bytes
) -> dict[str, tuple[list[float], list[float]]]:
    async def trivial(box: Sandbox) -> None:
        result = await box.exec("true")
        if not result.ok:
            raise SystemExit(f"command failed: {result.output}")

    async def write_read(box: Sandbox) -> None:
        await box.write_file("/workspace/payload.bin", payload)
        if await box.read_file("/workspace/payload.bin") != payload:
            raise SystemExit("payload came back different")

    cases: dict[str, Callable[[Sandbox], Awaitable[None]]] = {
        "exec true": trivial,
        f"write+read {len(payload) >> 20} MiB": write_read,
    }
    results: dict[str, tuple[list[float], list[float]]] = {}
    for name, case in cases.items():
        for _ in range(3):  # warm both paths
            await case(local)
            await case(pod)
        base: list[float] = []
        kube: list[float] = []
        count = runs if name == "exec true" else max(5, runs // 10)
        for _ in range(count):  # interleaved, so drift in machine load hits both alike
            base.append(await timed(functools.partial(case, local)))
            kube.append(await timed(functools.partial(case, pod)))
        results[name] = (base, kube)
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--payload-mib", type=int, default=8)
    args = parser.parse_args()
    payload = bytes(range(256)) * (args.payload_mib * 4096)

    with tempfile.TemporaryDirectory() as scratch, running_fake_kube() as fake:
        kubeconfig = fake.kubeconfig(Path(scratch) / "kubeconfig")
        options = SandboxOptions(k8s_namespace="bench", kubeconfig=kubeconfig)
        started = time.perf_counter()
        pod = await KubernetesSandbox.create(options)
        create_s = time.perf_counter() - started
        local = await LocalSandbox.create(SandboxOptions())
        try:
            results = await measure(local, pod, args.runs, payload)
        finally:
            await pod.close()
            await local.close()

    print(f"pod creation through the fake API server: {create_s * 1000:.0f} ms")
    for name, (base, kube) in results.items():
        ratio = statistics.median(kube) / statistics.median(base)
        print(
            f"{name:22} local {statistics.median(base) * 1000:8.2f} ms   "
            f"kubernetes {statistics.median(kube) * 1000:8.2f} ms   "
            f"ratio {ratio:4.2f}x   (medians of {len(base)})"
        )


if __name__ == "__main__":
    asyncio.run(main())
