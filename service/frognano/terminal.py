"""Text from others printed on a terminal: its control characters shown as escapes, never sent."""

from __future__ import annotations

import re

__all__ = ["printable"]

# What a terminal would obey instead of showing: the C0 controls but tab and newline (ESC
# starts every escape sequence, BEL ends an OSC one such as a window title or a hyperlink,
# CR and BS overwrite what was printed), DEL, the C1 controls (0x9b alone starts a sequence
# on many terminals), the bidirectional controls (they reorder what follows, so a line reads
# differently from what it holds) and the line and paragraph separators. Each is printed as
# a Python-style escape, `\x1b`, `\u202e`, so a reader sees that it was there.
_CONTROLS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with each control character shown as an escape (`\\x1b`, `\\u202e`); newlines
    and tabs stay as they are."""
    return _CONTROLS.sub(_escape, text)
