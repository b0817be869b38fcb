"""The webhook receiver: a FastAPI app that checks, routes and queues GitHub deliveries."""

# `POST /webhooks/github`, in this order (each step answers before the next one runs):
#
#     413  the body is larger than `webhook_max_body_bytes` (by Content-Length, before reading a
#          byte; otherwise while it streams in)
#     408  the body did not arrive in full within `webhook_body_timeout_seconds`; the
#          connection is closed
#     401  the signature (HMAC-SHA256 of the raw body, `X-Hub-Signature-256`) is missing or
#          wrong; nothing was parsed or queued
#     400  not a webhook delivery we can read (headers, JSON)
#     200  {"status": "ignored", "reason": ...}: nothing to do (ping, other events, other labels)
#     202  {"status": "queued" | "duplicate" | "already_running" | "cancelled" |
#          "nothing_to_cancel", "delivery": ..., "job_id"?, "run_id"?}
#     503  Redis did not answer: nothing was recorded, so redelivering the delivery from the
#          App's settings (or the reconciler) works
#     500  the policy in force cannot be resolved for the repository (logged); redeliver once
#          the policy is fixed
#
# `GET /healthz` (200 while the process serves), `GET /readyz` (200 while Redis answers PING,
# `degraded` in its body while a broken policy change is not applied; see readiness.py),
# `GET /metrics` (Prometheus).
#
# Nothing is done at import; `create_app` wires everything from the settings, the Redis client
# is made in the lifespan, which also runs the policy store's hot reload. The body and the
# secret are never logged.

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from redis.asyncio import Redis
from redis.exceptions import RedisError
from starlette.requests import ClientDisconnect

from frognano.app.events.decisions import (
    CancelRequest,
    CommandRequest,
    Decision,
    DropTokens,
    Ignored,
    ReviewGateCheck,
    RunRequest,
)
from frognano.app.events.followups import FollowUpRequest
from frognano.app.events.triggers import decide
from frognano.app.events.webhooks import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    Delivery,
    MalformedDelivery,
    SignatureError,
    parse_delivery,
    verify_request_signature,
)
from frognano.app.intake import IntakeQueue
from frognano.app.jobs import ReplyBody, submission_reply
from frognano.app.web.limits import BodyTooLarge, BodyTooSlow, read_body
from frognano.app.web.metrics import WebMetrics
from frognano.app.web.readiness import readiness
from frognano.errors import ConfigError
from frognano.log import get_logger
from frognano.policy.merge import PolicySet
from frognano.policy.models import EffectivePolicy
from frognano.policy.store import PolicyStore
from frognano.settings import Settings

__all__ = ["WEBHOOK_PATH", "create_app"]

log = get_logger(__name__)


WEBHOOK_PATH = "/webhooks/github"
POLICY_CACHE_SIZE = 4096
"""Repositories whose effective policy is kept between deliveries (resolving one takes
about 0.1 ms, a sixth of a delivery's budget at 600/s)."""
REDIS_TIMEOUT = 2.0
"""Seconds for a Redis connect or command: far inside GitHub's 10 s delivery deadline."""

DECISION_NAMES: dict[type, str] = {
    RunRequest: "run",
    CancelRequest: "cancel",
    CommandRequest: "command",
    FollowUpRequest: "follow_up",
    ReviewGateCheck: "review_gate",
    DropTokens: "drop_tokens",
    Ignored: "ignored",
}
_SAFE_LABEL = re.compile(r"[a-z][a-z0-9_]{0,63}")
_UNSAFE_LOG_CHARS = re.compile(r"[^A-Za-z0-9._:-]")


def _log_value(value: str | None) -> str | None:
    """An unauthenticated header value, made safe and short for a log line."""
    return None if value is None else _UNSAFE_LOG_CHARS.sub("?", value[:80])


