"""Untrusted text made harmless on GitHub, and long texts cut to fit GitHub's size limits."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BODY_BUDGET",
    "CHECK_BUDGET",
    "Part",
    "code",
    "fence",
    "fit",
    "fixed",
    "md",
    "neutralise",
    "quote",
    "size",
    "without_controls",
]

# Text rules, for every renderer of what FrogNano posts (texts.py, status.py):
# - Whatever the renderers did not write themselves (model output, issue titles, test ids,
#   paths, reasons, stop details) is untrusted: `neutralise` puts a zero-width joiner into each
#   `@mention` and each closing keyword ("fixes #3") so GitHub neither notifies anyone nor
#   links/closes an issue because of it; in Markdown, `<` before a tag, comment or
#   declaration becomes `&lt;`, so such text cannot open an HTML comment that hides the rest
#   of a body or fake a hidden marker. Control and bidirectional-override characters go.
# - Bodies stay under BODY_BUDGET and check texts under CHECK_BUDGET, measured in UTF-16
#   code units (as GitHub's limits may count), well below GitHub's 65,536 / 65,535 so the
#   client's own last-resort truncation never has to act. When a text is too long, the
#   longest untrusted parts are cut first, each with a visible note; the lines the renderers
#   write themselves (markers, warning, headings, the `Refs #N` line) are never cut.

BODY_BUDGET = 60_000
"""Most UTF-16 code units in a pull request body or comment (GitHub: 65,536)."""
CHECK_BUDGET = 60_000
"""Most UTF-16 code units in a check run's summary or text (GitHub: 65,535 each)."""

# -- neutralising untrusted text ----------------------------------------------------------------

_ZWJ = "\u200d"
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_CLOSE_KEYWORD = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b"
    r"(?=[\s:*_\[(`'\"]*(?:#\d|[\w.-]+/[\w.-]+#\d|https?://|gh-\d))",
    re.IGNORECASE,
)
_TRAILER = re.compile(r"^(\s*[A-Za-z][A-Za-z-]*-by)(\s*:)", re.MULTILINE | re.IGNORECASE)
_HTML_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def neutralise(text: str) -> str:
    """`text` with mentions, closing keywords, trailers and control characters defused
    (plain text: commit messages, code spans). Idempotent."""
    text = without_controls(text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _MENTION.sub("@" + _ZWJ, text.replace("@" + _ZWJ, "@"))
    text = _CLOSE_KEYWORD.sub(lambda m: m.group(0)[0] + _ZWJ + m.group(0)[1:], text)
    return _TRAILER.sub(lambda m: m.group(1) + _ZWJ + m.group(2), text)


def single_line(text: str) -> str:
    """Untrusted text neutralised and on one line (titles, subjects)."""
    return " ".join(neutralise(text).split())


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def md(text: str) -> str:
    """Untrusted text for Markdown prose: neutralised, and unable to open HTML."""
    return _HTML_OPEN.sub("&lt;", neutralise(text))


def code(text: str) -> str:
    """Untrusted text as one inline code span."""
    flat = " ".join(neutralise(str(text)).replace("`", "'").split())
    return f"`{flat}`" if flat else "``"


def quote(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.split("\n"))


def fence(text: str, info: str = "text") -> str:
    runs = [len(run) for run in re.findall(r"`{3,}", text)]
    marks = "`" * max(3, *(run + 1 for run in runs)) if runs else "```"
    return f"{marks}{info}\n{text}\n{marks}"


def without_controls(text: str) -> str:
    """`text` without terminal escapes and control or bidirectional-override characters."""
    return _CONTROL.sub("", _ANSI.sub("", text))


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
        cut = len(self.text) - self.limit
        note = f"… ({cut:,} characters cut to fit GitHub's size limit)"
        if self.keep == "tail":
            return self.render(f"{note}\n{self.text[len(self.text) - self.limit :]}")
        if self.keep == "ends":
            # Whole lines where there are any: a step line cut in two reads as two steps.
            head = self.text[: self.limit - self.limit // 2]
            tail = self.text[len(self.text) - self.limit // 2 :]
            if "\n" in head:
                head = head[: head.rindex("\n")]
            if "\n" in tail:
                tail = tail[tail.index("\n") + 1 :]
            cut = len(self.text) - len(head) - len(tail)
            note = f"… ({cut:,} characters cut to fit GitHub's size limit)"
            return self.render(f"{head}\n{note}\n{tail}")
        return self.render(f"{self.text[: self.limit]}\n{note}")


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
        return joiner.join(part.shown() for part in parts)[: budget // 2]
    head, tail = parts[0].shown(), parts[-1].shown()
    note = "\n\n… (cut to fit GitHub's size limit)\n\n"
    room = max(0, budget - size(head) - size(tail) - size(note))
    middle = joiner.join(part.shown() for part in parts[1:-1])
    return head + joiner + middle[:room] + note + tail
