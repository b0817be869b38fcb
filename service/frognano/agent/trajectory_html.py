"""A recorded run as one self-contained HTML page: steps, tool calls, results, folded reasoning."""

from __future__ import annotations

import json
from html import escape as _escape
from typing import Any

from frognano.agent.trajectory_view import (
    RunFiles,
    edit_diff,
    facts,
    step_tokens,
    title,
    verdict,
)
from frognano.terminal import printable

# Inline and small: the page must open from a file, offline, with nothing fetched.
_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;max-width:62rem;margin:2rem auto;padding:0 1rem;
color:#1b1f24;background:#fff}
h1{font-size:1.3rem}.meta{color:#57606a}.step{border-left:3px solid #d0d7de;margin:1rem 0;
padding:.2rem 0 .2rem .8rem}.assistant{border-color:#0969da}.tool{border-color:#8250df}
.error{border-color:#cf222e}.end{border-color:#1a7f37}.head{font-weight:600}
.t{color:#57606a;font-weight:400;font-variant-numeric:tabular-nums}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;white-space:pre-wrap;
word-break:break-word;margin:.4rem 0}details summary{cursor:pointer;color:#57606a}
code{background:#f6f8fa;padding:0 .2rem}table.facts{border-collapse:collapse}
.facts th{text-align:left;padding:.1rem .8rem .1rem 0;color:#57606a;font-weight:400;
vertical-align:top}.ready{color:#1a7f37}.not-ready{color:#cf222e}
.add{background:#dafbe1}.del{background:#ffebe9}.file{font-weight:600}
"""


def escape(text: str) -> str:
    """`text` for HTML, its control characters shown as escapes (`\x1b`) as on a terminal."""
    return _escape(printable(text))


def _pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def _head(event: dict[str, Any], title: str) -> str:
    return (
        f'<div class="head"><span class="t">{float(event.get("t", 0.0)):.1f}s</span> {title}</div>'
    )


def _diff(text: str) -> str:
    """A unified diff, each line escaped and marked as added, removed or a file header."""
    lines = []
    for line in text.splitlines():
        if line.startswith(("+++", "---", "diff --git")):
            css = "file"
        elif line.startswith("+"):
            css = "add"
        elif line.startswith("-"):
            css = "del"
        else:
            lines.append(escape(line) + "\n")
            continue
        lines.append(f'<span class="{css}">{escape(line)}</span>\n')
    return '<pre class="diff">' + "".join(lines) + "</pre>"


def _call(call: dict[str, Any]) -> str:
    name = call.get("name")
    diff = edit_diff(call.get("arguments")) if name == "Edit" else None
    shown = _pre(_arguments(call.get("arguments", ""))) if diff is None else _diff(diff)
    return f"<div>calls <code>{escape(str(name))}</code></div>{shown}"


def _facts(rows: list[tuple[str, str]]) -> str:
    cells = []
    for label, value in rows:
        css = ""
        if label == "verdict":
            css = ' class="ready"' if value.startswith("patch ready") else ' class="not-ready"'
        cells.append(f"<tr><th>{escape(label)}</th><td{css}>{escape(value)}</td></tr>")
    return '<table class="facts">' + "".join(cells) + "</table>"


def _arguments(raw: Any) -> str:
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(raw)


def _block(event: dict[str, Any]) -> str:  # noqa: PLR0911 - one branch per event kind
    kind = event["event"]
    if kind == "run_start":
        return (
            f'<div class="step">{_head(event, "Task")}'
            f"<details open><summary>the issue as the model saw it</summary>"
            f"{_pre(str(event.get('task', '')))}</details></div>"
        )
    if kind == "assistant":
        title = (
            f"Step {escape(str(event.get('step')))}: the model "
            f'<span class="t">(finish {escape(str(event.get("finish_reason")))}, '
            f"{escape(step_tokens(event.get('usage')))})</span>"
        )
        parts = [f'<div class="step assistant">{_head(event, title)}']
        if event.get("reasoning"):
            parts.append(
                f"<details><summary>reasoning</summary>{_pre(event['reasoning'])}</details>"
            )
        if event.get("content"):
            parts.append(_pre(event["content"]))
        parts.extend(_call(call) for call in event.get("tool_calls") or [])
        return "".join(parts) + "</div>"
    if kind == "tool":
        error = bool(event.get("is_error"))
        title = (
            f"Step {escape(str(event.get('step')))}: <code>{escape(str(event.get('name')))}"
            f"</code> {'failed' if error else 'returned'} "
            f'<span class="t">in {float(event.get("duration", 0.0)):.2f}s</span>'
        )
        css = "step tool error" if error else "step tool"
        return f'<div class="{css}">{_head(event, title)}{_pre(str(event.get("result", "")))}</div>'
    if kind == "compaction":
        return (
            f'<div class="step">{_head(event, "History compacted")}'
            f"{_pre(str(event.get('summary', '')))}</div>"
        )
    if kind == "run_end":
        title = (
            f"Run ended: <code>{escape(str(event.get('stop_reason')))}</code> after "
            f"{escape(str(event.get('steps')))} steps"
            + (f" ({escape(str(event['detail']))})" if event.get("detail") else "")
        )
        summary = _pre(str(event["summary"])) if event.get("summary") else ""
        return f'<div class="step end">{_head(event, title)}{summary}</div>'
    if kind in ("request", "run_info"):
        return ""
    details = {k: v for k, v in event.items() if k not in ("event", "t")}
    title = escape(kind)
    return f'<div class="step">{_head(event, title)}{_pre(json.dumps(details, indent=2))}</div>'


def render_html(events: list[dict[str, Any]], *, source: str, files: RunFiles | None = None) -> str:
    """The whole page for `events`, read from `source` (named in the heading): the run's
    facts and, from `files`, its verdict, then the events, then the patch."""
    files = files or RunFiles()
    heading = "FrogNano " + escape(title(events))
    body = "\n".join(block for block in map(_block, events) if block)
    if files.patch is not None:
        patch = _diff(files.patch) if files.patch else "<p>empty: the run changed nothing</p>"
        body += f'\n<h2>The patch</h2><div class="step end">{patch}</div>'
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{heading}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{heading}</h1>{_facts(facts(events) + verdict(files.report))}"
        f'<p class="meta">From <code>{escape(source)}</code>; '
        f"{len(events)} events. Reasoning is folded: click to open.</p>\n{body}\n</body></html>\n"
    )
