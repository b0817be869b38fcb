"""A run's files for people and programs: patch.diff, report.json and report.md."""

from __future__ import annotations

import json
import os
from pathlib import Path

from frognano import __version__
from frognano.policy.gate.findings import Finding
from frognano.run.environment.record import environment_md, sandbox_record
from frognano.run.evidence import Comparison
from frognano.run.inputs import hidden_md, hidden_records, left_out_md
from frognano.run.instructions import instructions_line
from frognano.run.job import RunState
from frognano.run.outcomes import TestRun
from frognano.run.replay_report import replay_md
from frognano.run.report import (
    ComparisonList,
    ComparisonRecord,
    DurationsRecord,
    FindingRecord,
    FollowUpRecord,
    GateRecord,
    PatchRecord,
    RunReport,
    StageDurations,
    SuiteRunKey,
    SuiteRunRecord,
    TokensRecord,
    VerificationRecord,
)
from frognano.run.standbehind import changed_lines_record, necessity_md, necessity_record
from frognano.run.verification import Verification
from frognano.run.workspace import Patch


def build_report(
    run: RunState,
    patch_ready: bool,
    reason: str,
    total: float,
    follow_up: FollowUpRecord | None = None,
) -> RunReport:
    """report.json: everything a reader needs to see why a patch was or was not accepted;
    `follow_up` is a follow-up's own record (its variant's)."""
    job = run.job
    agent = run.agent
    stats = agent.stats if agent else None
    hide = run.host_paths.hide  # the sandbox's and the model's words may name them
    error = hide(run.error) if run.error is not None else None
    tokens: TokensRecord = {
        "prompt": stats.prompt_tokens if stats else 0,
        "completion": stats.completion_tokens if stats else 0,
        "cached": stats.cached_tokens if stats and stats.cache_reported else None,
        "last_prompt": stats.last_prompt_tokens if stats else 0,
    }
    stages: StageDurations = {}
    for name, seconds in run.stages.items():
        stages[name] = round(seconds, 3)
    durations: DurationsRecord = {
        "total": round(total, 3),
        **stages,
        "model": round(stats.model_seconds, 3) if stats else 0.0,
        "tools": round(stats.tool_seconds, 3) if stats else 0.0,
    }
    report: RunReport = {
        "run_id": job.run_id,
        "frognano": __version__,
        "started_at": run.started_at,
        "repo": job.repo,
        "repo_dir": str(job.repo_dir.resolve()),
        "issue_title": job.title,
        "outcome": {"patch_ready": patch_ready, "reason": hide(reason)},
        "stop_reason": agent.stop_reason.value if agent else None,
        "stop_detail": hide(agent.detail) if agent else error,
        "summary": hide(agent.summary) if agent else "",
        "steps": stats.steps if stats else 0,
        "max_steps": job.policy.agent.max_steps,
        "tokens": tokens,
        "tool_calls": stats.tool_calls if stats else 0,
        "tool_errors": stats.tool_errors if stats else 0,
        "tools_used": dict(stats.tools_used) if stats else {},
        "truncated_turns": stats.truncated_turns if stats else 0,
        "format_reminders": stats.format_reminders if stats else 0,
        "compactions": stats.compactions if stats else 0,
        "durations": durations,
        "sandbox": sandbox_record(job.backend, run.mechanism, run.host_paths, run.environment),
        "base_commit": run.base_commit,
        "left_out_links": [link.record() for link in job.left_out_links],
        "hidden_input": hidden_records(run.hidden),
        "patch": patch_record(run.patch),
        "verification": _verification(run.verification),
        "gate": gate_record(run.findings),
        "policy": {
            "source": job.policy_source,
            "repo": job.repo,
            "effective": job.policy.model_dump(mode="json"),
        },
        "instructions": run.instructions.record() if run.instructions else None,
        "error": error,
    }
    if follow_up is not None:
        report["follow_up"] = follow_up
    if run.replay is not None:
        report["replay"] = run.replay.record()
    return report


def patch_record(patch: Patch | None) -> PatchRecord | None:
    if patch is None:
        return None
    return {
        "files": list(patch.files),
        "insertions": patch.insertions,
        "deletions": patch.deletions,
        "bytes": len(patch.diff),
    }


def _verification(verification: Verification | None) -> VerificationRecord | None:
    if verification is None:
        return None
    plan, runs, evidence = verification.plan, verification.runs, verification.evidence
    return {
        "require": verification.rules.require,
        "held": verification.held,
        "reason": verification.reason,
        "baseline_usable": evidence.baseline_usable,
        "restored": [r.path for r in plan.restored] if plan else [],
        "restored_why": {r.path: r.why for r in plan.restored} if plan else {},
        "effective_files": [c.path for c in plan.published] if plan else [],
        "new_test_files": list(plan.new_test_files) if plan else [],
        "comparison": _comparison(evidence.comparison) if runs else None,
        "baseline": _run(runs.baseline) if runs else None,
        "verification": _run(runs.patched) if runs else None,
        "new_on_patched": _run(runs.new_on_patched) if runs else None,
        "new_on_base": _run(runs.new_on_base) if runs else None,
        "notes": list(verification.notes),
        "limits": list(verification.limits),
        "hunks": necessity_record(verification.necessity),
        "changed_lines": changed_lines_record(verification.changed),
    }


