"""Secrets in a patch's added text: credential formats, entropy, encoded or split, file names."""

from __future__ import annotations

import base64
import binascii
import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from detect_secrets.filters.heuristic import (
    is_indirect_reference,
    is_likely_id_string,
    is_lock_file,
    is_non_text_file,
    is_not_alphanumeric_string,
    is_potential_uuid,
    is_prefixed_with_dollar_sign,
    is_sequential_string,
    is_swagger_file,
    is_templated_secret,
)
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import (
    Base64HighEntropyString,
    HexHighEntropyString,
    HighEntropyStringsPlugin,
)
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, KeywordDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

# detect-secrets' detector classes and filter functions are used directly, never its settings:
# `transient_settings`, `scan_line` and even `BasePlugin.analyze_line` read or mutate a
# process-wide settings singleton (not safe when several gates run at once) and may try network
# verification. `# pragma: allowlist secret` comments are not honoured: the agent writes them too.

_WINDOW = 4096  # long texts are scanned in overlapping windows: linear time, no missed secret
_OVERLAP = 256
_CONTEXT = 200  # characters before a high-entropy string that is_likely_id_string looks at
_REDACTED = "[REDACTED]"

# Provider formats: distinctive enough to block on sight, even in tests.
_PROVIDERS: tuple[RegexBasedDetector, ...] = (
    ArtifactoryDetector(), AWSKeyDetector(), AzureStorageKeyDetector(), CloudantDetector(),
    DiscordBotTokenDetector(), GitHubTokenDetector(), GitLabTokenDetector(),
    IbmCloudIamDetector(), IbmCosHmacDetector(), MailchimpDetector(), NpmDetector(),
    OpenAIDetector(), PrivateKeyDetector(), PypiTokenDetector(), SendGridDetector(),
    SlackDetector(), SoftlayerDetector(), SquareOAuthDetector(), StripeDetector(),
    TelegramBotTokenDetector(), TwilioKeyDetector(),
)  # fmt: skip
# detect-secrets misses `BEGIN ENCRYPTED PRIVATE KEY` (PKCS#8) and other variants.
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Private Key", _PRIVATE_KEY),
    *((str(found.secret_type), pattern) for found in _PROVIDERS for pattern in found.denylist),
)
# Formats with a prefix no code or prose has, safe to look for once quotes, `+`, white space
# and line breaks are removed (Twilio's `SK` + 32 letters, say, would match joined-up prose).
_JOINABLE = frozenset({
    "GitHub Token", "GitLab Token", "Slack Token", "Stripe Access Key", "OpenAI Token",
    "PyPI Token", "SendGrid API Key", "Square OAuth Secret",
})  # fmt: skip
_JOINED_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Private Key", re.compile(r"-----BEGIN[A-Z0-9]*PRIVATEKEY(?:BLOCK)?-----")),
    ("AWS Access Key", AWSKeyDetector.denylist[0]),
    *((kind, pattern) for kind, pattern in _PATTERNS if kind in _JOINABLE),
)
_GLUE = re.compile(r"""[\s'"`+\\]+""")
_SPLITTING = re.compile(r"""['"`+\\\n]""")  # glue that splits a secret (not a mere space)
# AWS keys are upper-case letters and digits: upper-case prose wrapped after ASIA would match
# across the line break, so only string pieces count as splitting them.
_PIECE_GLUE = re.compile(r"""['"`+\\]""")

_ENTROPY: tuple[HighEntropyStringsPlugin, ...] = (Base64HighEntropyString(), HexHighEntropyString())
_KEYWORD = KeywordDetector()
_CONFIG_SUFFIXES = (".env", ".ini", ".cfg", ".conf", ".cnf", ".cf", ".properties", ".toml",
                    ".yaml", ".yml", ".eyaml", ".json", ".npmrc", ".pypirc")  # fmt: skip
