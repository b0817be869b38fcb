"""Whether a run's patch is ready for review, and why (or why not), from what the run found."""

from __future__ import annotations

from frognano.agent.loop_types import StopReason
from frognano.run.job import RunState
from frognano.run.variants import Variant

__all__ = ["verdict"]


def verdict(run: RunState, variant: Variant) -> tuple[bool, str]:  # noqa: PLR0911 - one return per outcome
    """A patch is ready when it is not empty, the gate passes and the policy's `require`
    rule held in verification; a replay's, only when the replay also reproduced its
    recording (a replay that did not is never ready, whatever its patch)."""
    if run.replay is not None and not run.replay.reproduced:
        difference = run.replay.first_difference
        why = difference["headline"] if difference else "it did not finish"
        return False, f"the replay did not reproduce the recording: {why}"
    if run.error is not None:
        return False, run.error
    agent = run.agent
    if agent is None:
        return False, "the agent did not run"
    if agent.stop_reason is StopReason.SANDBOX_ERROR:
        return False, agent.detail
    if run.patch is None or run.patch.empty or variant.unchanged():
        if (undone := variant.empty_reason()) is not None:
            return False, undone
        if agent.stop_reason is StopReason.COMPLETED:
            return False, "the agent finished without changing any file"
        return False, f"the agent stopped ({agent.detail}) without changing any file"
    said = variant.blocked(run.findings or [])
    if said:
        return False, f"the gate blocked the patch: {'; '.join(said)}"
    if run.verification is None or not run.verification.held:
        why = run.verification.reason if run.verification else "not verified"
        return False, f"verification failed ({run.job.policy.verify.require}): {why}"
    reason = f"the gate passed and verification held: {run.verification.reason}"
    if agent.stop_reason is not StopReason.COMPLETED:
        reason += f" (the agent stopped early: {agent.detail})"
    return True, reason
