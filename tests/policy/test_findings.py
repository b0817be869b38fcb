"""Finding helpers: paths shown in sentences and line counts in words."""

from __future__ import annotations

import pytest

from frognano.policy.gate.findings import Finding, count_lines, display


@pytest.mark.parametrize(
    ("path", "shown"),
    [("src/a.py", "src/a.py"), ("b\udcff.py", "b\ufffd.py"), ("é/ü.py", "é/ü.py")],
)
def test_a_path_is_shown_with_non_utf8_bytes_replaced(path: str, shown: str) -> None:
    assert display(path) == shown


@pytest.mark.parametrize(("count", "words"), [(0, "0 lines"), (1, "1 line"), (2, "2 lines")])
def test_line_counts_read_as_words(count: int, words: str) -> None:
    assert count_lines(count) == words


def test_a_finding_has_no_path_or_line_unless_given() -> None:
    finding = Finding("block", "empty", "The patch is empty.")
    assert (finding.path, finding.line) == (None, None)