# `key = value` and `key: value` lines of config files: the value counts as a quoted string,
# as detect-secrets' config-file transformers make it.
_CONFIG_VALUE = re.compile(r"""^\s*[\w.\-]+\s*[=:]\s*['"]?([^\s'"#;]+)""")

_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{20,}={0,2}")
_HEX_RUN = re.compile(r"(?:[0-9a-fA-F]{2}){16,}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")
_PRINTABLE = 0.9

# Keyword values that are stock placeholders, not secrets.
_PLACEHOLDERS = frozenset({"changeme", "change-me", "change_me", "example", "secret", "password",
                           "test", "testing", "dummy", "fake", "none", "null", "true", "false",
                           "xxx", "xxxx", "xxxxxx", "todo", "redacted", "placeholder"})  # fmt: skip


@dataclass(frozen=True)
class SecretHit:
    """One secret in one file."""

    kind: str
    """The detector's name for it, e.g. `GitHub Token (base64-encoded)`."""
    heuristic: bool
    """Found by entropy or by a keyword, not by a credential format: may be a false positive."""
    index: int
    """Index, in the lines scanned, of the line where it starts."""
    redact: tuple[str, ...]
    """Texts to hide wherever a line of the file is shown."""
    scrub: bool = False
    """The secret's text cannot be told apart on its line: hide every string there."""


@dataclass(frozen=True)
class BuiltString:
    """A string value the code builds from pieces (Python: `"ab" "cd"`, `"ab" + "cd"`, ...)."""

    index: int
    """Index, in the lines scanned, of the first added line of the expression."""
    value: str
    pieces: tuple[str, ...]
    """The literal pieces it is made of."""


def scan_file(
    path: str,
    lines: Sequence[str],
    numbers: Sequence[int] = (),
    strings: Sequence[BuiltString] = (),
) -> list[SecretHit]:
    """The secrets of the added `lines` of `path` (new-file line numbers `numbers`; empty: all
    consecutive) and of the `strings` its code builds on those lines."""
    # One secret, one finding: a scan that sees a secret another already named stays quiet
    # (formats on a line first, then strings built on it, then lines joined together).
    named: list[SecretHit] = []
    guessed: list[SecretHit] = []
    for index, line in enumerate(lines):
        found = [(kind, line[start:end]) for kind, start, end in _provider(line)]
        found += _decoded(line)
        named += [SecretHit(kind, False, index, (value,)) for kind, value in found]
        guessed += [
            SecretHit(kind, True, index, (value,)) for kind, value in _heuristic(path, line)
        ]
    seen = {(_base(hit.kind), hit.index) for hit in named}
    for hit in _built(path, strings):
        if (_base(hit.kind), hit.index) not in seen:
            (guessed if hit.heuristic else named).append(hit)
            seen.add((_base(hit.kind), hit.index))
    named += [hit for hit in _split(lines, numbers) if (_base(hit.kind), hit.index) not in seen]
    covered: dict[int, list[str]] = {}
    for hit in named:
        covered.setdefault(hit.index, []).extend(hit.redact)
    kept: list[SecretHit] = []
    for hit in sorted(guessed, key=lambda hit: -len(hit.redact[0])):  # longest first
        value = hit.redact[0]
        others = covered.setdefault(hit.index, [])
        if not any(value in known or known in value for known in others):
            kept.append(hit)
            others.append(value)
    return named + sorted(kept, key=lambda hit: (hit.index, hit.kind))


def _base(kind: str) -> str:
    """`GitHub Token` for `GitHub Token (base64-encoded)`."""
    return kind.partition(" (")[0]


def _built(path: str, strings: Sequence[BuiltString]) -> Iterator[SecretHit]:
    for string in strings:
        value = string.value
        found = [(kind, value[start:end]) for kind, start, end in _provider(value)]
        found += _decoded(value)
        pieces = tuple(piece for piece in string.pieces if len(piece) >= 4)
        for kind, secret in found:
            yield SecretHit(
                f"{kind} (built from pieces)", False, string.index, (secret, *pieces), True
            )
        # The entropy detectors look at quoted strings only.
        for kind, secret in _heuristic(path, f'"{value}"'):
            if not any(secret in known or known in secret for _, known in found):
                yield SecretHit(
                    f"{kind} (built from pieces)", True, string.index, (secret, *pieces), True
                )