def _comparison(comparison: Comparison) -> ComparisonRecord:
    return {
        "fixed": list(comparison.fixed),
        "broken": list(comparison.broken),
        "still_failing": list(comparison.still_failing),
        "fails_differently": list(comparison.fails_differently),
        "skipped": list(comparison.skipped),
        "new_tests": list(comparison.new_tests),
        "new_evidence": list(comparison.new_evidence),
        "passing": comparison.passing,
    }


def _run(test_run: TestRun | None) -> SuiteRunRecord | None:
    if test_run is None:
        return None
    return {
        "role": test_run.role,
        "command": test_run.command,
        "exit_code": test_run.exit_code,
        "passed": test_run.passed,
        "complete": test_run.complete,
        "timed_out": test_run.timed_out,
        "cached": test_run.cached,
        "summary": test_run.summary,
        "duration": round(test_run.duration, 3),
        "tests": dict(sorted(test_run.outcomes.items())),
        "failures": dict(sorted(test_run.crashes.items())),
        "collection_errors": dict(sorted(test_run.collection_errors.items())),
        "problems": list(test_run.problems),
        "output": test_run.output,
    }


def gate_record(findings: list[Finding] | None) -> GateRecord | None:
    if findings is None:
        return None
    return {
        "passed": not any(f.severity == "block" for f in findings),
        "findings": [_finding(finding) for finding in findings],
    }


def _finding(finding: Finding) -> FindingRecord:
    return {
        "severity": finding.severity,
        "kind": finding.kind,
        "reason": finding.reason,
        "path": finding.path,
        "line": finding.line,
    }


def write_reports(out_dir: Path, report: RunReport, diff: bytes) -> None:
    """Write the three files, each replaced atomically so a reader never sees half of one."""
    _write(out_dir / "patch.diff", diff)
    text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    _write(out_dir / "report.json", text.encode())
    _write(out_dir / "report.md", render_markdown(report).encode())


def render_markdown(report: RunReport) -> str:
    """The report for a person: outcome first, then the agent, verification, gate and patch."""
    outcome = report["outcome"]
    tokens = report["tokens"]
    durations = report["durations"]
    verdict = "Patch ready for review" if outcome["patch_ready"] else "No patch"
    sandbox = report["sandbox"]
    lines = [
        f"# FrogNano run {report['run_id']}",
        "",
        f"**{verdict}:** {outcome['reason']}.",
        "",
        f"- Issue: {report['issue_title']}",
        f"- Repository: {report['repo']} at `{report['repo_dir']}` "
        f"(base `{report['base_commit'] or '-'}`)",
        *left_out_md(report),
        *hidden_md(report),
        f"- Policy: {report['policy']['source']}",
        f"- {_instructions_md(report)}",
        (
            f"- Stop reason: `{report['stop_reason']}` ({report['stop_detail']})"
            if report["stop_reason"] is not None
            else f"- Stop reason: none, the agent never ran ({report['stop_detail']})"
        ),
        f"- Steps: {report['steps']} of {report['max_steps']}; tool calls: "
        f"{report['tool_calls']} ({report['tool_errors']} errors)",
        f"- Tokens: {tokens['prompt']:,} prompt ({_cached(tokens)}), "
        f"{tokens['completion']:,} generated; last prompt {tokens['last_prompt']:,}",
        f"- Time: {durations['total']:.1f} s in all, model {durations['model']:.1f} s, "
        f"tools {durations['tools']:.1f} s",
        f"- Sandbox: {sandbox['backend']}"
        + (f" ({sandbox['mechanism']})" if sandbox["mechanism"] else "")
        + "".join(f"; `{h['placeholder']}` is {h['path']}" for h in sandbox["host_paths"]),
        *environment_md(sandbox),
        "",
        *replay_md(report),
        "## The agent's summary",
        "",
        report["summary"] or "_The agent wrote no summary._",
        "",
        *_verification_md(report["verification"]),
        *_follow_up_md(report),
        *_gate_md(report["gate"], " of the cumulative diff" if "follow_up" in report else ""),
        *_patch_md(report["patch"]),
        "FrogNano-4B is a small research model. Review every change before using it.",
        "",
    ]
    return "\n".join(lines)


