"""Untrusted text prepared for the model: hidden content removed, control tokens escaped."""

# Every text the model reads that FrogNano did not write (the issue, comments, reviews,
# repository files, diffs, tool output) passes through this module, in one of two ways:
#
# - `UntrustedText.prose` for text a person read on GitHub before asking for a run (the
#   issue, reviews and their line comments, instruction files): what GitHub does not show
#   (HTML comments, link reference definitions, invisible characters) is removed and
#   recorded as a `Hidden` finding, so the labeller can be told; then it is escaped.
# - `escape` alone for data the model must be able to reproduce exactly (tool results,
#   file contents, diffs, diff hunks).
#
# The escape. SGLang renders the chat template to text and then tokenises the whole string,
# so a literal `<|im_start|>` anywhere in a message becomes the real control token, and
# `<think>`, `</tool_response>`, `<tool_call>` or `</parameter>` fake a turn or call boundary
# in the rendered prompt. `escape` puts ESCAPE ("¦") after the `<` of each such string (a
# `<|` of any special token, and the structural tags), doubles every ESCAPE already in the
# text, and shows bidirectional controls and Unicode tag characters (invisible text a model
# still reads) as `¦U+202E¦`. `unescape`, applied to every string argument of the model's
# tool calls, is its exact inverse, so a file holding `<|im_end|>` can be read, edited and
# written byte for byte: the model copies the escaped form it was shown. The system prompt
# and tool schemas are FrogNano's own and never escaped.

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from markdown_it import MarkdownIt

__all__ = [
    "ESCAPE",
    "Hidden",
    "UntrustedText",
    "defuse_specials",
    "escape",
    "one_line",
    "strip_hidden",
    "unescape",
    "unescape_arguments",
]

ESCAPE = "\u00a6"
"""BROKEN BAR: visible, one token in Qwen's vocabulary, and rare in code."""

# What may follow `<` in a special token or a structural string of the chat template and the
# qwen3_coder call format. `<|` covers every special token of the Qwen family (`<|im_start|>`,
# `<|endoftext|>`, `<|fim_prefix|>`, ...), the rest are the added tokens without `|` and the
# call format's tags.
_TAIL = (
    r"\||/?(?:think|tool_call|tool_response|tts_[a-z_]+)>"
    r"|(?:function|parameter)=|/(?:function|parameter)>"
)
_DANGER = re.compile(rf"<(?={_TAIL})")
_SPECIAL = re.compile(r"<(?=\|)")


def _shown_chars() -> str:
    bidi = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    return f"{bidi}\U000e0000-\U000e007f"


# Characters a reader of a tool result cannot see but a model reads: bidirectional controls
# (reordering code, "Trojan Source") and tag characters (whole hidden ASCII messages).
_SHOWN = re.compile(f"[{_shown_chars()}]")
_UNESCAPE = re.compile(
    rf"{ESCAPE}{ESCAPE}|{ESCAPE}U\+([0-9A-F]{{4,6}}){ESCAPE}|(?<=<){ESCAPE}(?={_TAIL})"
)


def escape(text: str) -> str:
    """`text` with no substring the tokenizer could read as a control token or a structural
    tag, and its bidirectional controls and tag characters visible; `unescape` inverts it."""
    text = text.replace(ESCAPE, ESCAPE + ESCAPE)
    text = _SHOWN.sub(lambda m: f"{ESCAPE}U+{ord(m.group()):04X}{ESCAPE}", text)
    return _DANGER.sub("<" + ESCAPE, text)


def _unescaped(match: re.Match[str]) -> str:
    text = match.group(0)
    if text == ESCAPE + ESCAPE:
        return ESCAPE
    if match.group(1) is not None:
        char = chr(int(match.group(1), 16))
        return char if _SHOWN.fullmatch(char) else text
    return ""


def unescape(text: str) -> str:
    """The text `escape` was given, from what it returned; text the model wrote without an
    escape comes through unchanged (a lone "¦" stays)."""
    return _UNESCAPE.sub(_unescaped, text) if ESCAPE in text else text


def defuse_specials(text: str) -> str:
    """`text` with each `<|` broken (`<¦|`): for the model's own words echoed in the
    history, where `<think>` and call tags may be real structure but no special token is."""
    return _SPECIAL.sub("<" + ESCAPE, text)


