"""Proving the sandbox namespace has no network: a probe pod that must reach nothing."""

from __future__ import annotations

from pathlib import Path

from frognano.sandbox.kubernetes.backend import KubernetesSandbox
from frognano.sandbox.netcheck import ProbeResult, check_network, cluster_probes
from frognano.sandbox.options import SandboxOptions

RESOLV_CONF = Path("/etc/resolv.conf")


def _resolv_conf(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""  # no resolver here: the DNS probe is left out, the others still run


async def check_pod_network(
    options: SandboxOptions, *, resolv_conf: Path = RESOLV_CONF
) -> list[ProbeResult]:
    """Start a probe pod exactly like a sandbox and try the API server, cluster DNS (the
    resolver this process uses, which in a cluster is the cluster's), an outside address and
    the cloud metadata address from it; each result says whether it was blocked."""
    options = options.for_purpose("network-check", run_id="")
    async with await KubernetesSandbox.create(options) as box:
        probes = cluster_probes(box.api_server, _resolv_conf(resolv_conf))
        return await check_network(box, probes, only_loopback=False)
