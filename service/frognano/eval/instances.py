"""SWE-bench-format instances: read from JSONL or a JSON list, checked, selected."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)

from frognano.errors import ConfigError

_ID = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,199}$"
"""Instance ids name folders: no separators, no leading dot (`astropy__astropy-12907`)."""


def _test_list(value: Any) -> Any:
    """The public datasets hold FAIL_TO_PASS and PASS_TO_PASS as JSON-encoded strings;
    others hold lists. Both are accepted; an empty string is an empty list."""
    if isinstance(value, str):
        if not value.strip():
            return []
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ValueError(f"not a JSON list of test ids: {exc}") from None
    return value


def _no_dot_name(repo: str) -> str:
    if repo.split("/", 1)[1] in {".", ".."}:
        raise ValueError("a repository is not named . or ..")
    return repo


TestIds = Annotated[list[Annotated[str, Field(min_length=1)]], BeforeValidator(_test_list)]


class Instance(BaseModel):
    """One task in SWE-bench's fields, plus FrogNano's optional environment fields."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    instance_id: str = Field(pattern=_ID)
    repo: Annotated[
        str,
        Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9_.\-]+$"),
        AfterValidator(_no_dot_name),
    ]
    """`owner/name` as GitHub spells them: it names a folder under --repos, never outside."""
    base_commit: str = Field(pattern=r"^[0-9a-f]{7,64}$")
    problem_statement: str
    patch: str = ""
    """The gold patch (`--gold`); the agent never sees it."""
    test_patch: str = ""
    fail_to_pass: TestIds = Field(alias="FAIL_TO_PASS")
    pass_to_pass: TestIds = Field(default_factory=list, alias="PASS_TO_PASS")
    version: str = ""
    hints_text: str = ""
    """Not given to the agent, as in SWE-bench's standard setting."""
    test_command: str | None = None
    """FrogNano's: the test command for this instance (pytest, the collector selects the
    ids); None takes the policy's verify.command."""
    setup: list[str] | None = None
    """FrogNano's: commands run offline after the upload (the policy's sandbox.setup)."""

    @property
    def title(self) -> str:
        """The issue's title as the agent gets it: the statement's first line, as GitHub
        would show an issue made from it."""
        first = self.problem_statement.strip().splitlines()[0] if self.problem_statement else ""
        return first.lstrip("# ").strip()[:200] or self.instance_id


def load_instances(path: Path) -> list[Instance]:
    """Every instance of a `.jsonl` file (one object a line) or a `.json` list; each error
    names the line or index and the field, and one bad instance refuses the whole file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the instances file {path}: {exc}") from None
    stripped = text.lstrip()
    rows: list[tuple[str, Any]]
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{path} is not valid JSON: {exc}") from None
        rows = [(f"item {i}", row) for i, row in enumerate(data)]
    else:
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append((f"line {number}", json.loads(line)))
            except ValueError as exc:
                raise ConfigError(f"{path}, line {number}: not a JSON object: {exc}") from None
    instances: list[Instance] = []
    seen: set[str] = set()
    for where, row in rows:
        try:
            instance = Instance.model_validate(row)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"]) or "the object"
            raise ConfigError(f"{path}, {where}: {field}: {error['msg']}") from None
        if instance.instance_id in seen:
            raise ConfigError(f"{path}, {where}: instance_id {instance.instance_id} repeats")
        seen.add(instance.instance_id)
        instances.append(instance)
    if not instances:
        raise ConfigError(f"{path} holds no instances")
    return instances


def select(
    instances: Sequence[Instance],
    *,
    ids: Sequence[str] = (),
    pattern: str | None = None,
    slice_text: str | None = None,
) -> list[Instance]:
    """`--instance-ids`, then `--filter REGEX` (searched in the id), then `--slice A:B`
    (Python's slice of what is left, as mini-swe-agent takes it)."""
    chosen = list(instances)
    if ids:
        known = {i.instance_id for i in chosen}
        missing = [i for i in ids if i not in known]
        if missing:
            raise ConfigError(f"--instance-ids names unknown instances: {', '.join(missing)}")
        wanted = set(ids)
        chosen = [i for i in chosen if i.instance_id in wanted]
    if pattern is not None:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"--filter is not a regular expression: {exc}") from None
        chosen = [i for i in chosen if compiled.search(i.instance_id)]
    if slice_text is not None:
        chosen = chosen[_slice(slice_text)]
    return chosen


def _slice(text: str) -> slice:
    match = re.fullmatch(r"(-?\d*):(-?\d*)", text.strip())
    if match is None:
        raise ConfigError(f"--slice takes START:STOP (e.g. 0:10), not {text!r}")
    start, stop = (int(part) if part else None for part in match.groups())
    return slice(start, stop)
