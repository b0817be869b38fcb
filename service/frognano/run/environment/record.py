"""What a run's reports say of its environment: the record and its line in report.md."""

from __future__ import annotations

from dataclasses import dataclass

from frognano.run.environment.build import InstallStep
from frognano.run.report import EnvironmentRecord, SandboxRecord
from frognano.sandbox.hostpaths import HostPaths


@dataclass(frozen=True)
class EnvironmentUse:
    """What the report says of a run's environment."""

    key: str
    hit: bool
    seconds: float
    """What the phase cost this run: the lookup, plus the build on a miss."""
    build_seconds: float
    size_bytes: int
    index_url: str
    commands: tuple[str, ...]
    detected: bool
    """Whether the commands were detected from the repository (else the policy's install)."""
    notes: tuple[str, ...]
    steps: tuple[InstallStep, ...] = ()
    refused: tuple[str, ...] = ()
    """What this run's build tried to reach besides the approved hosts (refused)."""

    def record(self) -> EnvironmentRecord:
        return {
            "key": self.key,
            "cache_hit": self.hit,
            "seconds": round(self.seconds, 3),
            "build_seconds": round(self.build_seconds, 3),
            "size_bytes": self.size_bytes,
            "index_url": self.index_url,
            "commands": list(self.commands),
            "detected": self.detected,
            "notes": list(self.notes),
            "refused": list(self.refused),
            "steps": [
                {"command": s.command, "seconds": round(s.seconds, 3), "exit_code": s.exit_code}
                for s in self.steps
            ],
        }


def environment_md(sandbox: SandboxRecord) -> list[str]:
    """report.md's line on the environment, when the run had one."""
    env = sandbox.get("environment")
    if env is None:
        return []
    how = (
        f"reused (built once in {env['build_seconds']:.1f} s)"
        if env["cache_hit"]
        else f"built in {env['build_seconds']:.1f} s"
    )
    source = "detected from the repository" if env["detected"] else "the policy's install"
    commands = ", ".join(f"`{c}`" for c in env["commands"]) or "none"
    lines = [
        f"- Environment: `{env['key'][:12]}` {how} through {env['index_url']}; "
        f"commands ({source}): {commands}"
    ]
    if env["refused"]:
        tried = ", ".join(f"`{item}`" for item in env["refused"])
        lines.append(f"- The environment's build tried to reach other hosts (refused): {tried}")
    return lines


def sandbox_record(
    backend: str, mechanism: str | None, host_paths: HostPaths, environment: EnvironmentUse | None
) -> SandboxRecord:
    """report.json's `sandbox`: the backend, the host folders shown, the environment used."""
    record: SandboxRecord = {
        "backend": backend,
        "mechanism": mechanism,
        "host_paths": [{"path": p, "placeholder": n} for p, n in host_paths.pairs],
    }
    if environment is not None:
        record["environment"] = environment.record()
    return record
