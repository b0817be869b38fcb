"""Untrusted text made inert on GitHub: no link, image, HTML, mention, keyword or reference."""

# Everything FrogNano writes on GitHub that it did not word itself (the issue, reviews, the
# repository's paths and test ids, the model's summary, reasoning and commit text, reasons
# and details quoting any of them) goes through `inert`, which GitHub then renders as text:
#
# 1. Clean: line ends made `\n`; terminal escape sequences, control characters (C0 but tab and
#    newline, DEL, C1) and invisible characters (format characters such as zero-width spaces,
#    joiners, the soft hyphen, bidirectional controls, tags, variation selectors, fillers)
#    removed, so none can hide inside a mention or a keyword, nor reorder what a reader sees.
# 2. Defuse, recognising each form after NFKC (a fullwidth at sign is an `@`, fullwidth
#    letters are letters): a zero-width joiner goes after every `@` that starts a mention or
#    an e-mail domain, after the `#` of `#12` (so `owner/repo#12` too) and the `-` of
#    `GH-12`, into every closing keyword that precedes a reference, before the colon of
#    trailer-shaped lines (`Co-authored-by:`) and after the `<` of `<!--`. GitHub then
#    neither notifies, cross-references nor closes, and no text carries FrogNano's markers.
# 3. By destination:
#    - markdown: code spans written in the text on one line stay code spans; every URL
#      (`scheme://...`, `www....`, an e-mail address) becomes a code span, shown, never a link
#      or an image; everything else that Markdown or GitHub would read as markup is escaped
#      with a backslash: `[` `]` (links, images, references, footnotes), `&` (entities such
#      as `&#64;`), a backslash, a backtick that closes nothing, `~` (fences), `|` (tables),
#      `$` (math); a zero-width joiner follows each `<` (HTML, comments, autolinks);
#    - plain (commit messages, titles): no backslashes, which would show; a zero-width joiner
#      breaks each construct instead (`]` before `(`, `[` or `:`; `<` before a tag; `&` of an
#      entity; `://`; `www.`; runs of `~`), so even read as Markdown the text renders nothing;
#    - code: one inline code span whose delimiter is longer than any backtick run inside;
#    - fence: a fenced block whose fence is longer than any backtick run inside.
#    (Inside code GitHub renders nothing, but mentions and references are defused there
#    too: the text may be copied, quoted or shown elsewhere.)
#
# `inert` is idempotent (a second pass changes nothing), so text can be rendered and then
# quoted or cut and rendered again. `cut` shortens rendered text only where that is safe:
# never inside a code span or between a backslash and what it escapes, so a cut cannot
# turn code into prose (or prose into a link). FrogNano's own words, references (`Refs #7`)
# and links (`own_link`, `mention`) are never passed through it.

from __future__ import annotations

import re
import unicodedata
from typing import Literal

__all__ = ["Kind", "cut", "inert", "mention", "own_link"]

Kind = Literal["markdown", "plain", "line", "code", "fence"]

_ZWJ = "\u200d"

# -- 1. cleaning ---------------------------------------------------------------------------------

_SEQUENCES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, clearing
    r"|(?:\x1b[\]P^_X]|[\x9d\x90\x9e\x9f\x98])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC
    r"|\x1b[ -/]*[0-~]"  # two-character escapes
)
_ASCII_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# Invisible characters outside the format category (Cf), which goes whole: the combining
# grapheme joiner, Hangul and halfwidth fillers, Khmer and Mongolian vowel carriers and
# selectors, variation selectors.
_INVISIBLE = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u2028\u2029\u3164\uffa0"
    + "".join(map(chr, range(0xFE00, 0xFE10)))
)


def _visible(chars: re.Match[str]) -> str:
    return "".join(
        c
        for c in chars.group(0)
        if not (
            c in _INVISIBLE
            or 0xE0100 <= ord(c) <= 0xE01EF
            or unicodedata.category(c) in ("Cf", "Cc")
        )
    )


def _clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _ASCII_CONTROLS.sub("", _SEQUENCES.sub("", text))
    return _NON_ASCII.sub(_visible, text)


# -- 2. defusing mentions, closing keywords, references and trailers ------------------------------

_MENTION = re.compile(r"@(?=[\w.+-])")
_REFERENCE = re.compile(r"#(?=\d)|(?<![^\W_])gh-(?=\d)", re.IGNORECASE)
_CLOSING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b"
    r"(?=[\s:*_\[(`'\"\\]*(?:#\d|[\w.-]+/[\w.-]+#\d|https?://|gh-\d))",
    re.IGNORECASE,
)
_TRAILER = re.compile(r"^\s*[A-Za-z][A-Za-z-]*-by(?=\s*:)", re.MULTILINE | re.IGNORECASE)
_COMMENT = re.compile(r"<(?=!--)")


