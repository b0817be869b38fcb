"""The labeller's note on hidden content FrogNano removed before the agent read the task."""

from __future__ import annotations

from collections.abc import Sequence

from frognano.app.markdown import code, md
from frognano.run.report import HiddenRecord

__all__ = ["hidden_line"]


def hidden_line(records: Sequence[HiddenRecord], limit: int = 10) -> str | None:
    """What the issue, a review or an instruction file held that GitHub does not show, and
    FrogNano removed before the agent read it, as one paragraph (each excerpt an inert code
    span); None when there was nothing."""
    if not records:
        return None
    shown = "; ".join(
        f"{md(r['source'])}: {r['count']:,} {r['kind']}{'' if r['count'] == 1 else 's'} "
        f"({code(r['excerpt'])})"
        for r in records[:limit]
    )
    more = f"; and {len(records) - limit:,} more" if len(records) > limit else ""
    return (
        "**Hidden content removed.** Some of the text the agent was given held content that "
        "GitHub does not show; FrogNano removed it before the agent read anything, so the "
        f"agent followed none of it: {shown}{more}. Check who wrote it."
    )
