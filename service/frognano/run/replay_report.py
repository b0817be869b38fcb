"""A replay's audit in words: for the terminal (`solve --replay`) and for report.md."""

from __future__ import annotations

from frognano.run.report import ReplayCheckRecord, ReplayRecord, RunReport

__all__ = ["replay_lines", "replay_md"]

DIFF_INTRO = "First difference, recorded (-) against replayed (+):"


def _checks(record: ReplayRecord) -> list[tuple[str, ReplayCheckRecord]]:
    checks = record["checks"]
    return [
        ("task (issue title and body)", checks["task"]),
        ("base tree", checks["base_tree"]),
        ("effective policy", checks["policy"]),
        ("FrogNano version", checks["frognano"]),
        ("environment", checks["environment"]),
        ("tool calls", checks["steps"]),
        ("patch", checks["patch"]),
    ]


def _check(name: str, check: ReplayCheckRecord) -> str:
    status = check["status"]
    if status == "differs":
        return f"{name}: DIFFERS (recorded {check['recorded']}, replayed {check['replayed']})"
    if status == "same" and name == "tool calls":
        return f"{name}: same ({check['replayed']} of {check['recorded']})"
    return f"{name}: {status}"


def _headline(record: ReplayRecord) -> str:
    if record["reproduced"]:
        # The first three checks are the run's inputs: the task, the base tree, the policy.
        unchecked = [name for name, check in _checks(record)[:3] if check["status"] != "same"]
        if unchecked:
            return (
                f"The replay REPRODUCES the steps and patch of its recording "
                f"{record['recording']}; its {', '.join(unchecked)} were NOT checked (not "
                "recorded)."
            )
        return f"The replay REPRODUCES its recording {record['recording']}."
    difference = record["first_difference"]
    why = difference["headline"] if difference else "it did not finish"
    return f"The replay does NOT reproduce its recording {record['recording']}: {why}."


def _details(record: ReplayRecord) -> list[str]:
    applied = ", ".join(record["normalisations"]) or "none"
    return [
        "Checked: " + "; ".join(_check(name, check) for name, check in _checks(record)),
        f"Normalised (inherently variable, see docs/agent.md): {applied}.",
        *(f"Note: {note}." for note in record["notes"]),
    ]


def _diff(record: ReplayRecord) -> str:
    difference = record["first_difference"]
    return difference["diff"] if difference is not None else ""


def replay_lines(record: ReplayRecord) -> list[str]:
    """The audit's verdict, its checks, the normalisations it applied, its notes and, when
    the replay diverged, the first difference with both versions as a diff."""
    diff = _diff(record)
    return [_headline(record), *_details(record), *([DIFF_INTRO, diff] if diff else [])]


def replay_md(report: RunReport) -> list[str]:
    """report.md's section on the replay; nothing for a run of a model."""
    record = report.get("replay")
    if record is None:
        return []
    lines = ["## Replay", "", f"**{_headline(record)}**", ""]
    lines += [f"- {line}" for line in _details(record)]
    diff = _diff(record)
    if diff:
        lines += ["", DIFF_INTRO, "", "```diff", diff, "```"]
    return [*lines, ""]