def unescape_arguments(arguments: str) -> str:
    """A tool call's JSON arguments with every string value unescaped; text that is not a
    JSON object comes back as it is (validation reports it)."""
    if ESCAPE not in arguments and "\\u00a6" not in arguments.lower():
        return arguments
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    if not isinstance(parsed, dict):
        return arguments
    return json.dumps(_unescape_value(parsed), ensure_ascii=False)


def _unescape_value(value: Any) -> Any:
    if isinstance(value, str):
        return unescape(value)
    if isinstance(value, dict):
        return {key: _unescape_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unescape_value(item) for item in value]
    return value


def one_line(text: str) -> str:
    """`text` with every run of white space, line breaks included, made one space."""
    return " ".join(text.split())


# -- hidden content ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hidden:
    """Something in an untrusted text that GitHub does not show and FrogNano removed
    before the model saw the text."""

    source: str
    """Where it was: "the issue body", "the review", "AGENTS.md", ..."""
    kind: str
    """"HTML comment", "link reference definition" or "invisible character"."""
    count: int
    excerpt: str
    """The start of what was removed, on one line, its invisible characters named
    (`U+200B`) and tag characters decoded (`<tags:...>`): never to be rendered."""


_EXCERPT = 80
# Characters that show nothing. Category Cf (format: zero-width, bidirectional, tag, BOM,
# soft hyphen, ...) is added per character in `_invisible`.
_BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u180e")
_VARIATION_SUPPLEMENT = range(0xE0100, 0xE01F0)
_TAGS = range(0xE0000, 0xE0080)
_ZWJ = "\u200d"
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_CLOSED_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
_REFERENCE = re.compile(
    r"^ {0,3}\[(?:[^\]\\\n]|\\.){1,999}\]:[ \t]*(?:<[^>\n]*>|\S+)"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?[ \t]*$",
    re.MULTILINE,
)


def _invisible(char: str) -> bool:
    if char in "\n\t":
        return False
    code = ord(char)
    category = unicodedata.category(char)
    return (
        category in ("Cf", "Cc", "Co")
        or char in _BLANK
        or code in _VARIATION_SUPPLEMENT
        or code in _TAGS
    )


def _pictographic(char: str) -> bool:
    return unicodedata.category(char) == "So" or 0x1F3FB <= ord(char) <= 0x1F3FF


def _strip_invisible(text: str) -> tuple[str, list[str]]:
    """`text` without invisible characters, and the removed ones in order. A zero-width
    joiner inside an emoji sequence (👩‍💻) is kept: it only joins two pictures."""
    kept: list[str] = []
    removed: list[str] = []
    for index, char in enumerate(text):
        if not _invisible(char):
            kept.append(char)
            continue
        if char == _ZWJ and 0 < index < len(text) - 1:
            before, after = text[index - 1], text[index + 1]
            if (_pictographic(before) or before == "\ufe0f") and _pictographic(after):
                kept.append(char)
                continue
        if char == "\ufeff" and index == 0:
            continue  # a byte-order mark at the start says nothing
        removed.append(char)
    return "".join(kept), removed


def _describe(chars: list[str]) -> str:
    """The removed characters as a reader can see them: tag characters decoded to the text
    they hide, every other one by its code point."""
    parts: list[str] = []
    tags = ""
    for char in chars:
        if ord(char) in _TAGS:
            tags += chr(ord(char) - 0xE0000) if 0xE0020 <= ord(char) <= 0xE007E else ""
            continue
        if tags:
            parts.append(f"<tags:{tags}>")
            tags = ""
        parts.append(f"U+{ord(char):04X}")
    if tags:
        parts.append(f"<tags:{tags}>")
    return " ".join(parts)


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark")


def _line_modes(text: str, count: int) -> list[str]:
    """Each line's kind as GitHub renders it: "code" (fenced or indented code blocks, shown
    as they are), "html" (raw HTML blocks, whose comments hide everything up to `-->` or
    the end) or "text" (Markdown whose inline code spans show what they hold)."""
    modes = ["text"] * count
    for token in _parser().parse(text):
        kind = {"fence": "code", "code_block": "code", "html_block": "html"}.get(token.type)
        if kind and token.map:
            for line in range(token.map[0], min(token.map[1], count)):
                modes[line] = kind
    return modes


def _outside_code_spans(text: str, strip: re.Pattern[str], found: list[str]) -> str:
    """`text` with `strip`'s matches removed outside inline code spans (shown as they are)."""
    out: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(text):
        out.append(_remove(text[last : span.start()], strip, found))
        out.append(span.group(0))
        last = span.end()
    out.append(_remove(text[last:], strip, found))
    return "".join(out)


