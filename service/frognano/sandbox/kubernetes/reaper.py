"""Deleting sandbox pods nobody will use again: expired, finished, failed or evicted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from frognano.log import get_logger
from frognano.sandbox.kubernetes.api import KubeApi, KubeApiError, kube_api
from frognano.sandbox.kubernetes.pod import ATTEMPT, EXPIRES, RUN_ID, SELECTOR, label_value

log = get_logger(__name__)

# A pod under our labels but without a readable expiry (made by hand, or by an older
# version) is deleted once it is older than any run can last.
MAX_AGE = timedelta(hours=26)


@dataclass(frozen=True)
class Reaped:
    name: str
    phase: str
    reason: str
    deleted: bool
    """False in a dry run, or when the pod was already gone."""
    error: str | None = None


def _timestamp(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def reap_reason(pod: dict[str, Any], now: datetime) -> str | None:
    """Why `pod` should be deleted now, or None to leave it running."""
    metadata = pod.get("metadata") or {}
    status = pod.get("status") or {}
    if metadata.get("deletionTimestamp"):
        return None  # already on its way out
    phase = status.get("phase") or "Pending"
    if phase in ("Succeeded", "Failed"):
        why = status.get("reason")
        return f"{phase.lower()} ({why})" if why else phase.lower()
    expires = (metadata.get("labels") or {}).get(EXPIRES)
    if expires is not None:
        try:
            moment = datetime.fromtimestamp(int(expires), UTC)
        except (ValueError, OverflowError, OSError):
            moment = None
        if moment is not None:
            return f"expired at {moment:%Y-%m-%dT%H:%M:%SZ}" if now >= moment else None
    created = _timestamp(metadata.get("creationTimestamp"))
    if created is None or now - created >= MAX_AGE:
        return f"no valid {EXPIRES} label and older than {MAX_AGE.total_seconds() / 3600:g}h"
    return None


async def reap(
    api: KubeApi, namespace: str, *, now: datetime | None = None, dry_run: bool = False
) -> list[Reaped]:
    """Delete every FrogNano sandbox pod in `namespace` that `reap_reason` picks; idempotent,
    so several workers may run it at once."""
    now = now or datetime.now(UTC)
    reaped: list[Reaped] = []
    for pod in await api.list_pods(namespace, SELECTOR):
        reason = reap_reason(pod, now)
        if reason is None:
            continue
        name = str((pod.get("metadata") or {}).get("name"))
        phase = str((pod.get("status") or {}).get("phase") or "Pending")
        if dry_run:
            reaped.append(Reaped(name, phase, reason, deleted=False))
            continue
        try:
            deleted = await api.delete_pod(namespace, name)
        except KubeApiError as exc:
            reaped.append(Reaped(name, phase, reason, deleted=False, error=str(exc)))
            log.warning("sandbox.reap_failed", pod=name, error=str(exc))
            continue
        reaped.append(Reaped(name, phase, reason, deleted=deleted))
        log.info("sandbox.reaped", pod=name, namespace=namespace, reason=reason)
    return reaped


async def reap_namespace(
    namespace: str, kubeconfig: Path | None, *, dry_run: bool = False
) -> list[Reaped]:
    """`reap` with a client of its own, for the CLI and the worker's periodic sweep."""
    async with kube_api(kubeconfig) as api:
        return await reap(api, namespace, dry_run=dry_run)


async def delete_attempt_pods(
    namespace: str, kubeconfig: Path | None, run_id: str, attempt: int
) -> list[str]:
    """Delete the sandbox pods of one attempt of a run (its worker died); the names deleted.
    Pods of the run's next attempt carry another attempt label and are left alone."""
    selector = f"{SELECTOR},{RUN_ID}={label_value(run_id)},{ATTEMPT}={attempt}"
    deleted = []
    async with kube_api(kubeconfig) as api:
        for pod in await api.list_pods(namespace, selector):
            name = str((pod.get("metadata") or {}).get("name"))
            if await api.delete_pod(namespace, name):
                deleted.append(name)
                log.info("sandbox.orphan_deleted", pod=name, run_id=run_id, attempt=attempt)
    return deleted
