"""The files an eval run leaves, in the shapes SWE-bench's tools read: rewritten as it goes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypedDict

from frognano.eval.records import Attempt, InstanceResult, replace_file
from frognano.eval.scoring import RunSummary, chosen

PREDICTIONS = "predictions.jsonl"
SUMMARY = "summary.json"
INSTANCE_REPORT = "report.json"


class Prediction(TypedDict):
    """One line of SWE-bench's predictions file."""

    instance_id: str
    model_name_or_path: str
    model_patch: str


def prediction(result: InstanceResult, attempt: Attempt) -> Prediction:
    return {
        "instance_id": result.instance_id,
        "model_name_or_path": result.model_name_or_path,
        "model_patch": attempt.model_patch,
    }


def instance_report(result: InstanceResult) -> dict[str, object]:
    """SWE-bench's per-instance report.json of the chosen attempt (`get_eval_report`'s
    shape: keyed by the id; FAIL_TO_FAIL and PASS_TO_FAIL are not graded here)."""
    attempt = chosen(result)
    official = attempt.official
    none: dict[str, list[str]] = {"success": [], "failure": []}
    return {
        result.instance_id: {
            "patch_is_None": False,
            "patch_exists": bool(attempt.model_patch.strip()),
            "patch_successfully_applied": official.patch_applied,
            "resolved": official.resolved,
            "tests_status": {
                "FAIL_TO_PASS": official.fail_to_pass.model_dump(),
                "PASS_TO_PASS": official.pass_to_pass.model_dump(),
                "FAIL_TO_FAIL": none,
                "PASS_TO_FAIL": none,
            },
        }
    }


def write_run_files(
    out: Path, results: Sequence[InstanceResult], summary: RunSummary, attempts: int
) -> list[Path]:
    """predictions.jsonl (each instance's chosen attempt: what the App would publish),
    predictions-attempt-N.jsonl with several attempts, and summary.json. Each file is
    replaced whole, so a run stopped at any point leaves them consistent."""
    written = [
        replace_file(out / PREDICTIONS, _jsonl(prediction(r, chosen(r)) for r in results)),
        replace_file(out / SUMMARY, json.dumps(summary, indent=2) + "\n"),
    ]
    if attempts > 1:
        for number in range(1, attempts + 1):
            lines = (
                prediction(r, r.attempts[number - 1]) for r in results if len(r.attempts) >= number
            )
            written.append(replace_file(out / f"predictions-attempt-{number}.jsonl", _jsonl(lines)))
    return written


def write_instance_report(folder: Path, result: InstanceResult) -> Path | None:
    """The instance's SWE-bench report.json, beside its result.json, when the patch was
    evaluated: SWE-bench writes none for an empty patch or an evaluation that could not run,
    and counts an instance without one as an error."""
    if result.status not in ("resolved", "unresolved"):
        return None
    text = json.dumps(instance_report(result), indent=2) + "\n"
    return replace_file(folder / INSTANCE_REPORT, text)


def _jsonl(rows: Iterable[Prediction]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)