class _Intake:
    """The webhook endpoint's logic; one per app."""

    def __init__(
        self,
        *,
        secret: bytes,
        policies: PolicyStore,
        metrics: WebMetrics,
        max_body_bytes: int,
        body_timeout: float,
    ) -> None:
        self.secret = secret
        self.policies = policies
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        self.queue: IntakeQueue | None = None
        """Set for the lifespan of the app."""
        self._resolved: tuple[PolicySet | None, dict[str, EffectivePolicy]] = (None, {})
        """Effective policies of the repositories seen, for the PolicySet in force."""

    def reply(self, code: int, body: ReplyBody, *, event: str, decision: str) -> JSONResponse:
        self.metrics.deliveries.labels(event=event, decision=decision, code=str(code)).inc()
        return JSONResponse(body, status_code=code)

    def rejected(self, code: int, reason: str, *, event: str = "unverified") -> JSONResponse:
        return self.reply(
            code, {"status": "rejected", "reason": reason}, event=event, decision="rejected"
        )

    def policy_lookups(
        self,
    ) -> tuple[Callable[[str], str | None], Callable[[str], str], Callable[[str], str]]:
        """`label_for`, `branch_prefix_for` and `command_for` (see triggers.decide)."""
        current = self.policies.current  # one snapshot per delivery, even if a reload lands
        if self._resolved[0] is not current:
            # A PolicySet never changes; a reload replaces it, and so empties the cache.
            self._resolved = (current, {})
        resolved = self._resolved[1]

        def policy(repo: str) -> EffectivePolicy:
            found = resolved.get(repo)
            if found is None:
                if len(resolved) >= POLICY_CACHE_SIZE:
                    resolved.clear()
                found = resolved[repo] = current.for_repo(repo)
            return found

        def label_for(repo: str) -> str | None:
            effective = policy(repo)
            return effective.trigger.label if effective.enabled else None

        def branch_prefix_for(repo: str) -> str:
            return policy(repo).publish.branch_prefix

        def command_for(repo: str) -> str:
            return policy(repo).trigger.command

        return label_for, branch_prefix_for, command_for

    async def _body(
        self, request: Request, claimed_id: str | None, claimed_event: str | None
    ) -> bytes | Response:
        """The raw body, or the reply refusing it."""
        headers = request.headers
        try:
            return await read_body(request, self.max_body_bytes, self.body_timeout)
        except BodyTooSlow:
            log.warning(
                "webhook.too_slow",
                delivery=claimed_id,
                github_event=claimed_event,
                seconds=self.body_timeout,
            )
            reply = self.rejected(408, f"the body did not arrive within {self.body_timeout:g} s")
            reply.headers["connection"] = "close"
            return reply
        except BodyTooLarge:
            log.warning(
                "webhook.too_large",
                delivery=claimed_id,
                github_event=claimed_event,
                limit=self.max_body_bytes,
                content_length=_log_value(headers.get("content-length")),
            )
            return self.rejected(413, f"body larger than {self.max_body_bytes} bytes")
        except ValueError:
            return self.rejected(400, "invalid Content-Length")
        except ClientDisconnect:
            log.info("webhook.client_gone", delivery=claimed_id, github_event=claimed_event)
            return self.rejected(400, "the client went away before the body was read")

    async def handle(self, request: Request) -> Response:
        headers = request.headers
        claimed_id = _log_value(headers.get(DELIVERY_HEADER))
        claimed_event = _log_value(headers.get(EVENT_HEADER))
        body = await self._body(request, claimed_id, claimed_event)
        if isinstance(body, Response):
            return body

        try:
            verify_request_signature(self.secret, headers, body)
        except SignatureError as exc:
            self.metrics.signature_failures.inc()
            log.warning(
                "webhook.bad_signature",
                delivery=claimed_id,
                github_event=claimed_event,
                reason=str(exc),
            )
            return self.rejected(401, str(exc))

        try:
            delivery = parse_delivery(headers, body)
        except MalformedDelivery as exc:
            log.warning(
                "webhook.malformed",
                delivery=claimed_id,
                github_event=claimed_event,
                reason=str(exc),
            )
            safe = claimed_event if claimed_event and _SAFE_LABEL.fullmatch(claimed_event) else None
            return self.rejected(400, str(exc), event=safe or "invalid")
        return await self.route(delivery, hashlib.sha256(body).hexdigest())

    async def route(self, delivery: Delivery, body_digest: str | None = None) -> Response:
        context = {
            "delivery": delivery.id,
            "github_event": delivery.event,
            "action": delivery.action,
        }
        label_for, branch_prefix_for, command_for = self.policy_lookups()
        try:
            decision: Decision = decide(
                delivery,
                label_for=label_for,
                # The receiver calls no GitHub API, so it does not know the app's login.
                app_login=None,
                branch_prefix_for=branch_prefix_for,
                command_for=command_for,
            )
        except (ConfigError, ValueError) as exc:
            # A rule combination that breaks a cross-key check for this repository, or a
            # name the policy refuses. Not acted on and not recorded: redeliver after a fix.
            log.error("webhook.policy_error", **context, error=str(exc))  # noqa: TRY400
            return self.reply(
                500,
                {"status": "error", "reason": "the policy in force cannot be applied here"},
                event=delivery.event,
                decision="rejected",
            )
        name = DECISION_NAMES[type(decision)]
        if isinstance(decision, Ignored):
            log.info("webhook.delivery", **context, decision=name, reason=decision.reason, code=200)
            return self.reply(
                200,
                {"status": "ignored", "reason": decision.reason, "delivery": delivery.id},
                event=delivery.event,
                decision=name,
            )

        unavailable: ReplyBody = {
            "status": "unavailable",
            "reason": "the queue (Redis) is unavailable",
        }
        if self.queue is None:  # only outside the lifespan
            return self.reply(503, unavailable, event=delivery.event, decision=name)
        started = time.perf_counter()
        try:
            submission = await self.queue.submit(decision, body_digest=body_digest)
        except (RedisError, OSError) as exc:
            self.metrics.queue_errors.inc()
            log.error(  # noqa: TRY400 - the exception's name says it; a traceback would not
                "webhook.queue_unavailable", **context, decision=name, error=type(exc).__name__
            )
            return self.reply(503, unavailable, event=delivery.event, decision=name)
        self.metrics.enqueue_seconds.observe(time.perf_counter() - started)
        self.metrics.submissions.labels(result=submission.status).inc()
        log.info(
            "webhook.delivery",
            **context,
            decision=name,
            status=submission.status,
            job_id=submission.job_id,
            code=202,
        )
        return self.reply(
            202, submission_reply(delivery.id, submission), event=delivery.event, decision=name
        )


