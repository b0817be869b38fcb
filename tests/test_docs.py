"""The README and docs stay true to the code: settings, commands, the CI test command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from frognano.settings import SECRET_FIELDS, Settings, _file_variables

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def test_every_setting_is_documented_with_its_default() -> None:
    for name, field in Settings.model_fields.items():
        variable = f"FROGNANO_{name.upper()}"
        row = next(
            (line for line in CONFIGURATION.splitlines() if line.startswith(f"| `{variable}` |")),
            None,
        )
        assert row is not None, f"{variable} missing from docs/configuration.md"
        default = "none" if field.default is None else f"`{field.default}`"
        assert f"| {default} |" in row, f"{variable}: documented default differs from {default}"
    for secret in SECRET_FIELDS:
        for variable in _file_variables(secret):
            assert f"`{variable}`" in CONFIGURATION


def _commands(*group: str) -> list[str]:
    help_text = subprocess.run(
        [sys.executable, "-m", "frognano", *group, "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin"},
    ).stdout
    commands = re.findall(r"│ (\S+)\s{2,}", help_text.split("Commands")[1])
    assert commands, help_text
    return commands


def test_every_cli_command_is_in_the_readme() -> None:
    groups = ("sandbox", "trajectory", "model")
    assert set(groups) <= set(_commands())
    for command in _commands():
        if command not in groups:
            assert f"frognano {command} " in README, command
    for group in groups:
        for command in _commands(group):
            assert f"frognano {group} {command}" in README, (group, command)


def test_readme_has_the_ci_test_command() -> None:
    block = README.split("<!-- ci:test-command -->", 1)[1].split("```")[1]
    assert block.strip().splitlines()[1:] == ["python -m pytest -n 2 --dist loadgroup"]


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
            ROOT / "charts" / "frognano" / "README.md"]  # fmt: skip


def test_docs_link_only_inside_the_repository() -> None:
    for path in _markdown_files():
        text = path.read_text(encoding="utf-8")
        assert "../shared" not in text, f"{path.name} cites a file a clone does not have"
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target or target.startswith("mailto:"):
                continue
            resolved = (path.parent / target).resolve()
            assert resolved.is_relative_to(ROOT), f"{path.name} links outside: {target}"
            assert resolved.exists(), f"{path.name} links to a missing {target}"


def test_the_readme_does_not_call_what_exists_future_work() -> None:
    from frognano.sandbox.registry import BACKENDS

    assert "exists so far" not in README
    assert not re.search(r"Kubernetes[^.]*\bfollow\b", README)
    for backend in set(BACKENDS) - {"local"}:
        assert f"`--sandbox {backend}`" in README, backend


def test_the_docs_agree_on_what_outlives_a_killed_worker() -> None:
    """docs/sandbox.md: a Kubernetes sandbox pod outlives its worker until the sweep deletes
    it; no other page may say a killed worker's sandbox simply dies with it."""
    sandbox = (ROOT / "docs" / "sandbox.md").read_text(encoding="utf-8")
    assert "cannot delete its pod" in sandbox
    for path in _markdown_files():
        text = " ".join(path.read_text(encoding="utf-8").split())
        assert "killed worker's sandbox dies with it" not in text, path.name


def test_the_who_may_do_what_table_names_tests_that_exist() -> None:
    """docs/github-app.md's table cites tests as `tests/FILE.py::name` or `::name` (in the
    file cited before it on the row); each must be a test function of that file."""
    text = (ROOT / "docs" / "github-app.md").read_text(encoding="utf-8")
    table = text[text.index("## Who may do what") :]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "tests/" in line]
    assert len(rows) >= 6
    cited = 0
    for row in rows:
        current: Path | None = None
        for path, name in re.findall(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`", row):
            if path:
                current = ROOT / path
                assert current.is_file(), path
            if name:
                assert current is not None, row
                source = current.read_text(encoding="utf-8")
                assert re.search(rf"^(?:async )?def {name}\(", source, re.MULTILINE), name
                cited += 1
    assert cited >= 12
