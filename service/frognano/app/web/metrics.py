"""The webhook receiver's Prometheus metrics."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram


class WebMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.deliveries = Counter(
            "frognano_webhook_deliveries",
            "Webhook requests answered, by event (`unverified` before the signature was "
            "checked), decision (`rejected` before one was made) and HTTP status code.",
            ["event", "decision", "code"],
            registry=registry,
        )
        self.signature_failures = Counter(
            "frognano_webhook_signature_failures",
            "Webhook requests refused with 401: the signature was missing or did not match.",
            registry=registry,
        )
        self.submissions = Counter(
            "frognano_webhook_submissions",
            "Decisions handed to the queue, by what the queue did with them.",
            ["result"],
            registry=registry,
        )
        self.queue_errors = Counter(
            "frognano_webhook_queue_errors",
            "Deliveries answered 503 because Redis failed or did not answer in time.",
            registry=registry,
        )
        self.enqueue_seconds = Histogram(
            "frognano_webhook_enqueue_seconds",
            "Time to submit one decision to Redis (dedupe, single-flight and enqueue).",
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=registry,
        )
        for result in ("queued", "duplicate", "already_running", "cancelled", "nothing_to_cancel"):
            self.submissions.labels(result=result)
