"""The commands an issue comment gives FrogNano (`/frognano stop`): parsed, pure."""

from __future__ import annotations

__all__ = ["RETRY", "STOP", "parse_command"]

STOP = "stop"
RETRY = "retry"
MAX_WORDS = 8
"""More words than any command takes: the rest of a long first line is not kept."""


def parse_command(body: str, command: str) -> tuple[str, ...] | None:
    """The words after `command` when the comment starts with it as a whole word (compared
    case-insensitively; leading blank space and lines allowed), else None. Only the first
    line counts, so a command can be followed by an explanation; `()` for the bare command."""
    first = body.lstrip().split("\n", 1)[0]
    words = first.split()
    if not words or words[0].casefold() != command.casefold():
        return None
    return tuple(words[1 : 1 + MAX_WORDS])