def _view(text: str) -> tuple[str, list[int]]:
    """`text` with each character NFKC-normalised, and where each one came from."""
    if text.isascii():
        return text, list(range(len(text)))
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        normal = char if char.isascii() else unicodedata.normalize("NFKC", char)
        chars.append(normal)
        origin += [index] * len(normal)
    return "".join(chars), origin


def _insert(text: str, places: set[int]) -> str:
    """`text` with a zero-width joiner before each index in `places`."""
    if not places:
        return text
    pieces, last = [], 0
    for place in sorted(places):
        pieces += [text[last:place], _ZWJ]
        last = place
    pieces.append(text[last:])
    return "".join(pieces)


def _defuse(text: str) -> str:
    view, origin = _view(text)
    origin.append(len(text))
    places: set[int] = set()

    def after(start: int, offset: int) -> None:
        # The first original character past the match's first `offset` view characters
        # (a ligature such as `ﬁ` is one character of the text but two of the view).
        first = origin[start]
        index = start + offset
        while index < len(view) and origin[index] == first:
            index += 1
        places.add(origin[index])

    for found in _MENTION.finditer(view):
        after(found.start(), 1)
    for found in _REFERENCE.finditer(view):
        after(found.start(), len(found.group(0)))
    for found in _CLOSING.finditer(view):
        after(found.start(), 1)
    for found in _TRAILER.finditer(view):
        places.add(origin[found.end()])
    for found in _COMMENT.finditer(view):
        after(found.start(), 1)
    return _insert(text, places)


# -- 3. by destination ---------------------------------------------------------------------------


def _code_span(content: str) -> str:
    """`content` (one line) as one inline code span that nothing inside can close."""
    if not content:
        return "``"
    runs = [len(run) for run in re.findall(r"`+", content)]
    ticks = "`" * (max(runs) + 1 if runs else 1)
    pad = " " if content[0] == "`" or content[-1] == "`" else ""
    return f"{ticks}{pad}{content}{pad}{ticks}"


def _fence(text: str, info: str) -> str:
    runs = [len(run) for run in re.findall(r"`{3,}", text)]
    marks = "`" * max(3, *(run + 1 for run in runs)) if runs else "```"
    return f"{marks}{info}\n{text}\n{marks}"


_PLAIN_BREAKS = re.compile(
    r"\](?=[(\[:])|<(?=[A-Za-z/!?])|&(?=#?\w+;)|~(?=~)|:(?=//)|(?<![^\W_])www(?=\.)",
    re.IGNORECASE,
)


def _plain(text: str) -> str:
    return _PLAIN_BREAKS.sub(lambda found: found.group(0) + _ZWJ, text)


_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_ESCAPE = re.compile(r"[\[\]&~|$]")
_OPEN = re.compile(r"<(?=[^\s<])")
_SPECIAL = re.compile(r"[\\`]")
_TICKS = re.compile(r"`+")
_WORD = re.compile(r"[^\s<>]*")
_URL_TAIL = ".,:;!?\"'*_~"


def _url_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` has a URL GitHub could link: `scheme://...`, `www....`, an address."""
    spans: list[tuple[int, int]] = []
    for found in re.finditer(r"://", text):
        start = found.start()
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "+.-"):
            start -= 1
        if start < found.start() and text[start].isalpha():
            spans.append((start, found.end()))
    spans += [m.span() for m in re.finditer(r"(?<![^\W_])www\.", text, re.IGNORECASE)]
    email = r"(?<![\w.+-])[\w.+-]+@\u200d?[\w-]+(?:\.[\w-]+)+"
    spans += [m.span() for m in re.finditer(email, text)]
    merged: list[tuple[int, int]] = []
    for start, found_end in sorted(spans):
        if merged and start < merged[-1][1]:
            continue  # inside the URL before it, which runs to the same blank
        end = _WORD.match(text, found_end).end()  # type: ignore[union-attr]
        while end > start + 1 and (
            text[end - 1] in _URL_TAIL
            or (text[end - 1] == ")" and text.count("(", start, end) < text.count(")", start, end))
        ):
            end -= 1
        merged.append((start, end))
    return merged


def _closing_ticks(text: str, after: int, run: int) -> int:
    """Where the backtick run of exactly `run` that closes a code span opened before `after`
    starts, on the same line; -1 when none does."""
    line_end = text.find("\n", after)
    line_end = len(text) if line_end < 0 else line_end
    for found in _TICKS.finditer(text, after, line_end):
        if len(found.group(0)) == run:
            return found.start()
    return -1