def redact(text: str, known: Sequence[str] = ()) -> str:
    """`text` with every secret the format detectors see, and the `known` ones, hidden."""
    found = {*known, *(text[start:end] for _, start, end in _provider(text))}
    for value in sorted(found, key=len, reverse=True):
        if value:
            text = text.replace(value, _REDACTED)
    return text


def scrub(text: str) -> str:
    """`text` with every quoted string and every long token-like run hidden."""
    text = re.sub(r"""(['"`])(?:(?!\1).)*\1""", rf"\1{_REDACTED}\1", text)
    return re.sub(r"[A-Za-z0-9+/=_-]{12,}", _REDACTED, text)


def _windows(text: str) -> Iterator[tuple[int, str]]:
    step = _WINDOW - _OVERLAP
    for start in range(0, max(len(text) - _OVERLAP, 1), step):
        yield start, text[start : start + _WINDOW]


def _provider(
    text: str, patterns: Sequence[tuple[str, re.Pattern[str]]] = _PATTERNS
) -> Iterator[tuple[str, int, int]]:
    """(secret type, start, end) of each credential format in `text`."""
    found: dict[tuple[str, int], int] = {}
    for offset, window in _windows(text):
        for kind, pattern in patterns:
            for match in pattern.finditer(window):
                if _filtered(match.group(0)):
                    continue
                key = (kind, offset + match.start())
                found[key] = max(found.get(key, 0), offset + match.end())  # the longest cut
    for (kind, start), end in sorted(found.items(), key=lambda item: item[0][1]):
        yield kind, start, end


def _filtered(value: str) -> bool:
    """detect-secrets' filters for values that are never secrets."""
    return (
        is_sequential_string(value)
        or is_potential_uuid(value)
        or is_templated_secret(value)
        or is_not_alphanumeric_string(value)
    )


def _heuristic(path: str, line: str) -> Iterator[tuple[str, str]]:
    """(secret type, value) of high-entropy strings, and of keyword assignments in config files."""
    if is_lock_file(path) or is_swagger_file(path) or is_non_text_file(path):
        return
    config = path.lower().endswith(_CONFIG_SUFFIXES) or "/.env" in f"/{path.lower()}"
    candidates: list[tuple[HighEntropyStringsPlugin, str, int, int]] = []
    assigned = _CONFIG_VALUE.match(line) if config else None
    for plugin in _ENTROPY:
        for match in plugin.regex.finditer(line):
            candidates.append((plugin, match.group(2), match.start(2), match.end(2)))
        if assigned and re.fullmatch(f"[{re.escape(plugin.charset)}]+", assigned.group(1)):
            candidates.append((plugin, assigned.group(1), assigned.start(1), assigned.end(1)))
    for plugin, value, start, end in candidates:
        if plugin.calculate_shannon_entropy(value) <= plugin.entropy_limit or _filtered(value):
            continue
        if is_likely_id_string(value, line[max(0, start - _CONTEXT) : end], plugin):
            continue
        yield str(plugin.secret_type), value
    # A keyword line that reads its value from elsewhere (`password = get_password()`) holds
    # none; detect-secrets drops such lines for every detector, this gate for keywords only,
    # since a literal inside a call is still a literal.
    if config and not is_indirect_reference(line):
        for _, window in _windows(line):
            for value in _KEYWORD.analyze_string(window, CONFIG_DENYLIST_REGEX_TO_GROUP):
                if not (
                    _filtered(value)
                    or is_prefixed_with_dollar_sign(value)
                    or _placeholder(value, window)
                ):
                    yield str(_KEYWORD.secret_type), value


