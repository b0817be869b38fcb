"""The secret scan's parts, exactly: decoding, printable text, placeholders, redaction, offsets."""

from __future__ import annotations

import base64

import pytest

from frognano.policy.gate import secrets
from frognano.policy.gate.secrets import SecretHit, redact, scan_file, scrub
from tests.policy.fakes import GITHUB_TOKEN

R = "[REDACTED]"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    ("kind", "base"),
    [
        ("GitHub Token (base64-encoded)", "GitHub Token"),
        ("GitHub Token (built from pieces) (x)", "GitHub Token"),
        ("Private Key", "Private Key"),
    ],
)
def test_the_base_kind_drops_every_parenthesised_detail(kind: str, base: str) -> None:
    assert secrets._base(kind) == base


@pytest.mark.parametrize(
    ("run", "text"),
    [
        (b64("foobarbaz"), "foobarbaz"),
        (b64("foobarbaz") + "==", "foobarbaz"),  # padding where none belongs
        (b64("password12"), "password12"),  # with its own `==`
        (b64("password12").rstrip("="), "password12"),
        (b64("password123").rstrip("="), "password123"),  # 15 characters: one `=` restored
        (b64("password123")[:-2] + "==", "password12"),  # padding is recomputed
        (b64("foobarbaz") + "Q", "foobarbaz"),  # a stray 13th character is dropped
        (b64("abcdefghW"), "abcdefghW"),  # ends in `X`
        ("Pj4-Pj4-Pj4-", ">>>>>>>>>"),  # URL-safe `-` only
        ("Pz8_Pz8_Pz8_", "?????????"),  # URL-safe `_` only
        ("Pz8_Pj4-Pz8_Pj4-", "???>>>???>>>"),
        ("Pz8/Pj4+Pz8/Pj4+", "???>>>???>>>"),
        (b64("foobar") + "!!!!" + b64("bazqux"), None),  # outside the alphabet
        (b64("abcdefg"), None),  # too short to be a secret's text
        (base64.b64encode(bytes(range(200))).decode(), None),  # not UTF-8
    ],
)
def test_a_base64_run_decodes_to_its_text(run: str, text: str | None) -> None:
    assert secrets._unbase64(run) == text


def test_a_hex_run_decodes_to_its_text() -> None:
    assert secrets._unhex(b"password".hex()) == "password"
    assert secrets._unhex(b"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8".hex()) is None


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"abcdefg", None),  # 7 characters
        (b"abcdefgh", "abcdefgh"),  # 8
        (b"abcdefghijklmnopqrs\x01", "abcdefghijklmnopqrs\x01"),  # 5% control characters
        (b"\x01" * 8, None),
        (b"abcdefg\x7f", None),
        ("abcdefgh\ufffd".encode(), None),  # U+FFFD counts as a control character
        (b"abcdefgh\xff", None),
    ],
)
def test_decoded_bytes_count_only_when_mostly_printable_utf8(raw: bytes, text: str | None) -> None:
    assert secrets._printable(raw) == text


@pytest.mark.parametrize(
    ("value", "line", "placeholder"),
    [
        ("changeme", "password = changeme", True),
        ("<changeme>", "password: <changeme>", True),
        ("{TODO}", "password: {TODO}", True),
        ("(None)", "password: (None)", True),
        ("Secret", "token = Secret", True),
        ("postgres", "POSTGRES_PASSWORD: postgres", True),
        ("ab", "tab_password: ab", True),  # two characters repeating the key
        ("a", "a_password: a", False),  # one is too few
        ("Xk9fQ2", "password: Xk9fQ2", False),
        (" changeme ", "password = ' changeme '", False),
    ],
)
def test_a_placeholder_is_stock_or_repeats_its_key(
    value: str, line: str, placeholder: bool
) -> None:
    assert secrets._placeholder(value, line) is placeholder


@pytest.mark.parametrize(
    ("value", "filtered"),
    [
        ("<password123>", True),  # templated
        ("!!!!!!!!", True),  # no letter or digit
        ("123e4567-e89b-12d3-a456-426614174000", True),  # a UUID
        ("abcdefgh", True),  # sequential
        ("Xk9fQ2mZ", False),
    ],
)
def test_values_that_are_never_secrets_are_filtered(value: str, filtered: bool) -> None:
    assert secrets._filtered(value) is filtered


def test_redaction_hides_the_longest_value_first() -> None:
    assert redact("abc b", ["b", "abc"]) == f"{R} {R}"
    assert redact("abc", ["", "x"]) == "abc"
    assert redact(f"t={GITHUB_TOKEN};") == f"t={R};"


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        ("x = 'abc' + \"d\" + `e`", f"x = '{R}' + \"{R}\" + `{R}`"),
        ("x = 'abc", "x = 'abc"),
        ("ABCDEFGHIJKL", R),
        ("abcdefghijkl", R),
        ("0123456789+/=_-", R),
        ("abcdefghijk", "abcdefghijk"),
        ("key: Xk9fQ2mZxx1A.", f"key: {R}."),
    ],
)
def test_scrub_hides_quoted_strings_and_long_tokens(text: str, scrubbed: str) -> None:
    assert scrub(text) == scrubbed


def test_an_offset_in_joined_text_maps_back_to_the_original() -> None:
    starts = [(0, 0), (5, 8)]
    offsets = [0, 5]
    assert secrets._origin(starts, offsets, 0) == 0
    assert secrets._origin(starts, offsets, 4) == 4
    assert secrets._origin(starts, offsets, 5) == 8
    assert secrets._origin(starts, offsets, 6) == 9


@pytest.mark.parametrize(
    ("numbers", "count", "runs"),
    [
        ([1, 2, 3], 3, [(0, 3)]),
        ([1, 2, 5, 6, 9], 5, [(0, 2), (2, 4), (4, 5)]),
        ([4], 1, [(0, 1)]),
        ([], 2, [(0, 2)]),
        ([1, 2], 3, [(0, 3)]),
    ],
)
def test_runs_of_consecutive_line_numbers(
    numbers: list[int], count: int, runs: list[tuple[int, int]]
) -> None:
    assert list(secrets._runs(numbers, count)) == runs


def test_long_text_is_scanned_in_overlapping_windows() -> None:
    text = "x" * 10_000
    assert [(start, len(window)) for start, window in secrets._windows(text)] == [
        (0, 4096),
        (3840, 4096),
        (7680, 2320),
    ]
    assert list(secrets._windows("")) == [(0, "")]
    assert list(secrets._windows("abc")) == [(0, "abc")]


def test_a_token_split_across_lines_is_found_with_its_fragments() -> None:
    head, tail = GITHUB_TOKEN[:18], GITHUB_TOKEN[18:]
    lines = ["x = 1", f't = "{head}" +', f'  "{tail}"']
    assert scan_file("a.js", lines) == [
        SecretHit("GitHub Token (split across lines or pieces)", False, 1, (head, tail))
    ]
    assert scan_file("a.js", lines, [1, 2, 4]) == []  # not consecutive: never joined


def test_an_encoded_token_is_named_once_per_line() -> None:
    encoded = b64(GITHUB_TOKEN)
    assert scan_file("a.py", ["", f'T = "{encoded}"']) == [
        SecretHit("GitHub Token (base64-encoded)", False, 1, (encoded,))
    ]
