"""Hand-built collector streams: records numbered and tokened as the collector writes them."""

from __future__ import annotations

import json

from frognano.run.results import (
    CollectorReport,
    Outcome,
    parse_records,
)

TOKEN = "0123456789abcdef"
PASSED = {"setup": "passed", "call": "passed", "teardown": "passed"}
PHASES: dict[str, dict[str, str]] = {
    "passed": PASSED,
    "xpassed": PASSED,
    "failed": {"setup": "passed", "call": "failed", "teardown": "passed"},
    "error": {"setup": "failed", "teardown": "passed"},
    "skipped": {"setup": "passed", "call": "skipped", "teardown": "passed"},
    "xfailed": {"setup": "passed", "call": "skipped", "teardown": "passed"},
}


class Session:
    """Records of one pytest process, numbered as the collector numbers them."""

    def __init__(self, pid: int = 4242, token: str = TOKEN) -> None:
        self.pid = pid
        self.token = token
        self.seq = 0

    def record(self, kind: str, **fields: object) -> dict[str, object]:
        record: dict[str, object] = {"v": 1, "kind": kind, "token": self.token}
        record.update(pid=self.pid, seq=self.seq, **fields)
        self.seq += 1
        return record

    def start(self, **fields: object) -> dict[str, object]:
        values: dict[str, object] = {
            "pytest": "9.2.0",
            "python": "3.11.7",
            "rootdir": "/workspace",
            "root": "/workspace",
            "xdist": None,
            "select": None,
            "select_error": None,
        }
        return self.record("session_start", **{**values, **fields})

    def collected(self, *ids: str) -> dict[str, object]:
        return self.record("collected", ids=list(ids))

    def test(
        self, test_id: str, outcome: Outcome = "passed", /, **fields: object
    ) -> dict[str, object]:
        values: dict[str, object] = {
            "id": test_id,
            "outcome": outcome,
            "duration": 0.01,
            "phases": PHASES[outcome],
            "crash": "AssertionError: no" if outcome in ("failed", "error") else None,
        }
        return self.record("test", **{**values, **fields})

    def collect_error(self, node_id: str, message: str = "ImportError") -> dict[str, object]:
        return self.record("collect_error", id=node_id, message=message)

    def finish(self, exitstatus: int = 0, testsfailed: int = 0) -> dict[str, object]:
        return self.record(
            "session_finish",
            exitstatus=exitstatus,
            testscollected=0,
            testsfailed=testsfailed,
            conftests=[],
        )

    def run(self, outcomes: dict[str, Outcome], exitstatus: int | None = None) -> list[object]:
        """A whole session: start, collected, one record per test, finish."""
        failed = sum(outcome in ("failed", "error") for outcome in outcomes.values())
        status = exitstatus if exitstatus is not None else (1 if failed else 0)
        return [
            self.start(),
            self.collected(*outcomes),
            *(self.test(i, o) for i, o in outcomes.items()),
            self.finish(status, failed),
        ]


def stream(*records: object) -> bytes:
    return b"".join(
        record if isinstance(record, bytes) else json.dumps(record).encode() + b"\n"
        for record in records
    )


def parse(*records: object) -> CollectorReport:
    return parse_records(stream(*records), TOKEN)


def kinds(report: CollectorReport) -> list[str]:
    return [problem.kind for problem in report.problems]