def _placeholder(value: str, line: str) -> bool:
    """FrogNano's filter on top of detect-secrets': a keyword's value that repeats its key
    (`POSTGRES_PASSWORD: postgres`, `password: password`) or is a stock placeholder."""
    lowered = value.lower().strip("<>{}[]()")
    key = line.lower().rpartition(value.lower())[0]
    return lowered in _PLACEHOLDERS or (len(lowered) >= 2 and lowered in key)


def _decoded(text: str) -> Iterator[tuple[str, str]]:
    """(secret type, encoded text) of credential formats inside base64 or hex runs of `text`."""
    for pattern, name, decode in ((_BASE64_RUN, "base64", _unbase64), (_HEX_RUN, "hex", _unhex)):
        for match in pattern.finditer(text):
            plain = decode(match.group(0))
            if plain is None:
                continue
            kinds = dict.fromkeys(kind for kind, _, _ in _provider(plain))
            for kind in kinds:
                yield f"{kind} ({name}-encoded)", match.group(0)


def _unbase64(run: str) -> str | None:
    data = run.rstrip("=")
    if len(data) % 4 == 1:
        data = data[:-1]
    data += "=" * (-len(data) % 4)
    altchars = b"-_" if "-" in data or "_" in data else None
    try:
        raw = base64.b64decode(data, altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _printable(raw)


def _unhex(run: str) -> str | None:
    return _printable(bytes.fromhex(run))


def _printable(raw: bytes) -> str | None:
    """`raw` as text when it is mostly printable UTF-8, else None (random bytes, a binary)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < 8 or len(_CONTROL.findall(text)) > (1 - _PRINTABLE) * len(text):
        return None
    return text


def _split(lines: Sequence[str], numbers: Sequence[int]) -> Iterator[SecretHit]:
    """Credential formats that appear once consecutive added lines are joined with quotes, `+`,
    white space and backslashes removed, and that no single line shows whole."""
    for first, last in _runs(numbers, len(lines)):
        original = "\n".join(lines[first:last])
        joined: list[str] = []
        starts: list[tuple[int, int]] = []  # (offset in the joined text, offset in original)
        position = length = 0
        for glue in [*_GLUE.finditer(original), None]:
            end = len(original) if glue is None else glue.start()
            if end > position:
                starts.append((length, position))
                joined.append(original[position:end])
                length += end - position
            position = len(original) if glue is None else glue.end()
        text = "".join(joined)
        offsets = [joined_start for joined_start, _ in starts]
        for kind, start, end in _provider(text, _JOINED_PATTERNS):
            begin = _origin(starts, offsets, start)
            stop = _origin(starts, offsets, end - 1) + 1
            splitting = _PIECE_GLUE if kind == "AWS Access Key" else _SPLITTING
            if not splitting.search(original, begin, stop):
                continue  # whole on one line, or split by spaces only: the line scan's business
            fragments = tuple(
                original[o + max(0, start - j) : o + min(end - j, len(piece))]
                for (j, o), piece in zip(starts, joined, strict=True)
                if j < end and j + len(piece) > start
            )
            index = first + original.count("\n", 0, begin)
            yield SecretHit(f"{kind} (split across lines or pieces)", False, index, fragments)


def _runs(numbers: Sequence[int], count: int) -> Iterator[tuple[int, int]]:
    """[first, last) index ranges of lines with consecutive new-file line numbers."""
    if len(numbers) != count:
        yield 0, count
        return
    first = 0
    for index in range(1, count + 1):
        if index == count or numbers[index] != numbers[index - 1] + 1:
            yield first, index
            first = index


def _origin(starts: Sequence[tuple[int, int]], offsets: Sequence[int], offset: int) -> int:
    """The offset in the original text of the joined text's character at `offset`."""
    joined_start, original_start = starts[bisect_right(offsets, offset) - 1]
    return original_start + offset - joined_start
