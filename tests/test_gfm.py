"""The tests' GitHub renderer (tests/gfm.py) finds what is live: every raw attack is caught."""

from __future__ import annotations

import pytest

from tests.gfm import ATTACKS, live

# Attacks that render nothing live even as written: they attack the renderers (a backtick
# that closes someone else's code span, a fence that swallows what follows), not GitHub.
INERT_AS_WRITTEN = {
    "www, in a word", "backtick", "backtick runs", "backtick span", "tilde fence",
    "backtick fence", "trailing backslash", "indented",
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(set(ATTACKS) - INERT_AS_WRITTEN))
def test_each_attack_as_written_is_live(name: str) -> None:
    assert live(ATTACKS[name]) != []


def test_frognanos_own_references_links_and_markers_are_allowed_and_required() -> None:
    text = (
        "<!-- frognano:status issue=7 -->\n"
        "Opened https://github.com/o/r/pull/3 for @alice.\n\nRefs #7"
    )
    assert live(text) == [
        "link to 'https://github.com/o/r/pull/3'",
        "1 raw HTML piece(s), 0 expected",
        "mention '@a'",
        "issue reference '#7'",
    ]
    allowed = live(
        text, own=["Refs #7"], hrefs=["https://github.com/o/r/pull/3"], html=1, logins=["alice"]
    )
    assert allowed == []
    assert live("Refs #8", own=["Refs #7"]) == [
        "FrogNano's own 'Refs #7' is missing",
        "issue reference '#8'",
    ]
    # Code is where GitHub links nothing; the zero-width joiner FrogNano inserts defuses.
    assert live("`@admin fixes #1` and @\u200dadmin #\u200d2") == []