def _verification_md(verification: VerificationRecord | None) -> list[str]:
    lines = ["## Verification", ""]
    if verification is None:
        return [*lines, "_Not run: there was no patch to verify._", ""]
    status = "held" if verification["held"] else "FAILED"
    lines += [
        f"Rule `{verification['require']}` {status}: {verification['reason']}.",
        "",
        "Each test run started from a pristine copy of the base in a fresh sandbox the agent "
        "never used; FrogNano applied the patch itself and collected the outcomes with its own "
        "pytest plugin.",
    ]
    for path in verification["restored"]:
        why = verification["restored_why"].get(path, "")
        lines.append(f"- `{path}` was put back to the base: {why}.")
    lines.append("")
    for label, key in _RUNS:
        test_run = verification[key]
        if test_run is None:
            if key in ("baseline", "verification"):
                lines.append(f"- {label}: not run")
            continue
        problems = "; ".join(test_run["problems"])
        lines.append(
            f"- {label}: {test_run['summary']} (exit code {test_run['exit_code']}, "
            f"{test_run['duration']:.1f} s{', reused' if test_run['cached'] else ''})"
            + (f"; not trusted: {problems}" if problems else "")
        )
    comparison = verification["comparison"]
    if comparison:
        lines.append("")
        for label, name in _COMPARISONS:
            tests = comparison[name]
            if tests:
                shown = ", ".join(f"`{test}`" for test in tests[:20])
                more = f" and {len(tests) - 20} more" if len(tests) > 20 else ""
                lines.append(f"- {label}: {shown}{more}")
    if verification["hunks"] is not None or verification["changed_lines"] is not None:
        lines += ["", *necessity_md(verification["hunks"], verification["changed_lines"])]
    if verification["limits"]:
        lines += ["", "What this evidence does not show:", ""]
        lines += [f"- {limit}" for limit in verification["limits"]]
    after = verification["verification"]
    if after and after["output"]:
        lines += [
            "",
            "<details><summary>Test output after the patch (last lines)</summary>",
            "",
            "```",
            "\n".join(after["output"].splitlines()[-60:]),
            "```",
            "",
            "</details>",
        ]
    return [*lines, ""]


_RUNS: tuple[tuple[str, SuiteRunKey], ...] = (
    ("Before (base)", "baseline"),
    ("After (base + patch)", "verification"),
    ("New tests with the patch", "new_on_patched"),
    ("New tests on the base", "new_on_base"),
)
_COMPARISONS: tuple[tuple[str, ComparisonList], ...] = (
    ("Fixed (failing before, passing now)", "fixed"),
    ("Broken (passing before, failing now)", "broken"),
    ("Still failing", "still_failing"),
    ("Failing differently", "fails_differently"),
    ("Skipped", "skipped"),
    ("Added by the patch, failing without it and passing with it", "new_evidence"),
)


def _follow_up_md(report: RunReport) -> list[str]:
    record = report.get("follow_up")
    if record is None:
        return []
    review = f"review {record['review_id']}" if record["review_id"] is not None else "a review"
    lines = [
        "## Follow-up",
        "",
        f"Round {record['round']}, answering {review} with {record['line_comments']} line "
        "comment(s). Verification compares the original base with the base plus the "
        "cumulative diff (every round).",
        "",
    ]
    for name, label in (("increment", "This round (the increment)"), ("cumulative", "All rounds")):
        sized = record["increment"] if name == "increment" else record["cumulative"]
        if sized is not None:
            lines.append(
                f"- {label}: {len(sized['files'])} file(s), +{sized['insertions']} "
                f"-{sized['deletions']}, {sized['bytes']:,} bytes"
            )
    return [*lines, "", *_gate_md(record["gate"], " of the increment")]


def _gate_md(gate: GateRecord | None, of: str = "") -> list[str]:
    lines = [f"## Gate{of}", ""]
    if gate is None:
        return [*lines, "_Not run._", ""]
    if not gate["findings"]:
        return [*lines, "Passed: nothing in the patch conflicts with the policy.", ""]
    lines += ["Passed with warnings:" if gate["passed"] else "Blocked:", ""]
    for finding in gate["findings"]:
        where = f" `{finding['path']}`" if finding["path"] else ""
        lines.append(f"- **{finding['severity']}** {finding['kind']}{where}: {finding['reason']}")
    return [*lines, ""]


def _patch_md(patch: PatchRecord | None) -> list[str]:
    lines = ["## Patch", ""]
    if not patch or not patch["files"]:
        return [*lines, "_No changes._", ""]
    return [
        *lines,
        f"{len(patch['files'])} file(s), +{patch['insertions']} -{patch['deletions']}, "
        "in `patch.diff`:",
        "",
        *(f"- `{path}`" for path in patch["files"]),
        "",
    ]


def _instructions_md(report: RunReport) -> str:
    record = report["instructions"]
    if record is None:
        return "Instructions for the agent: not read (the run stopped before the agent started)"
    line = instructions_line(record, lambda path: f"`{path}`", absent=True)
    return line or "Instructions for the agent: none"


def _cached(tokens: TokensRecord) -> str:
    cached = tokens["cached"]
    if cached is None:
        return "cache hits not reported"
    prompt = tokens["prompt"] or 1
    return f"{cached:,} from cache, {100 * cached / prompt:.0f}%"


def _write(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)
