"""The collector's record format: the kinds of record, their fields, and what they may hold."""

from __future__ import annotations

import hmac
import json
import math
from collections.abc import Callable, Mapping
from typing import cast

from frognano.run.collected import OUTCOMES, Outcome, Phase, PhaseOutcome

RECORD_VERSION = 1
"""Written as "v" in every record; the plugin and this module change it together."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _is_id(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _optional(check: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda value: value is None or check(value)


def _is_ids(value: object) -> bool:
    return isinstance(value, list) and all(_is_id(item) for item in value)


def _is_duration(value: object) -> bool:
    is_number = isinstance(value, float) or _is_int(value)
    return is_number and math.isfinite(cast(float, value)) and cast(float, value) >= 0


def _is_line(value: object) -> bool:
    return _is_int(value) and cast(int, value) > 0


def _is_phases(value: object) -> bool:
    return isinstance(value, dict) and all(
        phase in ("setup", "call", "teardown") and outcome in ("passed", "failed", "skipped")
        for phase, outcome in value.items()
    )


_COMMON: dict[str, Callable[[object], bool]] = {
    "v": lambda value: _is_int(value) and value == RECORD_VERSION,
    "kind": _is_str,
    "token": _is_str,
    "pid": lambda value: _is_int(value) and cast(int, value) > 0,
    "seq": lambda value: _is_int(value) and cast(int, value) >= 0,
}
_FIELDS: dict[str, dict[str, Callable[[object], bool]]] = {
    "session_start": {
        "pytest": _is_str,
        "python": _is_str,
        "rootdir": _is_str,
        "root": _is_str,
        "xdist": lambda value: value is None or value == "controller",
        "select": _optional(_is_int),
        "select_error": _optional(_is_str),
    },
    "collect_error": {"id": _is_str, "message": _is_str},
    "collected": {"ids": _is_ids},
    "test": {
        "id": _is_id,
        "outcome": lambda value: value in OUTCOMES,
        "duration": _is_duration,
        "phases": _is_phases,
        "crash": _optional(_is_str),
    },
    "coverage": {
        "files": lambda value: (
            isinstance(value, dict)
            and all(
                _is_id(path) and isinstance(lines, list) and all(_is_line(n) for n in lines)
                for path, lines in value.items()
            )
        ),
        "core": _optional(_is_str),
        "error": _optional(_is_str),
    },
    "session_finish": {
        "exitstatus": _is_int,
        "testscollected": _is_int,
        "testsfailed": _is_int,
        "conftests": lambda value: isinstance(value, list) and all(map(_is_str, value)),
    },
}


def consistent(outcome: Outcome, phases: Mapping[Phase, PhaseOutcome]) -> bool:
    """Whether `outcome` is one the collector derives from `phases`."""
    setup, call, teardown = (phases.get(name) for name in ("setup", "call", "teardown"))
    if outcome == "failed":
        return call == "failed"
    if outcome == "error":
        return "failed" in (setup, teardown) or call is None or teardown is None
    if outcome in ("passed", "xpassed"):
        return setup == call == teardown == "passed"
    return teardown == "passed" and "skipped" in (setup, call)  # skipped, xfailed


def decode(raw: bytes, token: bytes) -> dict[str, object] | str:
    """One line of the stream as a record the collector wrote, or why it is not one."""
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):  # bad UTF-8, bad JSON, absurd nesting
        return "not JSON"
    if not isinstance(record, dict):
        return "not a JSON object"
    kind = record.get("kind")
    fields = _FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        return "no record kind the collector writes"
    checks = {**_COMMON, **fields}
    if set(record) != set(checks) or not all(check(record[k]) for k, check in checks.items()):
        return f"a {kind} record of the wrong version or shape"
    if not hmac.compare_digest(record["token"].encode("utf-8", "surrogatepass"), token):
        return "the wrong token"
    return record
