"""A run's inputs as digests: what its trajectory records and a replay of it must match."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from frognano import __version__
from frognano.policy.models import EffectivePolicy
from frognano.run.trees import HostTree

__all__ = ["DigestsRecord", "RunDigests", "policy_digest", "run_digests", "task_digest"]


class DigestsRecord(TypedDict):
    """The fields `run_info` records besides `frognano`, the version (docs/agent.md)."""

    task_sha256: str
    base_tree_sha256: str
    policy_sha256: str
    environment_key: str | None


@dataclass(frozen=True)
class RunDigests:
    task_sha256: str
    base_tree_sha256: str
    policy_sha256: str
    frognano: str = __version__
    environment_key: str | None = None

    def record(self) -> DigestsRecord:
        return {
            "task_sha256": self.task_sha256,
            "base_tree_sha256": self.base_tree_sha256,
            "policy_sha256": self.policy_sha256,
            "environment_key": self.environment_key,
        }


def task_digest(title: str, body: str) -> str:
    """sha256 of the issue as the run used it: the title, a NUL, the body (UTF-8)."""
    return hashlib.sha256(f"{title}\0{body}".encode()).hexdigest()


def policy_digest(policy: EffectivePolicy) -> str:
    """sha256 of the effective policy's canonical JSON (keys sorted, no spaces), so the same
    settings give the same digest whichever files and options produced them."""
    canonical = json.dumps(
        policy.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


async def run_digests(  # noqa: PLR0917 - the run's inputs, each named
    title: str,
    body: str,
    policy: EffectivePolicy,
    repo_dir: Path,
    exclude: Collection[str],
    environment_key: str | None,
) -> tuple[RunDigests, HostTree]:
    """The digests of one run's inputs, and the base tree they were taken of: `HostTree` of
    `repo_dir` minus `exclude`, exactly the tree every sandbox is given (its digest covers
    paths, modes and contents); the run checks its patch against the same scan."""
    tree = await HostTree.scan(repo_dir, exclude)
    base = await asyncio.to_thread(tree.digest)
    digests = RunDigests(
        task_digest(title, body), base, policy_digest(policy), environment_key=environment_key
    )
    return digests, tree
