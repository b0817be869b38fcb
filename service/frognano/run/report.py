"""report.json's shape, as `build_report` writes it and every reader of a run's report takes it."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from frognano.policy.gate.findings import Severity
from frognano.policy.models import Require
from frognano.run.collected import Outcome
from frognano.run.outcomes import Role
from frognano.run.standbehind import ChangedLinesRecord, NecessityRecord

__all__ = [
    "RUN_STAGES",
    "ComparisonList",
    "ComparisonRecord",
    "DurationsRecord",
    "EnvironmentRecord",
    "FindingRecord",
    "GateRecord",
    "HostPathRecord",
    "InstallStepRecord",
    "InstructionFileRecord",
    "InstructionFileStatus",
    "InstructionsRecord",
    "LeftOutLinkRecord",
    "OutcomeRecord",
    "PatchRecord",
    "PolicyRecord",
    "ReplayCheckRecord",
    "ReplayChecksRecord",
    "ReplayDifferenceRecord",
    "ReplayRecord",
    "RunReport",
    "RunStage",
    "SandboxRecord",
    "StageDurations",
    "SuiteRunKey",
    "SuiteRunRecord",
    "TokensRecord",
    "VerificationRecord",
]

# The key order of report.json is the order in which `build_report` writes the keys, not the
# order declared here; values that a run may not reach are None, never missing keys (the
# stage durations excepted: a stage that did not run has none).

RunStage = Literal["environment", "prepare", "agent", "diff", "verify"]
"""The timed stages of a run, in the order a run goes through them."""
RUN_STAGES: tuple[RunStage, ...] = ("environment", "prepare", "agent", "diff", "verify")


class OutcomeRecord(TypedDict):
    patch_ready: bool
    reason: str


class TokensRecord(TypedDict):
    prompt: int
    completion: int
    cached: int | None
    """None when the model server does not report cache hits."""
    last_prompt: int


class StageDurations(TypedDict, total=False):
    """Seconds per stage; only the stages the run reached."""

    environment: float
    prepare: float
    agent: float
    diff: float
    verify: float


class DurationsRecord(StageDurations):
    """Seconds: the whole run, each stage it reached, the model's and the tools' share."""

    total: float
    model: float
    tools: float


class HostPathRecord(TypedDict):
    """A host folder the sandbox shows at its own path, and what stands for it in the report."""

    path: str
    placeholder: str


class InstallStepRecord(TypedDict):
    command: str
    seconds: float
    exit_code: int | None


class EnvironmentRecord(TypedDict):
    """The environment phase: which environment the run's sandboxes used and how it came."""

    key: str
    cache_hit: bool
    seconds: float
    """What the phase cost this run (the lookup, plus the build on a miss)."""
    build_seconds: float
    size_bytes: int
    index_url: str
    commands: list[str]
    detected: bool
    """True: detected from the repository's files; False: the policy's environment.install."""
    notes: list[str]
    refused: list[str]
    """`host:port (how)` of each connection the build tried besides the approved hosts; the
    proxy refused them. Empty on a cache hit (the build that made it said so then)."""
    steps: list[InstallStepRecord]
    """Each command this run's build ran (the venv's creation first); empty on a cache hit."""


class SandboxRecord(TypedDict):
    backend: str
    mechanism: str | None
    host_paths: list[HostPathRecord]
    """The text of the report (test output, the agent's words, errors) names these folders by
    their placeholders; the trajectory keeps what the agent saw."""
    environment: NotRequired[EnvironmentRecord]
    """Only when the policy names a package index (environment.index_url)."""


class PatchRecord(TypedDict):
    files: list[str]
    insertions: int
    deletions: int
    bytes: int


class SuiteRunRecord(TypedDict):
    """One run of the test command (`TestRun`)."""

    role: Role
    command: str
    exit_code: int | None
    passed: bool
    complete: bool
    timed_out: bool
    cached: bool
    summary: str
    duration: float
    tests: dict[str, Outcome]
    failures: dict[str, str]
    collection_errors: dict[str, str]
    problems: list[str]
    output: str


class ComparisonRecord(TypedDict):
    """Test ids, base against base + patch (`Comparison`)."""

    fixed: list[str]
    broken: list[str]
    still_failing: list[str]
    fails_differently: list[str]
    skipped: list[str]
    new_tests: list[str]
    new_evidence: list[str]
    passing: int


ComparisonList = Literal[
    "fixed", "broken", "still_failing", "fails_differently", "skipped", "new_tests", "new_evidence"
]
"""The keys of a `ComparisonRecord` that list test ids."""


class VerificationRecord(TypedDict):
    require: Require
    held: bool
    reason: str
    baseline_usable: bool
    restored: list[str]
    restored_why: dict[str, str]
    effective_files: list[str]
    new_test_files: list[str]
    comparison: ComparisonRecord | None
    """None, like the runs, when verification stopped before running any tests."""
    baseline: SuiteRunRecord | None
    verification: SuiteRunRecord | None
    new_on_patched: SuiteRunRecord | None
    new_on_base: SuiteRunRecord | None
    notes: list[str]
    limits: list[str]
    hunks: NecessityRecord | None
    """Which hunks of the fix the tests need (policy verify.hunks); None when not checked."""
    changed_lines: ChangedLinesRecord | None
    """Which changed lines the tests executed (verify.changed_line_coverage); None: not
    measured."""


SuiteRunKey = Literal["baseline", "verification", "new_on_patched", "new_on_base"]
"""The keys of a `VerificationRecord` that hold a `SuiteRunRecord`."""


