"""A run's sandbox spec from the repository's policy (the sandbox never reads policy)."""

from __future__ import annotations

from frognano.policy.models import EffectivePolicy
from frognano.sandbox.options import SandboxSpec


def sandbox_spec(
    policy: EffectivePolicy,
    *,
    run_id: str = "",
    purpose: str = "agent",
    attempt: int | None = None,
    candidate: int | None = None,
) -> SandboxSpec:
    """The policy's image and resources, and a lifetime covering every stage of one run: the
    agent's time, the policy's setup and two test runs, with half an hour to spare."""
    lifetime = policy.agent.time_limit_seconds + 2 * policy.verify.timeout_seconds + 1800
    return SandboxSpec(
        image=policy.sandbox.image,
        cpu=policy.sandbox.cpu,
        memory=policy.sandbox.memory,
        ephemeral_storage=policy.sandbox.ephemeral_storage,
        runtime_class=policy.sandbox.runtime_class,
        run_id=run_id,
        purpose=purpose,
        attempt=attempt,
        candidate=candidate,
        lifetime_seconds=int(lifetime),
    )