def _tokens(text: str) -> list[tuple[int, int, str]]:
    """`text` as (start, end, what): `escape` (a backslash and the punctuation it escapes),
    `code` (a code span on one line), `ticks` (a backtick run that closes nothing) and
    `text`, read left to right as cmark reads inline text."""
    out: list[tuple[int, int, str]] = []
    pos, prose = 0, 0
    while True:
        found = _SPECIAL.search(text, pos)
        if found is None:
            break
        at = found.start()
        if text[at] == "\\":
            if at + 1 < len(text) and text[at + 1] in _PUNCTUATION:
                out += [(prose, at, "text"), (at, at + 2, "escape")]
                pos = prose = at + 2
            else:
                pos = at + 1
            continue
        run = _TICKS.match(text, at)
        end = run.end() if run else at + 1
        close = _closing_ticks(text, end, end - at)
        out.append((prose, at, "text"))
        if close >= 0:
            out.append((at, close + end - at, "code"))
        else:
            out.append((at, end, "ticks"))
        pos = prose = out[-1][1]
    out.append((prose, len(text), "text"))
    return [token for token in out if token[0] < token[1]]


def _markdown(text: str) -> str:
    """Markdown prose: its one-line code spans kept, its URLs made code spans, the rest
    escaped; read left to right as cmark reads inline text."""
    urls = _url_spans(text)
    out: list[str] = []
    pos, url = 0, 0
    while pos < len(text):
        while url < len(urls) and urls[url][1] <= pos:
            url += 1
        next_url = urls[url][0] if url < len(urls) else len(text)
        if next_url <= pos:  # at (or, after an escape or a code span, inside) a URL
            out.append(_code_span(text[pos : urls[url][1]]))
            pos = urls[url][1]
            continue
        found = _SPECIAL.search(text, pos, next_url)
        stop = found.start() if found else next_url
        out.append(_OPEN.sub("<" + _ZWJ, _ESCAPE.sub(r"\\\g<0>", text[pos:stop])))
        pos = stop
        if found is None:
            continue
        if text[pos] == "\\":
            paired = pos + 1 < len(text) and text[pos + 1] in _PUNCTUATION
            out.append(text[pos : pos + 2] if paired else "\\\\")
            pos += 2 if paired else 1
            continue
        run = _TICKS.match(text, pos)
        end = run.end() if run else pos + 1
        close = _closing_ticks(text, end, end - pos)
        if close >= 0:
            out.append(text[pos : close + end - pos])
            pos = close + end - pos
        else:
            out.append("\\`" * (end - pos))
            pos = end
    return "".join(out)


def inert(text: str, kind: Kind = "markdown", *, info: str = "text") -> str:
    """`text`, written by someone else, made inert for a `kind` of destination on GitHub:
    `markdown` prose, `plain` text (commit messages), one `line` (titles), one inline
    `code` span, or a `fence`d block (`info` its language). Idempotent."""
    text = _clean(text)
    if kind in ("code", "line"):
        text = " ".join(text.split())
    text = _defuse(text)
    if kind == "fence":
        return _fence(text, info)
    if kind == "code":
        return _code_span(text)
    if kind in ("plain", "line"):
        return _plain(text)
    return _markdown(text)


def _inside(text: str) -> list[tuple[int, int]]:
    """The spans of rendered Markdown a cut must not fall inside."""
    return [(start, end) for start, end, what in _tokens(text) if what in ("escape", "code")]


def cut(text: str, keep: int, *, tail: bool = False) -> str:
    """At most `keep` characters of rendered Markdown `text`, from its start (or its end with
    `tail`), cut where no code span or escape is split."""
    if keep >= len(text):
        return text
    at = len(text) - keep if tail else max(0, keep)
    for start, end in _inside(text):
        if start < at < end:
            at = end if tail else start
            break
    return text[at:] if tail else text[:at]


_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
_OWN_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::\d+)?/[A-Za-z0-9._~%/?=&+#-]*")


def mention(login: str) -> str:
    """`@login` for a GitHub login FrogNano itself names (whoever asked, who may not
    approve); anything that is not a login is shown as code."""
    return f"@{login}" if _LOGIN.fullmatch(login) else inert(login, "code")


def own_link(url: str, text: str | None = None) -> str:
    """FrogNano's own link (its pull request, its check run, from GitHub's answers): the URL
    itself, or `[text](url)`; anything but a plain http(s) URL is shown as code."""
    if not _OWN_URL.fullmatch(url):
        return inert(url, "code")
    return url if text is None else f"[{text}]({url})"
