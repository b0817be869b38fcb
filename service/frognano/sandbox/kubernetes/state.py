"""Reading a sandbox pod's status: ready, still starting, or failed for a stated reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Container waiting reasons that no amount of waiting fixes.
FATAL_WAITING = {
    "ErrImageNeverPull": "the image is not on the node and imagePullPolicy forbids pulling it",
    "ImagePullBackOff": "the image could not be pulled",
    "InvalidImageName": "the image name is invalid",
    "CreateContainerConfigError": "the container's configuration is invalid",
    "CreateContainerError": "the container could not be created",
    "RunContainerError": "the container could not be started",
    "CrashLoopBackOff": "the container keeps exiting",
}


@dataclass(frozen=True)
class PodState:
    ready: bool
    failure: str | None
    """Why the pod will never run commands, if that is known."""
    waiting: str
    """What it is waiting for, for a timeout message."""


def _message(*parts: object) -> str:
    return ": ".join(str(part) for part in parts if part)


def pod_state(pod: dict[str, Any]) -> PodState:
    """Classify a pod object as returned by the API server."""
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return PodState(False, "the pod is being deleted", phase)
    if phase in ("Failed", "Succeeded"):
        reason = status.get("reason") or phase
        detail = status.get("message") or ""
        explain = {
            "Evicted": "evicted by the kubelet (often: over its memory or disk limit)",
            "DeadlineExceeded": "past its activeDeadlineSeconds",
        }.get(reason, reason)
        return PodState(False, _message(f"the pod stopped ({explain})", detail), phase)
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        waiting = state.get("waiting") or {}
        reason = waiting.get("reason")
        if reason in FATAL_WAITING:
            return PodState(
                False,
                _message(f"{FATAL_WAITING[reason]} ({reason})", waiting.get("message")),
                phase,
            )
        if state.get("terminated"):
            done = state["terminated"]
            return PodState(
                False,
                _message(
                    f"the container exited ({done.get('reason') or done.get('exitCode')})",
                    done.get("message"),
                ),
                phase,
            )
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    ready = phase == "Running" and conditions.get("Ready", {}).get("status") == "True"
    scheduled = conditions.get("PodScheduled", {})
    if scheduled.get("status") == "False":
        waiting_for = _message("not scheduled", scheduled.get("reason"), scheduled.get("message"))
    else:
        reasons = [
            (c.get("state") or {}).get("waiting", {}).get("reason")
            for c in status.get("containerStatuses") or []
        ]
        waiting_for = _message(phase, ", ".join(r for r in reasons if r))
    return PodState(ready, None, waiting_for)
