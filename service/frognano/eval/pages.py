"""An eval run summarised: one self-contained HTML page, and the CLI's end-of-run table."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape as _escape

from rich.table import Table
from rich.text import Text

from frognano.eval.figures import (
    STATUS_WORDS,
    Agreement,
    Headline,
    agreement_word,
    chosen_attempt,
    headline,
    status_of,
    tokens_of,
    verdict_word,
)
from frognano.eval.plot import budget_plot
from frognano.eval.records import Attempt, InstanceResult, Status
from frognano.terminal import printable

__all__ = ["Agreement", "Headline", "headline", "safe_href", "summary_page", "terminal_table"]

Links = Callable[[InstanceResult, Attempt], str | None]

# Inline and small: the page opens from a file, offline, with nothing fetched. The policy
# below is a second lock: were anything to slip past escaping, no script runs, nothing loads.
_CSP = "default-src 'none'; style-src 'unsafe-inline'"
_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;max-width:80rem;margin:2rem auto;padding:0 1rem;
color:#1b1f24;background:#fff}h1{font-size:1.3rem}.meta{color:#57606a}
table{border-collapse:collapse}th,td{text-align:left;padding:.15rem .6rem;vertical-align:top}
.instances th{border-bottom:1px solid #d0d7de}.instances tr:nth-child(even){background:#f6f8fa}
.num{text-align:right;font-variant-numeric:tabular-nums}.reason{max-width:28rem;
word-break:break-word;white-space:pre-wrap}.resolved{color:#1a7f37}.unresolved{color:#cf222e}
.empty_patch,.error{color:#9a6700}.plots{display:flex;flex-wrap:wrap;gap:1rem}
.plot{max-width:100%;height:auto;font-size:12px;fill:#1b1f24}.plot .grid{stroke:#eaeef2}
.plot .tick,.plot .axis{stroke:#57606a;fill:none}.plot .curve{stroke:#0969da;fill:none;
stroke-width:2}.plot .point{fill:#0969da}
"""
_STATUS_STYLES: dict[Status, str] = {
    "resolved": "green",
    "unresolved": "red",
    "empty_patch": "yellow",
    "error": "yellow",
}


def safe_href(href: str | None) -> str | None:
    """`href` when it is a relative path (no scheme, not rooted, nothing a browser would
    strip or read as a slash); None otherwise, so no link is drawn."""
    if not href or href.startswith("/"):
        return None
    # Browsers drop tabs and newlines inside a URL and read a backslash as a slash, so
    # `java\tscript:` and `\\host` would become a scheme or a host: refuse them outright.
    if any(c == "\\" or c.isspace() or not c.isprintable() for c in href):
        return None
    first_segment = href.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return None if ":" in first_segment else href


def _e(text: str) -> str:
    """Untrusted text for HTML: control characters shown as escapes, markup inert."""
    return _escape(printable(text))


def _percent(part: float, whole: int = 1) -> str:
    return f"{part / whole:.1%}" if whole else "—"


def _headline_html(figures: Headline) -> str:
    rows = [
        ("instances", "instances", str(figures.instances)),
        ("resolved", "resolved", str(figures.resolved)),
        ("unresolved", "unresolved", str(figures.unresolved)),
        ("empty-patch", "empty patch", str(figures.empty_patch)),
        ("error", "error", str(figures.error)),
        ("resolved-rate", "resolved rate", _percent(figures.resolved, figures.instances)),
    ]
    rows += [(f"pass-at-{k}", f"pass@{k}", _percent(v)) for k, v in sorted(figures.pass_at.items())]
    if figures.best_of is not None:
        rows.append(
            ("best-of", "best-of-K (the attempt FrogNano chose)", _percent(figures.best_of))
        )
    cells = "".join(
        f'<tr><th>{label}</th><td id="{key}">{value}</td></tr>' for key, label, value in rows
    )
    agree = figures.agreement
    return (
        f'<table class="headline">{cells}</table>'
        "<h2>FrogNano's verdict against the official result (every attempt)</h2>"
        '<table class="agreement"><tr><th></th><th>resolved</th><th>not resolved</th></tr>'
        f'<tr><th>ready</th><td id="ready-resolved">{agree.ready_resolved}</td>'
        f'<td id="ready-unresolved">{agree.ready_unresolved}</td></tr>'
        f'<tr><th>not ready</th><td id="not-ready-resolved">{agree.not_ready_resolved}</td>'
        f'<td id="not-ready-unresolved">{agree.not_ready_unresolved}</td></tr></table>'
        f'<p>Agreed on <span id="agreed">{agree.agreed}</span> of '
        f'<span id="judged">{agree.judged}</span> ({_percent(agree.agreed, agree.judged)}); '
        f'no verdict on <span id="no-verdict">{agree.no_verdict}</span>.</p>'
    )