def create_app(
    settings: Settings,
    *,
    policies: PolicyStore | None = None,
    registry: CollectorRegistry | None = None,
    queue_for: Callable[[Redis], IntakeQueue] = IntakeQueue,
) -> FastAPI:
    """The receiver, wired from `settings`; the keywords are seams for tests.

    `policies`: a store the caller made and reloads itself; by default one is loaded from
    `settings.policy_dir` and hot-reloaded for the app's lifetime. `registry`: where the
    metrics go (the store's too); by default a new one with the process, platform and GC
    collectors. `queue_for`: the intake queue on the Redis client the lifespan makes (the
    client belongs to the serving event loop). Raises ConfigError when
    `settings.webhook_secret` is unset or empty (such an app could only refuse everything) or
    when the policy does not load.
    """
    secret = settings.webhook_secret
    if secret is None or not secret.get_secret_value():
        raise ConfigError(
            "FROGNANO_WEBHOOK_SECRET is not set: set it (or FROGNANO_WEBHOOK_SECRET_FILE) to "
            "the GitHub App's webhook secret"
        )
    max_body_bytes = settings.webhook_max_body_bytes
    where = registry
    if where is None:
        where = CollectorRegistry()
        ProcessCollector(registry=where)
        PlatformCollector(registry=where)
        GCCollector(registry=where)
    watch_policies = policies is None
    store = PolicyStore(settings.policy_dir, registry=where) if policies is None else policies
    intake = _Intake(
        secret=secret.get_secret_value().encode(),
        policies=store,
        metrics=WebMetrics(where),
        max_body_bytes=max_body_bytes,
        body_timeout=settings.webhook_body_timeout_seconds,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        redis: Redis = Redis.from_url(
            settings.redis_url, socket_connect_timeout=REDIS_TIMEOUT, socket_timeout=REDIS_TIMEOUT
        )
        intake.queue = queue_for(redis)
        watcher = asyncio.create_task(store.watch()) if watch_policies else None
        log.info("web.started", max_body_bytes=max_body_bytes, queue=intake.queue.queue_name)
        try:
            yield
        finally:
            if watcher is not None:
                watcher.cancel()
                with suppress(asyncio.CancelledError):
                    await watcher
            intake.queue = None
            await redis.aclose()
            log.info("web.stopped")

    app = FastAPI(
        title="FrogNano webhook receiver",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    @app.post(WEBHOOK_PATH)
    async def github_webhook(request: Request) -> Response:
        return await intake.handle(request)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        return await readiness(intake.queue, store, REDIS_TIMEOUT)

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(generate_latest(where), media_type=CONTENT_TYPE_LATEST)

    return app
