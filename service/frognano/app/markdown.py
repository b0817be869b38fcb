"""Untrusted text made harmless on GitHub, and long texts cut to fit GitHub's size limits."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from frognano.app.inert import cut, inert, mention, own_link

__all__ = [
    "BODY_BUDGET",
    "CHECK_BUDGET",
    "Part",
    "code",
    "fence",
    "fit",
    "fixed",
    "md",
    "mention",
    "neutralise",
    "own_link",
    "quote",
    "shorten",
    "single_line",
    "size",
]

# Text rules, for every renderer of what FrogNano posts (texts.py, status.py, story.py,
# commit.py, labelled.py, status_comment.py, review.py):
# - Whatever the renderers did not write themselves (model output, issue titles, test ids,
#   paths, reasons, stop details, branch and label names) is untrusted and goes through
#   `inert` (inert.py) by way of the helpers below: `md` for Markdown prose, `quote` for
#   prose quoted, `code` for one inline code span, `fence` for a fenced block, `neutralise`
#   for plain text (commit messages) and `single_line` for titles. Nothing of it renders as a
#   link, image, HTML, entity, mention, closing keyword or issue reference, and its control
#   and invisible characters go. The renderers' own words, links (`own_link`) and
#   mentions (`mention`) do not go through it.
# - Bodies stay under BODY_BUDGET and check texts under CHECK_BUDGET, measured in UTF-16
#   code units (as GitHub's limits may count), well below GitHub's 65,536 / 65,535 so the
#   client's own last-resort truncation never has to act. When a text is too long, the
#   longest untrusted parts are cut first, each with a visible note, and never inside a code
#   span or an escape (`cut`); the lines the renderers write themselves (markers, warning,
#   headings, the `Refs #N` line) are never cut.

BODY_BUDGET = 60_000
"""Most UTF-16 code units in a pull request body or comment (GitHub: 65,536)."""
CHECK_BUDGET = 60_000
"""Most UTF-16 code units in a check run's summary or text (GitHub: 65,535 each)."""


def neutralise(text: str) -> str:
    """Untrusted plain text (commit messages): no mention, closing keyword, reference, URL,
    trailer or control character survives, nor markup if it is read as Markdown."""
    return inert(text, "plain")


def single_line(text: str) -> str:
    """Untrusted text as plain text on one line (titles, subjects)."""
    return inert(text, "line")


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def md(text: str) -> str:
    """Untrusted text for Markdown prose: rendered as text, nothing in it live."""
    return inert(text, "markdown")


def code(text: str) -> str:
    """Untrusted text as one inline code span."""
    return inert(str(text), "code")


def quote(text: str) -> str:
    """Untrusted text as Markdown prose in a block quote."""
    return "\n".join(f"> {line}" if line.strip() else ">" for line in md(text).split("\n"))


def fence(text: str, info: str = "text") -> str:
    """Untrusted text as a fenced code block that nothing inside can close."""
    return inert(text, "fence", info=info)


def size(text: str) -> int:
    """Length as GitHub may count it: UTF-16 code units (astral characters count twice)."""
    return len(text.encode("utf-16-le")) // 2


# -- fitting a text under a limit ---------------------------------------------------------------


def _same(text: str) -> str:
    return text


@dataclass
class Part:
    """One piece of a text. `fixed` pieces are the renderer's own words and never cut;
    others are cut from the end (`keep="head"`), the start (`keep="tail"`) or the middle
    (`keep="ends"`: the first and last lines of a long story both matter)."""

    text: str
    render: Callable[[str], str] = _same
    fixed: bool = False
    keep: Literal["head", "tail", "ends"] = "head"
    limit: int = -1

    def shown(self) -> str:
        if self.limit < 0 or self.limit >= len(self.text):
            return self.render(self.text)
        if self.keep == "tail":
            tail = cut(self.text, self.limit, tail=True)
            return self.render(f"{_note(len(self.text) - len(tail))}\n{tail}")
        if self.keep == "ends":
            # Whole lines where there are any: a step line cut in two reads as two steps.
            head = cut(self.text, self.limit - self.limit // 2)
            tail = cut(self.text, self.limit // 2, tail=True)
            if "\n" in head:
                head = head[: head.rindex("\n")]
            if "\n" in tail:
                tail = tail[tail.index("\n") + 1 :]
            note = _note(len(self.text) - len(head) - len(tail))
            return self.render(f"{head}\n{note}\n{tail}")
        head = cut(self.text, self.limit)
        return self.render(f"{head}\n{_note(len(self.text) - len(head))}")


def _note(count: int) -> str:
    return f"… ({count:,} characters cut to fit GitHub's size limit)"


def fixed(text: str) -> Part:
    return Part(text, fixed=True)


def _water_level(sizes: Sequence[int], allowed: int) -> int:
    """The largest cap c with sum(min(s, c)) <= allowed."""
    ordered = sorted(sizes)
    below = 0
    for index, value in enumerate(ordered):
        remaining = len(ordered) - index
        if below + remaining * value > allowed:
            return max(0, (allowed - below) // remaining)
        below += value
    return ordered[-1] if ordered else 0


_NOTE_ROOM = 80


def fit(parts: Sequence[Part], budget: int, joiner: str = "\n") -> str:
    """Join the parts, cutting the longest cuttable ones first until the text fits."""
    for _ in range(24):
        shown = [part.shown() for part in parts]
        text = joiner.join(shown)
        over = size(text) - budget
        if over <= 0:
            return text
        cuttable = [
            (index, size(shown[index]))
            for index, part in enumerate(parts)
            if not part.fixed and part.limit != 0
        ]
        if not cuttable:
            break
        sizes = [value for _, value in cuttable]
        cap = _water_level(sizes, sum(sizes) - over)
        for index, value in cuttable:
            if value > cap:
                part = parts[index]
                current = len(part.text) if part.limit < 0 else part.limit
                part.limit = max(0, current - (value - cap) - _NOTE_ROOM)
    # Only the renderer's own words are left and they are too long: never expected, since
    # they are short; keep the first and last pieces (markers, link line) whole.
    if len(parts) < 3:
        return cut(joiner.join(part.shown() for part in parts), budget // 2)
    head, tail = parts[0].shown(), parts[-1].shown()
    note = "\n\n… (cut to fit GitHub's size limit)\n\n"
    room = max(0, budget - size(head) - size(tail) - size(note))
    middle = joiner.join(part.shown() for part in parts[1:-1])
    return head + joiner + cut(middle, room) + note + tail