def _links(result: InstanceResult, links: Links) -> str:
    shown = []
    for attempt in result.attempts:
        label = _e(str(attempt.attempt))
        href = safe_href(links(result, attempt))
        shown.append(f'<a href="{_escape(href)}">{label}</a>' if href else label)
    return " ".join(shown)


def _row(result: InstanceResult, links: Links) -> str:
    first = chosen = chosen_attempt(result)
    status = status_of(result)
    reason = ""
    if first is not None:
        reason = _e(first.official.reason)
        if first.error:
            reason += f'<div class="meta">run failed: {_e(first.error)}</div>'
        if first.stop_reason:
            reason += f'<div class="meta">stopped: {_e(first.stop_reason)}</div>'
    figures = ["", "", "", ""]
    if first is not None:
        figures = [
            str(first.steps),
            f"{tokens_of(first):,}",
            f"{first.agent_seconds:.1f}",
            f"{first.official.seconds:.1f}",
        ]
    picked = "—" if chosen is None else _e(str(chosen.attempt))
    if chosen is not None and len(result.attempts) > 1:
        picked += f" ({STATUS_WORDS[chosen.official.status]})"
    numbers = "".join(
        f'<td class="{name} num">{value}</td>'
        for name, value in zip(("steps", "tokens", "agent-s", "eval-s"), figures, strict=True)
    )
    return (
        f'<tr class="instance"><td class="id"><code>{_e(result.instance_id)}</code></td>'
        f'<td class="status {status}">{STATUS_WORDS[status]}</td>'
        f'<td class="reason">{reason}</td><td class="verdict">{verdict_word(first)}</td>'
        f'<td class="agree">{agreement_word(first)}</td>{numbers}<td class="chosen">{picked}</td>'
        f'<td class="attempts">{_links(result, links)}</td></tr>'
    )


def _plots(results: Sequence[InstanceResult]) -> str:
    firsts = [(chosen_attempt(result), status_of(result) == "resolved") for result in results]
    steps = [(a.steps if a else 0, resolved) for a, resolved in firsts]
    tokens = [(tokens_of(a) if a else 0, resolved) for a, resolved in firsts]
    return (
        '<h2>Resolved against budget</h2><p class="meta">For each budget, the share of all '
        "instances whose chosen attempt resolved them using at most that many steps (left) or "
        "tokens, prompt and completion (right).</p>"
        f'<div class="plots">{budget_plot(steps, unit="steps", log=False)}'
        f"{budget_plot(tokens, unit='tokens', log=True)}</div>"
    )


_COLUMNS = (
    "instance", "status", "reason", "verdict", "agrees", "steps", "tokens", "agent s",
    "eval s", "chosen", "trajectories",
)  # fmt: skip


def summary_page(
    results: Sequence[InstanceResult],
    *,
    title: str,
    links: Links,
    figures: Headline | None = None,
) -> str:
    """The whole page: `figures` (by default what `headline(results)` computes), the resolved
    rate against steps and tokens, and one row per instance with each attempt's trajectory
    linked where `links` gives a relative path. Every text from the records is escaped."""
    figures = figures if figures is not None else headline(results)
    heading = _e(title)
    header = "".join(f"<th>{name}</th>" for name in _COLUMNS)
    rows = "\n".join(_row(result, links) for result in results)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{heading}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{heading}</h1>{_headline_html(figures)}{_plots(results)}"
        '<h2>Instances</h2><p class="meta">Status, reason and figures are the chosen '
        "attempt's: the one FrogNano's own evidence ranks strongest, which "
        "predictions.jsonl submits (with one attempt, that one).</p>"
        f'<table class="instances"><thead><tr>{header}</tr></thead><tbody>\n{rows}\n'
        "</tbody></table>\n</body></html>\n"
    )


def terminal_table(results: Sequence[InstanceResult], *, title: str | None = None) -> Table:
    """The end-of-run table: each instance's chosen attempt, every text from the records as
    plain text (never rich markup), its control characters shown."""
    table = Table(title=Text(printable(title)) if title else None)
    for name in ("instance", "status", "verdict", "steps", "tokens", "seconds"):
        table.add_column(
            name, justify="right" if name in ("steps", "tokens", "seconds") else "left"
        )
    for result in results:
        status = status_of(result)
        first = chosen_attempt(result)
        figures = ("", "", "")
        if first is not None:
            seconds = first.agent_seconds + first.official.seconds
            figures = (str(first.steps), f"{tokens_of(first):,}", f"{seconds:.1f}")
        table.add_row(
            Text(printable(result.instance_id)),
            Text(STATUS_WORDS[status], style=_STATUS_STYLES[status]),
            Text(verdict_word(first)),
            *(Text(figure) for figure in figures),
        )
    figures_ = headline(results)
    table.caption = Text(
        f"{figures_.resolved} of {figures_.instances} resolved "
        f"({_percent(figures_.resolved, figures_.instances)})"
    )
    return table
