"""What the run's untrusted input held that the agent did not see, as report records and lines."""

from __future__ import annotations

from collections.abc import Iterable

from frognano.agent.untrusted import Hidden
from frognano.run.report import HiddenRecord, RunReport

__all__ = ["hidden_md", "hidden_records", "left_out_md"]


def hidden_records(hidden: Iterable[Hidden]) -> list[HiddenRecord]:
    return [
        {"source": h.source, "kind": h.kind, "count": h.count, "excerpt": h.excerpt} for h in hidden
    ]


def _span(text: str) -> str:
    """Untrusted text as an inline code span of report.md (no backtick can close it)."""
    return "`" + text.replace("`", "'") + "`" if text else "``"


def hidden_md(report: RunReport) -> list[str]:
    """report.md's line naming the hidden content removed before the agent saw the task."""
    records = report["hidden_input"]
    if not records:
        return []
    shown = "; ".join(
        f"{r['source']}: {r['count']} {r['kind']}{'' if r['count'] == 1 else 's'} "
        f"({_span(r['excerpt'])})"
        for r in records
    )
    return [f"- Hidden content removed before the agent saw it (GitHub does not show it): {shown}"]


def left_out_md(report: RunReport) -> list[str]:
    links = report["left_out_links"]
    if not links:
        return []
    shown = ", ".join(f"`{link['path']}` -> `{link['target']}`" for link in links)
    return [f"- Left out of the tree (symbolic links leading outside the repository): {shown}"]
