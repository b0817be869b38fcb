"""An eval run's figures: the official counts, pass@k, best-of-K, the verdict's agreement."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from frognano.eval.records import Attempt, InstanceResult, Status
from frognano.eval.scoring import RunSummary, summarize
from frognano.eval.scoring import chosen as chosen_attempt

__all__ = [
    "STATUS_WORDS",
    "Agreement",
    "Headline",
    "agreement_word",
    "chosen_attempt",
    "headline",
    "headline_of",
    "status_of",
    "tokens_of",
    "verdict_word",
]

STATUS_WORDS: dict[Status, str] = {
    "resolved": "resolved",
    "unresolved": "unresolved",
    "empty_patch": "empty patch",
    "error": "error",
}


@dataclass(frozen=True)
class Agreement:
    """FrogNano's verdict on each instance's first attempt against the official result."""

    ready_resolved: int = 0
    ready_unresolved: int = 0
    not_ready_resolved: int = 0
    not_ready_unresolved: int = 0
    no_verdict: int = 0

    @property
    def agreed(self) -> int:
        return self.ready_resolved + self.not_ready_unresolved

    @property
    def judged(self) -> int:
        return self.agreed + self.ready_unresolved + self.not_ready_resolved


@dataclass(frozen=True)
class Headline:
    """The run's figures: the official counts (first attempts, as SWE-bench counts them),
    pass@k and best-of-K over all attempts, and the verdict's agreement with the result."""

    instances: int
    resolved: int
    unresolved: int
    empty_patch: int
    error: int
    agreement: Agreement
    pass_at: dict[int, float] = field(default_factory=dict)
    best_of: float | None = None
    """The share of instances whose chosen attempt resolved them; None with one attempt each."""


def status_of(result: InstanceResult) -> Status:
    return result.status


def headline(results: Sequence[InstanceResult]) -> Headline:
    """The figures `results` give on their own, as the run's summary.json computes them."""
    attempts = min((len(result.attempts) for result in results), default=1)
    whole = [result for result in results if chosen_attempt(result) is not None]
    return headline_of(
        summarize([r.instance_id for r in whole], whole, mode="", model="", attempts=attempts),
        no_verdict=sum(1 for r in results for a in r.attempts if a.verdict is None),
    )


def headline_of(summary: RunSummary, *, no_verdict: int = 0) -> Headline:
    """A run summary's figures (the chosen attempts, as predictions.jsonl holds them)."""
    agree = summary["agreement"]
    best = summary["best_of_k"]
    return Headline(
        instances=summary["total_instances"],
        resolved=summary["resolved_instances"],
        unresolved=summary["unresolved_instances"],
        empty_patch=summary["empty_patch_instances"],
        error=summary["error_instances"],
        agreement=Agreement(
            ready_resolved=agree["ready_resolved"],
            ready_unresolved=agree["ready_unresolved"],
            not_ready_resolved=agree["not_ready_resolved"],
            not_ready_unresolved=agree["not_ready_unresolved"],
            no_verdict=no_verdict,
        ),
        pass_at={int(k): v for k, v in summary["pass_at_k"].items()} if best else {},
        best_of=best["rate"] if best else None,
    )


def tokens_of(attempt: Attempt) -> int:
    return attempt.prompt_tokens + attempt.completion_tokens


def verdict_word(attempt: Attempt | None) -> str:
    if attempt is None or attempt.verdict is None:
        return "none"
    return "ready" if attempt.verdict.ready else "not ready"


def agreement_word(attempt: Attempt | None) -> str:
    if attempt is None or attempt.verdict is None:
        return "—"
    return "yes" if attempt.verdict.ready == attempt.official.resolved else "no"
