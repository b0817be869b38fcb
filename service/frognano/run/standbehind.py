"""report.json's record of what the tests stand behind (hunks, changed lines), and report.md's."""

from __future__ import annotations

from typing import Literal, TypedDict

from frognano.run.changedlines import ChangedLines, not_executed
from frognano.run.necessity import HunkCheck, Necessity

HunkStatus = Literal["needed", "needed_by_agent_tests_only", "not_needed", "unknown"]


class HunkRecord(TypedDict):
    """One unit of the fix, reverted alone (one hunk, or a file's hunks together)."""

    where: list[str]
    """`path:lines` of each hunk in it, by the patched file's line numbers."""
    preview: list[str]
    """The first added lines of its first hunk (the repository's text: untrusted)."""
    grouped: str
    """Why its hunks were reverted together; empty for a single hunk."""
    status: HunkStatus
    needed_by: list[str]
    """The tests that fail with it reverted."""
    problem: str


class NecessityRecord(TypedDict):
    tests: list[str]
    """The tests each check ran: the ones the fix made pass."""
    agent_tests: list[str]
    """Those of `tests` that the agent added."""
    hunks: list[HunkRecord]
    note: str


class ChangedLinesRecord(TypedDict):
    """Of the fix's added or changed statements (Python files), which any test executed."""

    total: int
    executed: int
    share: float | None
    """executed / total; None when the fix changes no statement."""
    not_executed: dict[str, str]
    """path -> the changed lines no test executed (`3, 7-9`)."""
    unparsed: list[str]
    """Changed Python files whose statements are unknown (they do not parse)."""
    error: str
    """Why the measurement is missing or partial; then it is no evidence at all."""


def changed_lines_record(changed: ChangedLines | None) -> ChangedLinesRecord | None:
    if changed is None:
        return None
    return {
        "total": changed.total,
        "executed": changed.executed,
        "share": changed.share,
        "not_executed": dict(not_executed(changed)),
        "unparsed": list(changed.skipped),
        "error": changed.error,
    }


def changed_lines_sentence(record: ChangedLinesRecord) -> str:
    """One sentence on the changed lines' coverage, FrogNano's own words and numbers only."""
    if record["error"]:
        return f"The changed lines' coverage could not be measured: {record['error']}."
    if record["share"] is None:
        return "The fix changes no Python statement, so no changed line was measured."
    return (
        f"The tests executed {record['executed']} of the {record['total']} added or changed "
        f"statements ({record['share']:.0%})."
    )


def status_of(necessity: Necessity, check: HunkCheck) -> HunkStatus:
    if check.problem:
        return "unknown"
    if not check.needed:
        return "not_needed"
    return "needed" if necessity.backed_by_repository(check) else "needed_by_agent_tests_only"


def necessity_record(necessity: Necessity | None) -> NecessityRecord | None:
    if necessity is None:
        return None
    return {
        "tests": list(necessity.tests),
        "agent_tests": list(necessity.agent_tests),
        "hunks": [
            {
                "where": [hunk.where for hunk in check.unit.hunks],
                "preview": list(check.unit.hunks[0].preview),
                "grouped": check.unit.grouped,
                "status": status_of(necessity, check),
                "needed_by": list(check.needed_by),
                "problem": check.problem,
            }
            for check in necessity.checks
        ],
        "note": necessity.note,
    }


def hunk_phrase(hunk: HunkRecord, agent_tests: list[str]) -> str:
    """What the tests say of one unit, in words, naming tests as they are (untrusted ids)."""
    status = hunk["status"]
    if status == "unknown":
        return f"could not tell ({hunk['problem']})"
    if status == "not_needed":
        return "no test needs this change"
    named = ", ".join(
        test + (" (a test the agent added)" if test in agent_tests else "")
        for test in hunk["needed_by"][:3]
    )
    more = f" and {len(hunk['needed_by']) - 3} more" if len(hunk["needed_by"]) > 3 else ""
    return f"needed by {named}{more}"


def changed_lines_md(record: ChangedLinesRecord | None) -> list[str]:
    if record is None:
        return []
    lines = [changed_lines_sentence(record), ""]
    for path, spans in record["not_executed"].items():
        lines.append(f"- no test executed `{path}` lines {spans}")
    lines += [
        f"- `{path}` does not parse: its statements are unknown" for path in record["unparsed"]
    ]
    return [*lines, ""]


def necessity_md(
    record: NecessityRecord | None, changed: ChangedLinesRecord | None = None
) -> list[str]:
    """report.md's section "What the tests stand behind"."""
    if record is None and changed is None:
        return []
    lines = ["### What the tests stand behind", "", *changed_lines_md(changed)]
    if record is None:
        return lines
    if not record["hunks"]:
        return [*lines, record["note"] or "No hunk of the fix was checked.", ""]
    lines += [
        "Each hunk of the fix was reverted alone and the tests the fix made pass were run "
        "again, in fresh sandboxes. A test that runs a line does not check it: read every "
        "hunk, and most of all those no test needs.",
        "",
    ]
    for hunk in record["hunks"]:
        where = ", ".join(f"`{place}`" for place in hunk["where"])
        lines.append(f"- {where}: {hunk_phrase(hunk, record['agent_tests'])}")
        lines += [f"  > `{line}`" for line in hunk["preview"] if "`" not in line]
        if hunk["grouped"]:
            lines.append(f"  ({hunk['grouped']})")
    if record["note"]:
        lines += ["", record["note"]]
    return [*lines, ""]
