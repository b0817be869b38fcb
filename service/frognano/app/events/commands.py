"""The commands an issue comment gives FrogNano (`/frognano stop`): parsed, pure."""

from __future__ import annotations

__all__ = ["BASE", "RETRY", "STOP", "label_base", "parse_command", "word_base"]

STOP = "stop"
RETRY = "retry"
BASE = "base="
"""`base=release/1.2`: a run on that branch (alone, or after `retry`)."""
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


def word_base(words: tuple[str, ...]) -> str | None:
    """The branch a `base=BRANCH` word among `words` names (the first such), or None."""
    for word in words:
        if word.casefold().startswith(BASE) and len(word) > len(BASE):
            return word[len(BASE) :]
    return None


def label_base(label: str, trigger: str) -> str | None:
    """ "" for the trigger label itself, BRANCH for `<trigger>:BRANCH`, None for any other
    label (the trigger part compared case-insensitively, as GitHub compares labels)."""
    if label.casefold() == trigger.casefold():
        return ""
    head, colon, branch = label.partition(":")
    if colon and branch and head.casefold() == trigger.casefold():
        return branch
    return None
