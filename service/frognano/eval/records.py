"""What `frognano eval` records per attempt and per instance (each instance's result.json)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Mode = Literal["agent", "gold", "predictions"]
Status = Literal["resolved", "unresolved", "empty_patch", "error"]
"""SWE-bench's kinds: an empty patch is not evaluated; an error is a run that could not say."""

RESULT_FILE = "result.json"


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TestsStatus(_Record):
    """SWE-bench's `tests_status` of one list of tests: which passed and which did not."""

    __test__ = False  # a record, not a pytest test class

    success: list[str]
    failure: list[str]


class Official(_Record):
    """The official evaluation of one patch: the test_patch applied after it, FAIL_TO_PASS and
    PASS_TO_PASS run in a fresh sandbox from a pristine tree."""

    status: Status
    reason: str
    patch_applied: bool
    fail_to_pass: TestsStatus
    pass_to_pass: TestsStatus
    seconds: float
    """The whole evaluation: its sandbox, the tree, the setup and the tests."""
    test_seconds: float = 0.0
    """The test command's own run."""
    test_output: str = ""
    """Head and tail of what the test command printed (for people; it decides nothing)."""

    @property
    def resolved(self) -> bool:
        return self.status == "resolved"


class Verdict(_Record):
    """FrogNano's own verdict on the attempt (its report.json), beside the official one."""

    ready: bool
    reason: str
    strength: list[float]
    """`ranking.Strength.key()`: the order best-of-K chooses by (smaller is stronger)."""
    evidence: str
    """`ranking.Strength.describe()`, for people."""


class Attempt(_Record):
    """One try at an instance: the agent's run (or the given patch) and its evaluation."""

    attempt: int
    model_patch: str
    official: Official
    verdict: Verdict | None = None
    """None in `--gold` and `--predictions` modes, and when the agent's run failed."""
    steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    agent_seconds: float = 0.0
    stop_reason: str | None = None
    error: str | None = None
    """Why the run failed before it had a patch (the model server, the sandbox)."""
    run_dir: str | None = None
    """The attempt's folder, relative to the instance's (patch.diff, trajectory.jsonl,
    report.json, report.md); None when nothing ran."""


class InstanceResult(_Record):
    """An instance done: written last, atomically, so its presence means finished."""

    instance_id: str
    mode: Mode
    model_name_or_path: str
    attempts: list[Attempt] = Field(min_length=1)
    chosen: int
    """Index into `attempts` of the one FrogNano's own evidence ranks strongest (best-of-K,
    without the hidden tests); 0 with one attempt."""
    seconds: float = 0.0
    """Wall time of the whole instance: check-out, every attempt, every evaluation."""

    @model_validator(mode="after")
    def _chosen_is_an_attempt(self) -> InstanceResult:
        if not 0 <= self.chosen < len(self.attempts):
            raise ValueError(f"chosen is {self.chosen}, with {len(self.attempts)} attempt(s)")
        return self

    @property
    def status(self) -> Status:
        """The chosen attempt's: what predictions.jsonl submits for the instance."""
        return self.attempts[self.chosen].official.status

    @property
    def resolved(self) -> bool:
        return self.status == "resolved"

    @property
    def complete(self) -> bool:
        """No attempt's run failed (the model server, a sandbox, the base's check-out): a
        resumed eval keeps it; one with a failed run is tried again."""
        return not any(attempt.error for attempt in self.attempts)


def write_result(folder: Path, result: InstanceResult) -> None:
    """Write result.json whole or not at all: a reader never sees half of it."""
    replace_file(folder / RESULT_FILE, json.dumps(result.model_dump(mode="json"), indent=2) + "\n")


def replace_file(path: Path, text: str) -> Path:
    """Write `text` to `path` whole or not at all (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def read_result(folder: Path) -> InstanceResult | None:
    """The instance's result, or None when it is not finished (or its file is not ours)."""
    path = folder / RESULT_FILE
    try:
        return InstanceResult.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None
