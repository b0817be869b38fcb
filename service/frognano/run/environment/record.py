"""What a run's reports say of its environment: the record and its line in report.md."""

from __future__ import annotations

from dataclasses import dataclass

from frognano.run.environment.build import InstallStep
from frognano.run.report import EnvironmentRecord, SandboxRecord


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
    return [
        f"- Environment: `{env['key'][:12]}` {how} through {env['index_url']}; "
        f"commands ({source}): {commands}"
    ]