class FindingRecord(TypedDict):
    severity: Severity
    kind: str
    reason: str
    path: str | None
    line: str | None


class GateRecord(TypedDict):
    passed: bool
    findings: list[FindingRecord]


class PolicyRecord(TypedDict):
    source: str
    repo: str
    effective: dict[str, object]
    """The effective policy as JSON (`EffectivePolicy.model_dump`)."""


InstructionFileStatus = Literal["used", "absent", "skipped"]
"""What became of one of the policy's `agent.instructions_files`."""


class InstructionFileRecord(TypedDict):
    """One of the policy's `agent.instructions_files`, as read from the base tree."""

    path: str
    status: InstructionFileStatus
    bytes: int
    """Bytes of the file in the agent's first message; 0 unless used."""
    size: int | None
    """The file's size in bytes; None when it was not opened (absent, or refused before)."""
    cut: bool
    """Only the beginning of the file was used: it was over the cap."""
    reason: str | None
    """Why it was skipped; None unless skipped."""


class InstructionsRecord(TypedDict):
    """What went into the agent's first message besides the issue."""

    policy_text_bytes: int
    """Bytes of the policy's `agent.instructions`; 0 when it has none."""
    files: list[InstructionFileRecord]
    """Every path of `agent.instructions_files`, in the policy's order."""


class LeftOutLinkRecord(TypedDict):
    """A symlink of the repository left out of the base tree: it leads outside the repository."""

    path: str
    target: str
    """Where it points: repository content, untrusted."""


class HiddenRecord(TypedDict):
    """Content of an untrusted text that GitHub does not show (an HTML comment, a link
    reference definition, invisible characters), removed before the agent saw the text."""

    source: str
    """Where it was: "the issue body", "the review", "AGENTS.md", ..."""
    kind: str
    count: int
    excerpt: str
    """The start of what was removed, on one line, invisible characters named: untrusted."""


class FollowUpRecord(TypedDict):
    """A follow-up run: which round, what review it answered, and its two diffs."""

    round: int
    review_id: int | None
    line_comments: int
    head_commit: str | None
    """The head's commit in the agent's sandbox (over `base_commit`); this round's diff is
    taken against it."""
    increment: PatchRecord | None
    """This round's diff against the head; `patch` is the cumulative diff against the base."""
    cumulative: PatchRecord | None
    gate: GateRecord | None
    """The gate's findings about the increment; `gate` holds the cumulative diff's."""


ReplayCheckStatus = Literal["same", "differs", "not recorded", "not compared"]
"""`not recorded`: the recording predates the field; `not compared`: nothing to compare with."""


class ReplayCheckRecord(TypedDict):
    status: ReplayCheckStatus
    recorded: str | None
    replayed: str | None


class ReplayChecksRecord(TypedDict):
    """What a replay compared with its recording. `task`, `base_tree` and `policy` that
    differ stop the replay before the agent runs; `frognano` and `environment` are notes."""

    task: ReplayCheckRecord
    base_tree: ReplayCheckRecord
    policy: ReplayCheckRecord
    frognano: ReplayCheckRecord
    environment: ReplayCheckRecord
    steps: ReplayCheckRecord
    """recorded/replayed: how many tool calls each has (the replay's up to the first
    difference: it stops there)."""
    patch: ReplayCheckRecord
    """The recorded patch's sha256 against the replay's (`not compared` without one)."""


class ReplayDifferenceRecord(TypedDict):
    """The first thing that differs: a run input, a step's field, the run's end or the patch."""

    what: str
    """`task`, `base_tree`, `policy`, `patch`, `steps`, `stop_reason`, or a tool call's
    `arguments`, `result`, `name`, `is_error`, `executed`."""
    step: int | None
    tool: str | None
    call_id: str | None
    headline: str
    recorded: str
    replayed: str
    diff: str
    """A unified diff of the two versions, after the normalisations (cut)."""


class ReplayRecord(TypedDict):
    recording: str
    reproduced: bool
    first_difference: ReplayDifferenceRecord | None
    normalisations: list[str]
    """The normalisations that changed a compared text (docs/agent.md lists them all)."""
    checks: ReplayChecksRecord
    notes: list[str]


class RunReport(TypedDict):
    """report.json. `patch`, `verification` and `gate` are None when the run did not get
    that far; `stop_reason` is None when the agent never ran."""

    run_id: str
    frognano: str
    started_at: str
    repo: str
    repo_dir: str
    issue_title: str
    outcome: OutcomeRecord
    stop_reason: str | None
    stop_detail: str | None
    summary: str
    steps: int
    max_steps: int
    tokens: TokensRecord
    tool_calls: int
    tool_errors: int
    tools_used: dict[str, int]
    truncated_turns: int
    format_reminders: int
    compactions: int
    durations: DurationsRecord
    sandbox: SandboxRecord
    base_commit: str | None
    left_out_links: list[LeftOutLinkRecord]
    """Symlinks of the repository the base tree does not hold (the worker's download leaves
    out those leading outside the repository); a patch may not touch them."""
    hidden_input: list[HiddenRecord]
    """What the issue, the review and the instruction files held that GitHub does not show;
    the agent was given them without it. Empty when the agent never ran."""
    patch: PatchRecord | None
    verification: VerificationRecord | None
    gate: GateRecord | None
    policy: PolicyRecord
    instructions: InstructionsRecord | None
    """None when the run stopped before the repository was read."""
    error: str | None
    follow_up: NotRequired[FollowUpRecord]
    """Only in a follow-up's report: a first run's has no such key."""
    replay: NotRequired[ReplayRecord]
    """Only in a replay's report (`solve --replay`, `trajectory replay`)."""
