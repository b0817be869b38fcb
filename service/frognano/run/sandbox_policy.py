"""A run's sandbox pod options from the repository's policy (the sandbox never reads policy)."""

from __future__ import annotations

from frognano.policy.models import EffectivePolicy
from frognano.sandbox.kubernetes.pod import PodOptions


def pod_options(
    policy: EffectivePolicy,
    *,
    run_id: str = "",
    purpose: str = "agent",
    labels: dict[str, str] | None = None,
) -> PodOptions:
    """The policy's image and resources, and a lifetime covering every stage of one run: the
    agent's time, the policy's setup and two test runs, with half an hour to spare."""
    lifetime = policy.agent.time_limit_seconds + 2 * policy.verify.timeout_seconds + 1800
    return PodOptions(
        image=policy.sandbox.image,
        cpu=policy.sandbox.cpu,
        memory=policy.sandbox.memory,
        ephemeral_storage=policy.sandbox.ephemeral_storage,
        runtime_class=policy.sandbox.runtime_class,
        run_id=run_id,
        purpose=purpose,
        lifetime_seconds=int(lifetime),
        labels=dict(labels or {}),
    )