def _remove(text: str, strip: re.Pattern[str], found: list[str]) -> str:
    def drop(match: re.Match[str]) -> str:
        found.append(match.group(0))
        return ""

    return strip.sub(drop, text)


def _markdown_hidden(text: str) -> tuple[str, list[str], list[str]]:
    """`text` without the HTML comments and link reference definitions GitHub hides, and
    each one removed; code blocks and spans keep theirs (GitHub shows them)."""
    comments: list[str] = []
    references: list[str] = []
    lines = text.split("\n")
    modes = _line_modes(text, len(lines))
    out: list[str] = []
    start = 0
    for end in range(1, len(lines) + 1):
        if end < len(lines) and modes[end] == modes[start]:
            continue
        block = "\n".join(lines[start:end])
        if modes[start] == "html":
            block = _remove(block, _COMMENT, comments)
        elif modes[start] == "text":
            block = _outside_code_spans(block, _CLOSED_COMMENT, comments)
            block = _remove(block, _REFERENCE, references)
        out.append(block)
        start = end
    return "\n".join(out), comments, references


def _excerpt(text: str) -> str:
    flat = one_line(text)
    return flat if len(flat) <= _EXCERPT else flat[: _EXCERPT - 1] + "…"


def strip_hidden(text: str, source: str, *, markdown: bool = True) -> tuple[str, list[Hidden]]:
    """`text` as a reader on GitHub sees it (Markdown when `markdown`: comments and link
    reference definitions hidden), and what was removed."""
    found: list[Hidden] = []
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text, removed = _strip_invisible(text)
    if removed:
        found.append(
            Hidden(source, "invisible character", len(removed), _excerpt(_describe(removed)))
        )
    if markdown:
        text, comments, references = _markdown_hidden(text)
        if comments:
            shown = " ".join(c.removeprefix("<!--").removesuffix("-->") for c in comments)
            found.append(Hidden(source, "HTML comment", len(comments), _excerpt(shown)))
        if references:
            found.append(
                Hidden(
                    source,
                    "link reference definition",
                    len(references),
                    _excerpt(" ".join(references)),
                )
            )
    return text, found


@dataclass
class UntrustedText:
    """Prepares one run's untrusted texts for the model and remembers what it removed."""

    hidden: list[Hidden] = field(default_factory=list)

    def prose(self, text: str, source: str, *, markdown: bool = True) -> str:
        """Text a person read on GitHub: hidden content removed (and recorded), escaped."""
        clean, found = strip_hidden(text, source, markdown=markdown)
        self.hidden.extend(found)
        return escape(clean)

    def line(self, text: str, source: str) -> str:
        """A title or path: plain text on one line, invisible characters removed, escaped."""
        return one_line(self.prose(text, source, markdown=False))

    @staticmethod
    def data(text: str) -> str:
        """Code, diffs and tool output the model may need to copy exactly: escaped only."""
        return escape(text)


def history_message(message: dict[str, Any]) -> dict[str, Any]:
    """The model's assistant message as the history keeps it: no special token can come
    back to life when the template renders it again (the model may have spelled one out in
    ordinary tokens), and each call argument in the escaped form the model was taught. For
    a model that kept to the escapes this is the message itself, so the prefix cache holds."""
    kept = dict(message)
    for key in ("content", "reasoning_content"):
        value = kept.get(key)
        if isinstance(value, str) and "<|" in value:
            kept[key] = defuse_specials(value)
    calls = kept.get("tool_calls")
    if isinstance(calls, list):
        kept["tool_calls"] = [_history_call(call) for call in calls]
    return kept


def _history_call(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return call
    arguments = function.get("arguments")
    if not isinstance(arguments, str) or not _needs_escape(arguments):
        return call
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return call
    if not isinstance(parsed, dict):
        return call
    again = {key: _reescape(value) for key, value in parsed.items()}
    if again == parsed:
        return call
    rewritten = json.dumps(again, ensure_ascii=False, separators=(",", ":"))
    return {**call, "function": {**function, "arguments": rewritten}}


def _reescape(value: Any) -> Any:
    return escape(unescape(value)) if isinstance(value, str) else value


def _needs_escape(arguments: str) -> bool:
    return "<" in arguments or "\\u003c" in arguments.lower()
