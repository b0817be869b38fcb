"""The NN-name.yaml convention: which policy file names are warned about, and what it says."""

from __future__ import annotations

from pathlib import Path

import pytest

from frognano.policy.order import name_warnings


@pytest.mark.parametrize("name", ["00-default.yaml", "50-acme.yaml", "99-last.yaml", "10-x.yaml"])
def test_names_with_two_digits_and_a_dash_are_quiet(name: str) -> None:
    assert name_warnings([Path(name)]) == []


@pytest.mark.parametrize(
    "name", ["default.yaml", "acme.yaml", "5-acme.yaml", "050-acme.yaml", "50_acme.yaml", "50-"]
)
def test_other_names_warn_at_line_1(name: str) -> None:
    (warning,) = name_warnings([Path(name)])
    assert (warning.file, warning.line, warning.path, warning.warning) == (
        Path(name), 1, "(file)", True,
    )  # fmt: skip
    assert "applies first today" in warning.message


def test_the_warning_names_what_the_file_overrides_and_how_to_rename_it() -> None:
    files = [Path(f"{n}0-f.yaml") for n in range(1, 6)] + [Path("team.yaml")]
    (warning,) = name_warnings(files)
    assert warning.file == Path("team.yaml")
    assert "it applies after 10-f.yaml, 20-f.yaml, 30-f.yaml and 2 more" in warning.message
    assert "rename it NN-team.yaml" in warning.message
    (default,) = name_warnings([Path("50-strict.yaml"), Path("default.yaml")])
    assert "it applies after 50-strict.yaml" in default.message
    assert "rename it 00-default.yaml" in default.message
