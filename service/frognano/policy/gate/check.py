"""The gate: a deterministic, pure check of the agent's diff against the admins' policy."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from frognano.policy.gate import automation, credentials, scan, secrets
from frognano.policy.gate.diff import FileChange, parse_diff
from frognano.policy.gate.findings import (
    EXECUTABLE,
    SUBMODULE,
    SYMLINK,
    Finding,
    Severity,
    TreeFacts,
    display,
)
from frognano.policy.models import GatePolicy
from frognano.policy.paths import path_matches

__all__ = ["SHOWN_CHARS", "Finding", "Severity", "TreeFacts", "blocked", "run_gate"]

SHOWN_CHARS = scan.SHOWN_CHARS

_STARTUP_FILES = ("sitecustomize.py", "usercustomize.py")


def blocked(findings: Sequence[Finding]) -> bool:
    """Whether any finding stops the patch."""
    return any(finding.severity == "block" for finding in findings)


def run_gate(diff: bytes, facts: TreeFacts, gate: GatePolicy) -> list[Finding]:
    """Every finding of `diff` under the policy, sorted by path (global ones first), then kind.

    Pure: no I/O, and nothing it keeps between calls changes an answer. Any `block` finding
    stops the patch from being published (`blocked`); `warn` findings go to the reviewer. The
    checks live beside it: `scan` (file contents, within a budget) runs `secrets`, `pycode`
    (Python's syntax tree) and `textcode` (other text); `automation` says what CI runs.
    """
    try:
        changes = parse_diff(diff)
    except ValueError as exc:
        return [
            Finding(
                "block",
                "malformed",
                f"the patch could not be read ({secrets.redact(str(exc))}); it cannot be "
                "checked, so it is not published",
            )
        ]
    if not changes:
        return [Finding("block", "empty", "the patch is empty: the agent changed no file")]

    findings: list[Finding] = [*_limits(changes, gate)]
    deleted = {change.path for change in changes if change.status == "deleted"}
    for change in changes:
        findings.extend(_file_findings(change, facts, gate, deleted))
    findings.extend(scan.scan(changes, facts, gate))

    unique = list(dict.fromkeys(findings))  # a type change lists its path twice
    unique.sort(key=lambda finding: (finding.path or "", finding.kind))
    return unique


def _limits(changes: Sequence[FileChange], gate: GatePolicy) -> Iterator[Finding]:
    files = len({change.path for change in changes})
    if files > gate.max_files_changed:
        yield Finding(
            "block",
            "too_many_files",
            f"the patch changes {files} files, more than gate.max_files_changed "
            f"({gate.max_files_changed}); narrow the change or raise the limit",
        )
    lines = sum(change.added_count + change.removed_lines for change in changes)
    if lines > gate.max_lines_changed:
        yield Finding(
            "block",
            "too_many_lines",
            f"the patch adds and removes {lines} lines, more than gate.max_lines_changed "
            f"({gate.max_lines_changed}); narrow the change or raise the limit",
        )


def _file_findings(
    change: FileChange,
    facts: TreeFacts,
    gate: GatePolicy,
    deleted: set[str],
) -> Iterator[Finding]:
    path = change.path
    shown = display(path)
    verb = {"added": "adds", "modified": "changes", "deleted": "deletes"}[change.status]
    yield from _path_findings(change, facts, gate, shown, verb)

    yield from _kind_findings(change, facts, gate, shown, verb)
    yield from _content_findings(change, facts, gate, shown, deleted)


def _path_findings(
    change: FileChange, facts: TreeFacts, gate: GatePolicy, shown: str, verb: str
) -> Iterator[Finding]:
    """Forbidden paths, files the workflows run, credential file names."""
    path = change.path
    forbidden = _forbidden(path, gate)
    run = automation.runs(path, facts.automation_paths)
    if forbidden is not None:
        yield Finding(
            "block",
            "forbidden_path",
            f"the patch {verb} {shown}, which gate.forbidden_paths forbids ({forbidden!r}); "
            "drop that change or edit the policy",
            path,
        )
    elif run is not None:
        names = facts.automation_runners.get(run, ())
        plural = "s" if len(names) > 1 else ""
        who = f"the workflow{plural} {', '.join(names)}" if names else "a workflow of the base"
        what = f"is part of {run}, which {who} uses" if run.endswith("/") else f"{who} runs"
        yield Finding(
            "block",
            "forbidden_path",
            f"the patch {verb} {shown}, which {what}; a change to what CI runs needs a human, "
            "so drop it",
            path,
        )
    description = credentials.credential_file(path)
    if gate.secret_scan and description is not None and change.status != "deleted":
        yield Finding(
            "block",
            "secret",
            f"the patch {verb} {shown}, {description}; keep credentials out of the "
            "repository (and rotate them if they are real)",
            path,
        )


def _forbidden(path: str, gate: GatePolicy) -> str | None:
    """The forbidden_paths pattern `path` matches, unless allowed_paths exempts it.

    Forbidden paths also match in any case (a checkout on macOS or Windows reads `.VSCode/` as
    `.vscode/`); allowed paths match exactly, so an exemption is never wider than written.
    """
    if path_matches(path, gate.allowed_paths) is not None:
        return None
    found = path_matches(path, gate.forbidden_paths)
    if found is None:
        lowered = [pattern.lower() for pattern in gate.forbidden_paths]
        matched = path_matches(path.lower(), lowered)
        found = None if matched is None else gate.forbidden_paths[lowered.index(matched)]
    return found


def _kind_findings(
    change: FileChange, facts: TreeFacts, gate: GatePolicy, shown: str, verb: str
) -> Iterator[Finding]:
    """Submodules, symlinks, executables and binary files."""
    path = change.path
    modes = (change.old_mode, change.new_mode)
    if SUBMODULE in modes:
        yield Finding(
            "block",
            "submodule",
            f"the patch {verb} the submodule (gitlink) {shown}, whose content cannot be "
            "reviewed in a diff; drop that change",
            path,
        )
    if change.new_mode == SYMLINK and not gate.allow_symlinks:
        what = "changes the target of" if change.old_mode == SYMLINK else "makes"
        yield Finding(
            "block",
            "symlink",
            f"the patch {what} the symlink {shown}; symlinks can point outside the "
            "repository, so drop it or set gate.allow_symlinks",
            path,
        )
    if change.new_mode == EXECUTABLE and change.old_mode != EXECUTABLE:
        yield Finding(
            "warn",
            "executable",
            f"the patch makes {shown} executable (mode 100755); check that it should be",
            path,
        )
    if scan.binary(change, facts) and not gate.allow_binary:
        yield Finding(
            "block",
            "binary",
            f"the patch {verb} the binary file {shown} (a NUL byte or bytes that are not "
            "UTF-8), which cannot be reviewed in a diff; drop it or set gate.allow_binary",
            path,
        )


def _content_findings(
    change: FileChange, facts: TreeFacts, gate: GatePolicy, shown: str, deleted: set[str]
) -> Iterator[Finding]:
    """A file over the size limit, a new conftest.py or start-up file."""
    path = change.path
    if change.status != "deleted" and change.new_mode != SUBMODULE:
        size = facts.sizes.get(path)
        if size is None and path in facts.contents:
            size = len(facts.contents[path])
        if size is None and change.added_lines:
            # Unknown size: the added text is a lower bound (one character is >= one byte).
            size = sum(map(len, change.added_lines)) + len(change.added_lines) - 1
        if size is not None and size > gate.max_file_bytes:
            yield Finding(
                "block",
                "large_file",
                f"{shown} is {size} bytes after the patch, more than gate.max_file_bytes "
                f"({gate.max_file_bytes}); keep generated or data files out of the patch",
                path,
            )
    name = path.rpartition("/")[2]
    new = change.status == "added" and path not in facts.base_paths and path not in deleted
    if new and name == "conftest.py":
        yield Finding(
            gate.suspicious_patterns,
            "suspicious",
            f"the patch adds a new {shown}, which can change how every test below it runs "
            "and is reported; review it closely",
            path,
        )
    elif new and name in ("pytest.ini", ".pytest.ini"):
        yield Finding(
            gate.suspicious_patterns,
            "suspicious",
            f"the patch adds {shown}, which takes over from every other pytest configuration "
            "of the project (its options, warning filters and markers); review it closely",
            path,
        )
    elif new and name in _STARTUP_FILES:
        yield Finding(
            gate.suspicious_patterns,
            "suspicious",
            f"the patch adds {shown}, which Python runs at start-up, before any test; "
            "review it closely",
            path,
        )
