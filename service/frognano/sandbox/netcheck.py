"""Proof that a sandbox has no network: probes run inside it that must all fail."""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from frognano.sandbox.base import Sandbox


@dataclass(frozen=True)
class Probe:
    """One connection attempt from inside the sandbox."""

    name: str
    host: str
    port: int


@dataclass(frozen=True)
class ProbeResult:
    name: str
    target: str
    blocked: bool
    detail: str


# Addresses that answer on the open Internet and inside clouds; any success is a leak.
DEFAULT_PROBES = (
    Probe("outside address (IPv4)", "1.1.1.1", 443),
    Probe("outside address (IPv6)", "2606:4700:4700::1111", 443),
    Probe("public DNS server", "8.8.8.8", 53),
    Probe("cloud metadata service", "169.254.169.254", 80),
)

# bash opens TCP connections itself through /dev/tcp: no tool inside the sandbox is needed.
CONNECT = r"""timeout 5 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>&1"""


def loopback_service(url: str, name: str) -> Probe | None:
    """A probe for a service (Redis, say) the host runs on its own loopback, if `url` is one."""
    parts = urlsplit(url)
    if parts.hostname in ("localhost", "127.0.0.1", "::1") and parts.port:
        host = "127.0.0.1" if parts.hostname == "localhost" else parts.hostname
        return Probe(name, host, parts.port)
    return None


@contextlib.asynccontextmanager
async def host_listener() -> AsyncIterator[tuple[int, list[str]]]:
    """A TCP server on the host's 127.0.0.1; yields its port and the peers that reached it."""
    reached: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached.append(str(writer.get_extra_info("peername")))
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield port, reached
    finally:
        server.close()
        await server.wait_closed()


async def check_network(
    sandbox: Sandbox, probes: list[Probe], *, only_loopback: bool = True
) -> list[ProbeResult]:
    """Run every probe plus interface and DNS checks; `blocked` is True where nothing got out.

    `only_loopback`: the sandbox must have no interface but `lo` (local sandboxes). A pod
    always has one; there the NetworkPolicy, which the probes test, is what blocks traffic.
    """
    results: list[ProbeResult] = []
    if only_loopback:
        links = await sandbox.exec("cat /proc/net/dev", cwd="/", timeout=30)
        names = sorted(
            line.split(":", 1)[0].strip() for line in links.output.splitlines()[2:] if ":" in line
        )
        results.append(
            ProbeResult(
                "network interfaces", "/proc/net/dev", names == ["lo"], ", ".join(names) or "none"
            )
        )
    dns = await sandbox.exec("timeout 10 getent hosts github.com", cwd="/", timeout=30)
    results.append(
        ProbeResult(
            "DNS resolution", "github.com", dns.exit_code != 0, dns.output.strip() or "no answer"
        )
    )
    for probe in probes:
        command = f"set -- {shlex.quote(probe.host)} {probe.port}; {CONNECT}"
        attempt = await sandbox.exec(command, cwd="/", timeout=30)
        text = attempt.output.strip()
        # bash reports "HOST: line 1: /dev/tcp/HOST/PORT: Network is unreachable".
        detail = text.splitlines()[-1].rsplit(": ", 1)[-1] if text else ""
        if attempt.exit_code == 0:
            detail = "connected"
        elif attempt.exit_code == 124:
            detail = "no answer within 5s"
        results.append(
            ProbeResult(
                probe.name,
                _target(probe),
                attempt.exit_code != 0,
                detail or f"exit {attempt.exit_code}",
            )
        )
    return results


def _target(probe: Probe) -> str:
    return f"[{probe.host}]:{probe.port}" if ":" in probe.host else f"{probe.host}:{probe.port}"


def cluster_probes(api_server_url: str, resolv_conf: str) -> list[Probe]:
    """Probes for what a pod in a cluster could reach: the API server the worker uses, the
    cluster's DNS server (the worker's own resolver), plus the outside and metadata ones."""
    probes: list[Probe] = []
    parts = urlsplit(api_server_url)
    if parts.hostname:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        probes.append(Probe("Kubernetes API server", parts.hostname, port))
    for line in resolv_conf.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "nameserver":
            # TCP: a UDP "connection" succeeds without an answer, proving nothing.
            probes.append(Probe("cluster DNS (TCP 53)", fields[1], 53))
            break
    return [*probes, *DEFAULT_PROBES]


def network_verdict(results: list[ProbeResult]) -> tuple[bool, str]:
    """Whether the sandbox has no network, and a one-line summary of what got out if not."""
    leaked = [f"{result.name} ({result.target}): {result.detail}" for result in results
              if not result.blocked]  # fmt: skip
    if not results:
        return False, "no probe ran"
    if leaked:
        return False, "reached: " + "; ".join(leaked)
    return True, f"all {len(results)} probes blocked"
