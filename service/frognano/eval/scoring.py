"""An eval run's figures: SWE-bench's run summary, pass@k, best-of-K, verdict agreement."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypedDict

from frognano.eval.records import Attempt, InstanceResult

SCHEMA_VERSION = 2
"""The `schema_version` of SWE-bench's run report (swebench 4 and 5) this summary follows."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator of pass@k from n samples of which c passed (Chen et al., 2021):
    1 - C(n-c, k) / C(n, k), the chance that k samples drawn without replacement hold a pass."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


class Agreement(TypedDict):
    """FrogNano's "ready for review" against SWE-bench's "resolved", over every attempt that
    has both."""

    ready_resolved: int
    ready_unresolved: int
    not_ready_resolved: int
    not_ready_unresolved: int


class BestOf(TypedDict):
    k: int
    resolved_instances: int
    resolved_ids: list[str]
    rate: float


class RunSummary(TypedDict):
    """SWE-bench's run report (`make_run_report`) of the chosen attempts, plus FrogNano's."""

    total_instances: int
    submitted_instances: int
    completed_instances: int
    resolved_instances: int
    unresolved_instances: int
    infra_failure_instances: int
    ambiguous_failure_instances: int
    empty_patch_instances: int
    error_instances: int
    completed_ids: list[str]
    incomplete_ids: list[str]
    empty_patch_ids: list[str]
    submitted_ids: list[str]
    resolved_ids: list[str]
    unresolved_ids: list[str]
    infra_failure_ids: list[str]
    ambiguous_failure_ids: list[str]
    failure_reasons: dict[str, str]
    error_ids: list[str]
    schema_version: int
    frognano_mode: str
    model_name_or_path: str
    attempts: int
    pass_at_k: dict[str, float]
    """"1", "2", ... up to the attempts made: the estimator's mean over finished instances."""
    best_of_k: BestOf | None
    """The attempt FrogNano's own evidence ranks strongest, per instance; None with one."""
    agreement: Agreement


def chosen(result: InstanceResult) -> Attempt:
    return result.attempts[result.chosen]


def summarize(
    selected: Sequence[str],
    results: Sequence[InstanceResult],
    *,
    mode: str,
    model: str,
    attempts: int,
) -> RunSummary:
    """The run's figures over `selected` (the instance ids this run was asked for); an id
    without a result is incomplete (not run yet, or stopped before it finished)."""
    done = {r.instance_id: r for r in results if r.instance_id in set(selected)}
    by_status: dict[str, list[str]] = {s: [] for s in ("resolved", "unresolved", "empty_patch")}
    by_status["error"] = []
    for result in done.values():
        by_status[chosen(result).official.status].append(result.instance_id)
    completed = sorted(by_status["resolved"] + by_status["unresolved"])
    reasons = {
        r.instance_id: chosen(r).official.reason
        for r in done.values()
        if chosen(r).official.status == "error"
    }
    return {
        "total_instances": len(selected),
        "submitted_instances": len(done),
        "completed_instances": len(completed),
        "resolved_instances": len(by_status["resolved"]),
        "unresolved_instances": len(by_status["unresolved"]),
        "infra_failure_instances": 0,
        "ambiguous_failure_instances": 0,
        "empty_patch_instances": len(by_status["empty_patch"]),
        "error_instances": len(by_status["error"]),
        "completed_ids": completed,
        "incomplete_ids": sorted(set(selected) - done.keys()),
        "empty_patch_ids": sorted(by_status["empty_patch"]),
        "submitted_ids": sorted(done),
        "resolved_ids": sorted(by_status["resolved"]),
        "unresolved_ids": sorted(by_status["unresolved"]),
        "infra_failure_ids": [],
        "ambiguous_failure_ids": [],
        "failure_reasons": dict(sorted(reasons.items())),
        "error_ids": sorted(by_status["error"]),
        "schema_version": SCHEMA_VERSION,
        "frognano_mode": mode,
        "model_name_or_path": model,
        "attempts": attempts,
        "pass_at_k": _pass_at(list(done.values()), attempts),
        "best_of_k": _best_of(list(done.values()), attempts),
        "agreement": agreement(list(done.values())),
    }


def _pass_at(results: Sequence[InstanceResult], attempts: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    if not results:
        return figures
    for k in range(1, attempts + 1):
        values = [
            pass_at_k(len(r.attempts), sum(a.official.resolved for a in r.attempts), k)
            for r in results
            if len(r.attempts) >= k
        ]
        if len(values) == len(results):
            figures[str(k)] = round(sum(values) / len(values), 6)
    return figures


def _best_of(results: Sequence[InstanceResult], attempts: int) -> BestOf | None:
    if attempts < 2 or not results:
        return None
    ids = sorted(r.instance_id for r in results if chosen(r).official.resolved)
    return {
        "k": attempts,
        "resolved_instances": len(ids),
        "resolved_ids": ids,
        "rate": round(len(ids) / len(results), 6),
    }


def agreement(results: Sequence[InstanceResult]) -> Agreement:
    counts: Agreement = {
        "ready_resolved": 0,
        "ready_unresolved": 0,
        "not_ready_resolved": 0,
        "not_ready_unresolved": 0,
    }
    for result in results:
        for attempt in result.attempts:
            if attempt.verdict is None or attempt.official.status == "error":
                continue
            resolved = attempt.official.resolved
            if attempt.verdict.ready and resolved:
                counts["ready_resolved"] += 1
            elif attempt.verdict.ready:
                counts["ready_unresolved"] += 1
            elif resolved:
                counts["not_ready_resolved"] += 1
            else:
                counts["not_ready_unresolved"] += 1
    return counts
