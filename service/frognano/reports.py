"""A run's files for people and programs: patch.diff, report.json and report.md."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_reports(out_dir: Path, report: dict[str, Any], diff: bytes) -> None:
    """Write the three files, each replaced atomically so a reader never sees half of one."""
    _write(out_dir / "patch.diff", diff)
    _write(
        out_dir / "report.json", (json.dumps(report, indent=2, ensure_ascii=False) + "\n").encode()
    )
    _write(out_dir / "report.md", render_markdown(report).encode())


def render_markdown(report: dict[str, Any]) -> str:
    """The report for a person: outcome first, then the agent, the tests and the patch."""
    outcome = report["outcome"]
    tokens = report["tokens"]
    durations = report["durations"]
    verdict = "Patch ready for review" if outcome["patch_ready"] else "No patch"
    lines = [
        f"# FrogNano run {report['run_id']}",
        "",
        f"**{verdict}:** {outcome['reason']}.",
        "",
        f"- Issue: {report['issue_title']}",
        f"- Repository: `{report['repo']}` (baseline `{report.get('base_commit') or '-'}`)",
        f"- Stop reason: `{report['stop_reason']}` ({report['stop_detail']})",
        f"- Steps: {report['steps']} of {report['max_steps']}; tool calls: "
        f"{report['tool_calls']} ({report['tool_errors']} errors)",
        f"- Tokens: {tokens['prompt']:,} prompt ({_cached(tokens)}), "
        f"{tokens['completion']:,} generated; last prompt {tokens['last_prompt']:,}",
        f"- Time: {durations['total']:.1f} s in all, model {durations['model']:.1f} s, "
        f"tools {durations['tools']:.1f} s",
        f"- Sandbox: {report['sandbox']['backend']}"
        + (f" ({report['sandbox']['mechanism']})" if report["sandbox"].get("mechanism") else ""),
        "",
        "## The agent's summary",
        "",
        report["summary"] or "_The agent wrote no summary._",
        "",
    ]
    tests = report.get("tests")
    lines += ["## Tests after the agent", ""]
    if tests is None:
        lines += ["_Not run._", ""]
    else:
        status = "passed" if tests["passed"] else "FAILED"
        lines += [
            f"`{tests['command']}` {status}: {tests['summary']} "
            f"(exit code {tests['exit_code']}, {tests['duration']:.1f} s)",
            "",
            "<details><summary>Output (last lines)</summary>",
            "",
            "```",
            "\n".join(tests["output_tail"].splitlines()[-60:]),
            "```",
            "",
            "</details>",
            "",
        ]
    patch = report.get("patch")
    lines += ["## Patch", ""]
    if not patch or not patch["files"]:
        lines += ["_No changes._", ""]
    else:
        lines += [
            f"{len(patch['files'])} file(s), +{patch['insertions']} -{patch['deletions']}, "
            "in `patch.diff`:",
            "",
            *(f"- `{path}`" for path in patch["files"]),
            "",
        ]
    lines += [
        "FrogNano-4B is a small research model. Review every change before using it.",
        "",
    ]
    return "\n".join(lines)


def _cached(tokens: dict[str, Any]) -> str:
    if tokens.get("cached") is None:
        return "cache hits not reported"
    prompt = tokens["prompt"] or 1
    return f"{tokens['cached']:,} from cache, {100 * tokens['cached'] / prompt:.0f}%"


def _write(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)
