"""`GET /readyz`: ready while Redis answers; a bad policy change only degrades it."""

# The receiver needs two things to decide and queue a delivery: Redis, and a policy. The
# PolicyStore always holds one (the process does not start without a valid policy directory,
# so a receiver that serves has one in force), and a broken change keeps the last good set
# deciding. So a policy problem never makes the receiver unready: taking every web pod out of
# the Service for a typo in a ConfigMap would drop deliveries that the last good policy can
# still decide. It is reported instead:
#
#     200  {"status": "ready", "reasons": []}
#     200  {"status": "degraded", "reasons": [], "policy": {"errors": [...], "generation": N}}
#          the latest policy change did not load (each error `FILE:LINE: key: message`); the
#          last good set, generation N, is in force
#     503  {"status": "unready", "reasons": ["redis: ..."], "policy"?: {...}}

from __future__ import annotations

import asyncio
from typing import Any

from fastapi.responses import JSONResponse
from redis.exceptions import RedisError

from frognano.app.intake import IntakeQueue
from frognano.policy.store import PolicyStore

__all__ = ["readiness"]


async def readiness(queue: IntakeQueue | None, store: PolicyStore, timeout: float) -> JSONResponse:
    """The /readyz reply for the receiver's `queue` (None outside the lifespan) and `store`."""
    reasons: list[str] = []
    if queue is None:
        reasons.append("redis: the client is not started")
    else:
        try:
            await asyncio.wait_for(queue.ping(), timeout=timeout)
        except (RedisError, OSError, TimeoutError) as exc:
            reasons.append(f"redis: no answer to PING ({type(exc).__name__})")
    body: dict[str, Any] = {"status": "unready" if reasons else "ready", "reasons": reasons}
    errors = store.errors  # one snapshot: a reload replaces the list, never edits it
    if errors:
        body["policy"] = {
            "errors": [str(issue) for issue in errors],
            "generation": store.generation,
        }
        if not reasons:
            body["status"] = "degraded"
    return JSONResponse(body, status_code=503 if reasons else 200)
