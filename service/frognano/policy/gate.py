"""The gate: a deterministic check of the agent's diff against the admins' policy.

`run_gate` is pure (no I/O, no global state) and returns its findings sorted by path, then
kind. Any `block` finding stops the patch from being published (`blocked`); `warn` findings
go to the reviewer.

Secret scanning uses detect-secrets' detector classes directly, not its global settings
(`transient_settings`/`scan_line` mutate a process-wide singleton, which is not safe when
several gates run at once, and their plugins may try network verification). Kept: the
detectors of provider-specific credential formats (AWS, GitHub, GitLab, Slack, Stripe,
private keys, ...), which rarely fire on ordinary code. Dropped: the two high-entropy-string
plugins (they fire on every hash in lock files, checksums and test fixtures), the keyword
detector (`password = "..."` is everywhere in tests), basic-auth URLs
(`postgres://user:pass@localhost` fixtures), JWTs (sample tokens in tests) and public IPv4
addresses (not secrets). `# pragma: allowlist secret` comments are not honoured: the agent
writes them too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from detect_secrets.filters.heuristic import (
    is_not_alphanumeric_string,
    is_potential_uuid,
    is_sequential_string,
    is_templated_secret,
)
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from frognano.policy.diff import FileChange, parse_diff
from frognano.policy.models import GatePolicy, VerifyPolicy
from frognano.policy.paths import path_matches

Severity = Literal["block", "warn"]

SYMLINK = "120000"
SUBMODULE = "160000"
EXECUTABLE = "100755"

MAX_SCANNED_LINES = 20_000
"""Added lines scanned for secrets and suspicious code; the rest gets a `scan_incomplete`."""
MAX_SCANNED_CHARS = 1_000_000
"""Characters scanned in all, so a few huge lines cannot stall the gate either (the detectors
cost about 1 s per MB of ordinary code, up to 2.5 s per MB of pathological text)."""
SHOWN_CHARS = 200
"""Longest line quoted in a finding."""
_WINDOW = 4096  # long lines are scanned in overlapping windows: linear time, no missed secret
_OVERLAP = 256
_REDACTED = "[REDACTED]"

_DETECTORS: tuple[RegexBasedDetector, ...] = (
    ArtifactoryDetector(),
    AWSKeyDetector(),
    AzureStorageKeyDetector(),
    CloudantDetector(),
    DiscordBotTokenDetector(),
    GitHubTokenDetector(),
    GitLabTokenDetector(),
    IbmCloudIamDetector(),
    IbmCosHmacDetector(),
    MailchimpDetector(),
    NpmDetector(),
    OpenAIDetector(),
    PrivateKeyDetector(),
    PypiTokenDetector(),
    SendGridDetector(),
    SlackDetector(),
    SoftlayerDetector(),
    SquareOAuthDetector(),
    StripeDetector(),
    TelegramBotTokenDetector(),
    TwilioKeyDetector(),
)
# detect-secrets misses `BEGIN ENCRYPTED PRIVATE KEY` (PKCS#8) and other variants.
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")

_SUSPICIOUS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a pytest skip or xfail marker", re.compile(r"\bmark\.(?:skip|skipif|xfail)\b")),
    ("a pytest.skip/xfail/exit call",
     re.compile(r"\bpytest\.(?:skip|xfail|exit|importorskip)\s*\(")),
    ("a unittest skip",
     re.compile(r"\bunittest\.(?:skip\w*|expectedFailure)\b|\bskipTest\s*\(|\bSkipTest\b"
                r"|@skip(?:If|Unless)?\s*\(")),
    ("sys.exit()", re.compile(r"\bsys\.exit\s*\(")),
    ("os._exit()", re.compile(r"\bos\._exit\s*\(")),
    ("raise SystemExit", re.compile(r"\braise\s+SystemExit\b")),
    ("atexit.register", re.compile(r"\batexit\.register\b")),
    ("a pytest reporting hook",
     re.compile(r"\b(?:pytest_runtest_makereport|pytest_report_teststatus"
                r"|pytest_runtest_logreport|pytest_runtest_protocol|pytest_runtest_call"
                r"|pytest_pyfunc_call|pytest_collection_modifyitems|pytest_sessionfinish"
                r"|pytest_terminal_summary|TestReport)\b")),
    ("patching of the test runner",
     re.compile(r"\bimport\s+_pytest\b|\bfrom\s+_pytest\b"
                r"|^\s*(?:pytest|_pytest|unittest)(?:\.\w+)+\s*=(?!=)"
                r"|\bsetattr\(\s*(?:pytest|_pytest|unittest)\b"
                r"|\bsys\.modules\[\s*['\"](?:pytest|_pytest|unittest)"
                r"|\bmonkeypatch\.setattr\(\s*['\"](?:pytest|_pytest|unittest)\b"
                r"|^\s*(?:unittest\.)?TestCase\.\w+\s*=(?!=)|\.exitstatus\s*=(?!=)"
                r"|\bcollect_ignore(?:_glob)?\s*(?:\+?=|\.)")),
    ("a replacement of sys.stdout or sys.stderr",
     re.compile(r"\bsys\.(?:stdout|stderr|__stdout__|__stderr__)\s*=(?!=)")),
    ("pytest options that leave tests out",
     re.compile(r"(?:^|[\s'\"=])(?:--deselect\b|-p\s*no:|--ignore(?:-glob)?\b)")),
)  # fmt: skip
_ALWAYS_EQUAL = "an __eq__ that returns True (or __ne__ that returns False)"
_EQ_DEF = re.compile(r"\bdef\s+(__eq__|__ne__)\s*\(")
_EQ_LAMBDA = re.compile(
    r"\b__eq__\s*=\s*lambda\b[^:]*:\s*True\b|\b__ne__\s*=\s*lambda\b[^:]*:\s*False\b"
)
_EQ_LOOKAHEAD = 6


@dataclass(frozen=True)
class Finding:
    """One thing the gate found in a patch."""

    severity: Severity
    kind: str
    """forbidden_path, too_many_files, too_many_lines, binary, symlink, executable, submodule,
    large_file, secret, suspicious, protected_change, empty, malformed, scan_incomplete."""
    reason: str
    """One sentence a maintainer can act on."""
    path: str | None = None
    line: str | None = None
    """The offending added line, shortened, with secrets redacted."""


@dataclass(frozen=True)
class TreeFacts:
    """What the gate cannot see in the diff: facts about the patched and the base tree."""

    sizes: Mapping[str, int]
    """Size in bytes of each added or modified file in the patched tree."""
    base_paths: frozenset[str] = field(default_factory=frozenset)
    """Paths that exist in the base tree."""


def blocked(findings: Sequence[Finding]) -> bool:
    """Whether any finding stops the patch."""
    return any(finding.severity == "block" for finding in findings)


def run_gate(
    diff: bytes, facts: TreeFacts, gate: GatePolicy, verify: VerifyPolicy
) -> list[Finding]:
    """Every finding of `diff` under the policy, sorted by path (global ones first), then kind."""
    try:
        changes = parse_diff(diff)
    except ValueError as exc:
        return [
            Finding(
                "block",
                "malformed",
                f"the patch could not be read ({_redact(str(exc))}); it cannot be checked, "
                "so it is not published",
            )
        ]
    if not changes:
        return [Finding("block", "empty", "the patch is empty: the agent changed no file")]

    findings: list[Finding] = [*_limits(changes, gate)]
    deleted = {change.path for change in changes if change.status == "deleted"}
    for change in changes:
        findings.extend(_file_findings(change, facts, gate, verify, deleted))
    findings.extend(_scan(changes, gate))

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
    verify: VerifyPolicy,
    deleted: set[str],
) -> Iterator[Finding]:
    path = change.path
    shown = _display(path)
    verb = {"added": "adds", "modified": "changes", "deleted": "deletes"}[change.status]

    forbidden = path_matches(path, gate.forbidden_paths)
    if forbidden is not None:
        yield Finding(
            "block",
            "forbidden_path",
            f"the patch {verb} {shown}, which gate.forbidden_paths forbids ({forbidden!r}); "
            "drop that change or edit the policy",
            path,
        )

    if change.status != "added":
        protected = path_matches(path, verify.protected_paths)
        if protected is not None:
            if verify.on_protected_change == "block":
                yield Finding(
                    "block",
                    "protected_change",
                    f"the patch {verb} the protected test file {shown} ({protected!r}); "
                    "fix the code instead of the tests, or edit verify.protected_paths",
                    path,
                )
            else:
                yield Finding(
                    "warn",
                    "protected_change",
                    f"{shown} was restored to its base content for verification, because the "
                    f"patch {verb} this protected test file ({protected!r})",
                    path,
                )

    yield from _kind_findings(change, gate, shown, verb)
    yield from _content_findings(change, facts, gate, shown, deleted)


def _kind_findings(
    change: FileChange, gate: GatePolicy, shown: str, verb: str
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
    if change.binary and change.status != "deleted" and not gate.allow_binary:
        yield Finding(
            "block",
            "binary",
            f"the patch {verb} the binary file {shown}, which cannot be reviewed in a diff; "
            "drop it or set gate.allow_binary",
            path,
        )


def _content_findings(
    change: FileChange, facts: TreeFacts, gate: GatePolicy, shown: str, deleted: set[str]
) -> Iterator[Finding]:
    """A file over the size limit, a new conftest.py."""
    path = change.path
    if change.status != "deleted" and change.new_mode != SUBMODULE:
        size = facts.sizes.get(path)
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
    if (
        change.status == "added"
        and path.rpartition("/")[2] == "conftest.py"
        and path not in facts.base_paths
        and path not in deleted
    ):
        yield Finding(
            gate.suspicious_patterns,
            "suspicious",
            f"the patch adds a new {shown}, which can change how every test below it runs "
            "and is reported; review it closely",
            path,
        )


@dataclass
class _Hits:
    """Occurrences of one secret type or suspicious pattern in one file."""

    count: int = 0
    first: str = ""
    secrets: tuple[str, ...] = ()
    """The secret values found in `first`, redacted when it is shown."""


def _scan(changes: Sequence[FileChange], gate: GatePolicy) -> Iterator[Finding]:
    """Secrets and suspicious code in added lines, within the scan budget."""
    lines_left, chars_left = MAX_SCANNED_LINES, MAX_SCANNED_CHARS
    skipped = 0
    for change in changes:
        if change.binary or SUBMODULE in (change.old_mode, change.new_mode):
            continue
        secrets: dict[str, _Hits] = {}
        suspicious: dict[str, _Hits] = {}
        lines = change.added_lines
        for number, line in enumerate(lines):
            if lines_left <= 0 or chars_left < len(line):
                skipped += len(lines) - number
                break
            lines_left -= 1
            chars_left -= len(line)
            if gate.secret_scan:
                found = list(_secrets(line))
                for kind in dict.fromkeys(kind for kind, _ in found):
                    _count(secrets, kind, line, tuple(value for _, value in found))
            for label in _suspicious_labels(line, lines, number):
                _count(suspicious, label, line)
        shown = _display(change.path)
        for kind, hits in secrets.items():
            yield Finding(
                "block",
                "secret",
                f"{shown} adds what looks like a secret ({kind}, {_lines(hits.count)}); "
                "remove it, and rotate it if it is real",
                change.path,
                _shown_line(hits.first, hits.secrets),
            )
        for label, hits in suspicious.items():
            yield Finding(
                gate.suspicious_patterns,
                "suspicious",
                f"{shown} adds {label} ({_lines(hits.count)}), which can make failing tests "
                "pass without a fix; check that it is justified",
                change.path,
                _shown_line(hits.first),
            )
    if skipped:
        what = "secrets and suspicious code" if gate.secret_scan else "suspicious code"
        yield Finding(
            "warn",
            "scan_incomplete",
            f"the scan for {what} stopped at its budget ({MAX_SCANNED_LINES} lines, "
            f"{MAX_SCANNED_CHARS} characters); {skipped} added lines were not scanned, so "
            "review them by hand",
        )


def _count(hits: dict[str, _Hits], key: str, line: str, secrets: tuple[str, ...] = ()) -> None:
    entry = hits.setdefault(key, _Hits(first=line, secrets=secrets))
    entry.count += 1


def _lines(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"


def _secrets(text: str) -> Iterator[tuple[str, str]]:
    """(secret type, secret value) of each secret in `text`, long lines in windows."""
    step = _WINDOW - _OVERLAP
    for start in range(0, max(len(text) - _OVERLAP, 1), step):
        yield from _secrets_in(text[start : start + _WINDOW])


def _secrets_in(text: str) -> Iterator[tuple[str, str]]:
    for match in _PRIVATE_KEY.finditer(text):
        yield "Private Key", match.group(0)
    for detector in _DETECTORS:
        for value in detector.analyze_string(text):
            if not (
                is_sequential_string(value)
                or is_potential_uuid(value)
                or is_templated_secret(value)
                or is_not_alphanumeric_string(value)
            ):
                yield str(detector.secret_type), value


def _suspicious_labels(line: str, lines: Sequence[str], number: int) -> Iterable[str]:
    labels = [label for label, pattern in _SUSPICIOUS if pattern.search(line)]
    if _EQ_LAMBDA.search(line) or _always_equal(line, lines, number):
        labels.append(_ALWAYS_EQUAL)
    return labels


def _always_equal(line: str, lines: Sequence[str], number: int) -> bool:
    """Whether `line` defines __eq__ (__ne__) whose first statement returns True (False)."""
    match = _EQ_DEF.search(line)
    if not match:
        return False
    constant = "True" if match.group(1) == "__eq__" else "False"
    returns = re.compile(rf"^\s*return\s+\(?\s*{constant}\b")
    _, colon, inline = line[match.end() :].partition(":")
    inline = inline.split("#", 1)[0].strip()
    if colon and inline:  # def __eq__(self, other): return True
        return bool(returns.match(inline))
    in_docstring = False
    for body in lines[number + 1 : number + 1 + _EQ_LOOKAHEAD]:
        stripped = body.strip()
        if in_docstring:
            in_docstring = not stripped.endswith(('"""', "'''"))
            continue
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith(('"""', "'''")):
            quote = stripped[:3]
            in_docstring = not (len(stripped) >= 6 and stripped.endswith(quote))
            continue
        return bool(returns.match(body))
    return False


def _redact(text: str, known: Iterable[str] = ()) -> str:
    """`text` with every secret the detectors see, and the `known` ones, replaced by a marker."""
    found = {*known, *(value for _, value in _secrets(text))}
    values = sorted(found, key=len, reverse=True)
    for value in values:
        text = text.replace(value, _REDACTED)
    return text


def _shown_line(line: str, known: Iterable[str] = ()) -> str:
    # Only the start is shown; the margin keeps any secret that reaches into it whole.
    text = _redact(line.strip()[: SHOWN_CHARS + _OVERLAP], known)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def _display(path: str) -> str:
    """`path` for a sentence: bytes that are not UTF-8 shown as U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
