"""What FrogNano writes on GitHub about a run: PR title and body, commit message, check run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from frognano.agent.story import Story
from frognano.app.markdown import (
    BODY_BUDGET,
    CHECK_BUDGET,
    Part,
    code,
    fence,
    fit,
    fixed,
    md,
    quote,
    shorten,
    single_line,
)
from frognano.app.review import HUMAN_REVIEW_CHECK
from frognano.app.standbehind import stand_behind_parts
from frognano.app.story import story_parts
from frognano.run.instructions import instructions_line
from frognano.run.report import (
    RUN_STAGES,
    ComparisonList,
    FindingRecord,
    GateRecord,
    InstructionsRecord,
    LeftOutLinkRecord,
    RunReport,
    SuiteRunKey,
    SuiteRunRecord,
    TokensRecord,
    VerificationRecord,
)

__all__ = [
    "TITLE_LIMIT",
    "WARNING",
    "Conclusion",
    "finding_line",
    "items",
    "left_out_line",
    "pull_request_body",
    "pull_request_title",
    "run_line",
    "verification_check",
]

# The text rules (untrusted text neutralised, texts fitted under GitHub's limits) are in
# markdown.py, which every renderer here goes through.

TITLE_LIMIT = 256
"""Characters in a pull request title (GitHub's own limit)."""
_LIST_ITEMS = 50
_ITEM_CHARS = 200
_OUTPUT_LINES = 80
_PROTECTED = "Protected files (tests, harness, agent instructions)"

WARNING = (
    "Drafted by FrogNano-4B, a 4B research model. A human must review every line before "
    f"merging; the `{HUMAN_REVIEW_CHECK}` check stays blocking until someone other than the "
    "person who asked approves."
)

Conclusion = Literal["success", "failure"]


# -- pull request ------------------------------------------------------------------------------


def pull_request_title(issue_number: int, issue_title: str) -> str:
    """`FrogNano draft for #7: <title>`, one line, at most TITLE_LIMIT characters."""
    title = single_line(issue_title) or "(untitled issue)"
    return shorten(f"FrogNano draft for #{issue_number}: {title}", TITLE_LIMIT)


def items(label: str, values: Sequence[str], limit: int = _LIST_ITEMS) -> str:
    """`- LABEL (N): `a`, `b` and M more`, showing at most `limit` values, each shortened."""
    shown = ", ".join(code(shorten(value, _ITEM_CHARS)) for value in values[:limit])
    more = f" and {len(values) - limit:,} more" if len(values) > limit else ""
    return f"- {label} ({len(values):,}): {shown}{more}"


def left_out_line(links: Sequence[LeftOutLinkRecord], limit: int = 20) -> str | None:
    """The symlinks left out of the base tree as one list item (path and target, both the
    repository's text), or None when there are none."""
    if not links:
        return None
    shown = ", ".join(
        f"{code(shorten(link['path'], _ITEM_CHARS))} to {code(shorten(link['target'], 80))}"
        for link in links[:limit]
    )
    more = f" and {len(links) - limit:,} more" if len(links) > limit else ""
    return (
        f"- Symbolic links leading outside the repository, left out of the tree the agent and "
        f"the tests saw; a patch may not touch them ({len(links):,}): {shown}{more}"
    )


def run_line(label: str, run: SuiteRunRecord | None) -> str:
    """A test run as one list item: summary, exit code, duration, why it is not trusted."""
    if run is None:
        return f"- {label}: not run"
    extra = []
    if run["exit_code"] is not None:
        extra.append(f"exit code {run['exit_code']}")
    if run["timed_out"]:
        extra.append("timed out")
    extra.append(f"{run['duration']:.1f} s")
    if run["cached"]:
        extra.append("reused from an earlier run")
    problems = "; ".join(run["problems"])
    note = f"; not trusted: {md(problems)}" if problems else ""
    details = f" ({', '.join(extra)})"
    return f"- {label}: {md(run['summary'] or 'no summary')}{details}{note}"


_COMPARISONS: tuple[tuple[str, ComparisonList], ...] = (
    ("Fixed (failing before, passing now)", "fixed"),
    ("Broken (passing before, failing now)", "broken"),
    ("Still failing", "still_failing"),
    ("Failing differently before and after", "fails_differently"),
    ("Skipped", "skipped"),
    ("Added by the patch, failing without it and passing with it", "new_evidence"),
)
_RUN_LINES: tuple[tuple[str, SuiteRunKey], ...] = (
    ("Before (base)", "baseline"),
    ("After (base + patch)", "verification"),
    ("The patch's new tests, with the patch", "new_on_patched"),
    ("The patch's new tests, on the base", "new_on_base"),
)


def _evidence(verification: VerificationRecord | None) -> list[Part]:
    if verification is None:
        return [fixed("The patch was not verified.")]
    state = "held" if verification["held"] else "did not hold"
    parts = [
        Part(
            f"Rule {code(verification['require'])} {state}: "
            f"{md(verification['reason'].rstrip('.'))}."
        ),
        fixed(
            "Each test run started from a pristine copy of the base in a fresh sandbox the "
            "agent never used; FrogNano applied the patch itself and collected every outcome "
            "with its own pytest plugin."
        ),
        fixed(""),
        *(
            Part(run_line(label, verification[key]))
            for label, key in _RUN_LINES
            if verification[key] is not None or key in ("baseline", "verification")
        ),
    ]
    comparison = verification["comparison"]
    if comparison is not None:
        for label, key in _COMPARISONS:
            if comparison[key]:
                parts.append(Part(items(label, comparison[key])))
        parts.append(fixed(f"- Passing with the patch: {comparison['passing']:,}"))
    restored = verification["restored"]
    if restored:
        parts.append(Part(items(f"{_PROTECTED} put back to the base", restored)))
    else:
        parts.append(fixed(f"- {_PROTECTED} changed by the agent: none."))
    parts += stand_behind_parts(verification["hunks"], verification["changed_lines"])
    limits = verification["limits"]
    if limits:
        parts.append(fixed("\n**What this evidence does not show:**\n"))
        parts.append(Part("\n".join(f"- {md(limit)}" for limit in limits)))
    return parts


def finding_line(finding: FindingRecord) -> str:
    """A gate finding as one list item: severity, kind, path, reason and offending line."""
    path, line = finding["path"], finding["line"]
    where = f" {code(path)}" if path else ""
    shown = f" ({code(line)})" if line else ""
    severity, kind = md(finding["severity"]), md(finding["kind"])
    return f"- **{severity}** {kind}{where}: {md(finding['reason'])}{shown}"


def _findings(gate: GateRecord | None, *, severity: str | None) -> list[Part]:
    if gate is None:
        return [fixed("The gate did not run.")]
    findings = [
        finding
        for finding in gate["findings"]
        if severity is None or finding["severity"] == severity
    ]
    if not findings:
        return [fixed("None: nothing in the patch conflicts with the policy.")]
    lines = [finding_line(finding) for finding in findings[:_LIST_ITEMS]]
    if len(findings) > _LIST_ITEMS:
        lines.append(f"- and {len(findings) - _LIST_ITEMS:,} more")
    return [Part("\n".join(lines))]


def _cached(tokens: TokensRecord) -> str:
    cached = tokens["cached"]
    if cached is None:
        return "cache hits not reported"
    prompt = tokens["prompt"]
    share = 100 * cached / prompt if prompt else 0.0
    return f"{cached:,} from the prefix cache, {share:.0f}%"


def _seconds(value: float) -> str:
    return f"{value:.1f} s"


def _statistics(report: RunReport) -> list[str]:
    tokens, durations = report["tokens"], report["durations"]
    stages = ", ".join(
        f"{md(name)} {_seconds(durations[name])}" for name in RUN_STAGES if name in durations
    )
    lines = [
        f"- Steps: {report['steps']:,} of {report['max_steps']:,}; "
        f"tool calls: {report['tool_calls']:,} ({report['tool_errors']:,} failed)",
        f"- Tokens: {tokens['prompt']:,} prompt ({_cached(tokens)}), "
        f"{tokens['completion']:,} generated",
        f"- Time: {_seconds(durations['total'])} in all; model {_seconds(durations['model'])}, "
        f"tools {_seconds(durations['tools'])}" + (f"; stages: {stages}" if stages else ""),
    ]
    patch = report["patch"]
    if patch is not None:
        lines.append(
            f"- Patch: {len(patch['files']):,} file(s), "
            f"+{patch['insertions']:,} -{patch['deletions']:,}"
        )
    record = report["instructions"]
    if record:  # a skipped file's reason may quote the repository: inert, like its path
        files = [item.copy() for item in record["files"]]
        for item in files:
            item["reason"] = md(item["reason"]) if item["reason"] else item["reason"]
        record = InstructionsRecord(policy_text_bytes=record["policy_text_bytes"], files=files)
    used = instructions_line(record, code, absent=False) if record else None
    if used:
        lines.append(f"- {used}")
    left_out = left_out_line(report["left_out_links"])
    if left_out:
        lines.append(left_out)
    stop = report["stop_reason"]
    if stop and stop != "completed":
        lines.append(f"- The agent stopped early: {code(stop)} ({md(report['stop_detail'] or '')})")
    return lines


def pull_request_body(
    report: RunReport,
    *,
    issue_number: int,
    link: Literal["refs", "fixes"],
    run_id: str,
    trajectory_location: str,
    draft: bool = True,
    attempts: Sequence[str] = (),
) -> str:
    """The pull request description: the warning first, then the agent's summary (quoted),
    test evidence, gate warnings, run statistics, run id and trajectory (`trajectory_location`
    relative to the worker's trajectory folder: no host path of the worker), and the link line
    (`Refs #N`, or `Fixes #N` to close the issue on merge) last. `draft` False adds a note
    that the repository cannot have draft pull requests. `attempts`: a best-of-N run's
    lines (bestof_texts.attempt_lines, already inert), under their own heading."""
    if link not in ("refs", "fixes"):
        raise ValueError(f"link must be 'refs' or 'fixes', not {link!r}")
    parts: list[Part] = [fixed(f"> [!WARNING]\n> {WARNING}")]
    if not draft:
        parts.append(
            fixed(
                "\n> [!NOTE]\n> This repository cannot have draft pull requests, so this one is "
                f"a normal pull request. Treat it as a draft: the `{HUMAN_REVIEW_CHECK}` check "
                "blocks merging (when branch protection requires it) until an independent "
                "approval."
            )
        )
    summary = report["summary"].strip()
    parts += [fixed("\n## What the agent says\n")]
    if summary:
        parts.append(Part(md(summary), render=quote))
    else:
        parts.append(fixed("_The agent wrote no summary._"))
    parts += [fixed("\n## Test evidence\n"), *_evidence(report["verification"])]
    parts += [fixed("\n## Gate warnings\n"), *_findings(report["gate"], severity="warn")]
    parts += _attempts("\n## Attempts\n", attempts)
    parts += [
        fixed("\n## Run\n"),
        *(Part(line) for line in _statistics(report)),
        fixed(f"- Run id: {code(run_id)}"),
        fixed(
            f"- Trajectory: {code(trajectory_location)} on the worker, under "
            "`FROGNANO_TRAJECTORY_DIR` (`frognano trajectory show` prints it)"
        ),
        fixed(f"\n{'Fixes' if link == 'fixes' else 'Refs'} #{issue_number}"),
    ]
    return fit(parts, BODY_BUDGET)


# -- check runs --------------------------------------------------------------------------------


def _output_block(label: str, run: SuiteRunRecord | None) -> list[Part]:
    if run is None or not run["output"]:
        return []
    text = run["output"].rstrip("\n")
    lines = text.split("\n")
    if len(lines) > _OUTPUT_LINES:
        text = f"… ({len(lines) - _OUTPUT_LINES:,} earlier lines not shown)\n" + "\n".join(
            lines[-_OUTPUT_LINES:]
        )
    return [
        fixed(f"\n#### {label} (last lines)\n"),
        Part(text, render=fence, keep="tail"),
    ]


def _attempts(heading: str, lines: Sequence[str]) -> list[Part]:
    if not lines:
        return []
    return [fixed(heading), *(Part(line) for line in lines)]


def verification_check(
    report: RunReport, *, story: Story | None, attempts: Sequence[str] = ()
) -> tuple[Conclusion, str, str, str]:
    """The `FrogNano / verification` check run: (conclusion, title, summary, text), the text
    telling the run's `story` first. `success` only when the gate passed and the policy's
    `require` rule held. `attempts`: a best-of-N run's lines (already inert), in the summary."""
    gate, verification = report["gate"], report["verification"]
    gate_passed = gate is not None and gate["passed"]
    held = verification is not None and verification["held"]
    require = code(verification["require"] if verification is not None else "-")
    conclusion: Conclusion = "success" if gate_passed and held else "failure"
    if conclusion == "success":
        title = "The gate passed and verification held"
        verdict = f"The gate passed and rule {require} held."
    elif gate is None or verification is None:
        title = "Not verified"
        verdict = "The patch was not both gated and verified, so it must not be published."
    elif not gate_passed:
        title = "The gate blocked the patch"
        verdict = "The gate blocked the patch: it must not be published."
    else:
        title = "Verification failed"
        verdict = f"Rule {require} did not hold: the patch must not be published."
    summary_parts = [
        fixed(f"**{verdict}**\n"),
        *_evidence(verification),
        fixed("\n### Gate\n"),
        *_findings(gate, severity=None),
        *_attempts("\n### Attempts\n", attempts),
    ]
    left_out = left_out_line(report["left_out_links"])
    if left_out:
        summary_parts.append(Part(f"\n{left_out}"))
    summary = fit(summary_parts, CHECK_BUDGET)
    output = [fixed("\n### Test output, most recent lines last")]
    if verification is not None:
        output += _output_block("Before (base)", verification["baseline"])
        output += _output_block("After (base + patch)", verification["verification"])
    if len(output) == 1:
        output = [fixed("\n### Test output\n\nNo test output was recorded.")]
    return conclusion, title, summary, fit([*story_parts(story), *output], CHECK_BUDGET)
