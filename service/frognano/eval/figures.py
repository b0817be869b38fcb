"""An eval run's figures: the official counts, pass@k, best-of-K, the verdict's agreement."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from frognano.eval.records import Attempt, InstanceResult, Status

__all__ = [
    "STATUS_WORDS",
    "Agreement",
    "Headline",
    "agreement_word",
    "chosen_attempt",
    "first_attempt",
    "headline",
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


def first_attempt(result: InstanceResult) -> Attempt | None:
    # The models allow an empty list of attempts; such a record is shown, not a crash.
    return result.attempts[0] if result.attempts else None


def status_of(result: InstanceResult) -> Status:
    return result.status if result.attempts else "error"


def chosen_attempt(result: InstanceResult) -> Attempt | None:
    inside = 0 <= result.chosen < len(result.attempts)
    return result.attempts[result.chosen] if inside else None


def _pass_at(attempts: Sequence[Attempt], k: int) -> float:
    """The unbiased estimate of pass@k from n attempts, c of them resolved (Chen et al. 2021):
    1 - C(n-c, k) / C(n, k)."""
    n = len(attempts)
    failed = sum(not attempt.official.resolved for attempt in attempts)
    return 1.0 - math.comb(failed, k) / math.comb(n, k)


def headline(results: Sequence[InstanceResult]) -> Headline:
    """The figures `results` give on their own: pass@k for each k up to the fewest attempts
    any instance has, and best-of-K, when every instance has more than one attempt."""
    statuses = [status_of(result) for result in results]
    cells: Counter[tuple[bool, bool]] = Counter()
    no_verdict = 0
    for result, status in zip(results, statuses, strict=True):
        first = first_attempt(result)
        if first is None or first.verdict is None:
            no_verdict += 1
        else:
            cells[first.verdict.ready, status == "resolved"] += 1
    fewest = min((len(result.attempts) for result in results), default=0)
    pass_at: dict[int, float] = {}
    best_of = None
    if fewest > 1:
        for k in range(1, fewest + 1):
            pass_at[k] = sum(_pass_at(result.attempts, k) for result in results) / len(results)
        picked = [chosen_attempt(result) for result in results]
        best_of = sum(a is not None and a.official.resolved for a in picked) / len(results)
    agreement = Agreement(
        ready_resolved=cells[True, True],
        ready_unresolved=cells[True, False],
        not_ready_resolved=cells[False, True],
        not_ready_unresolved=cells[False, False],
        no_verdict=no_verdict,
    )
    return Headline(
        instances=len(results),
        resolved=statuses.count("resolved"),
        unresolved=statuses.count("unresolved"),
        empty_patch=statuses.count("empty_patch"),
        error=statuses.count("error"),
        agreement=agreement,
        pass_at=pass_at,
        best_of=best_of,
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
