"""`frognano policy validate|schema|explain`, run as real processes the way admins run them.

Each run costs a second of imports, so the fixture starts them all at once and each test
checks one of the results.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "-m", "frognano", "policy"]

Done = subprocess.CompletedProcess[str]

BAD_FILE = "version: 1\ndefaults:\n  agent: {max_steps: 0}\nrepos:\n  - match: acme\n"
BAD_LINES = [
    "policies/60-bad.yaml:3: defaults.agent.max_steps: "
    "input should be greater than or equal to 1 (got 0)",
    "policies/60-bad.yaml:5: repos[0].match: must be OWNER/NAME with exactly one `/` "
    "(found 0); `*` never crosses `/`, so use */* for every repository (got 'acme')",
]


def frognano_policy(*args: str, cwd: Path, env: dict[str, str]) -> Done:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("FROGNANO_")}
    return subprocess.run(
        [*COMMAND, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**clean, "COLUMNS": "200", "NO_COLOR": "1", **env},
        timeout=60,
        check=False,
    )


def make_policies(parent: Path, *, bad: bool = False) -> Path:
    directory = parent / "policies"
    directory.mkdir()
    shutil.copy(ROOT / "policies" / "00-default.yaml", directory)
    (directory / "50-acme.yaml").write_text(
        "version: 1\n"
        "repos:\n"
        "  - match: acme/legacy-*\n"
        "    enabled: false\n"
        "  - match: acme/api\n"
        "    verify:\n"
        "      command: make test\n"
    )
    if bad:
        (directory / "60-bad.yaml").write_text(BAD_FILE)
    return parent


DROPPING = """\
version: 1
defaults:
  gate:
    forbidden_paths_extra: ["deploy/**"]
repos:
  - match: acme/platform-with-a-long-name
    gate:
      forbidden_paths: [".github/**", "infra/**"]
    agent: {max_steps: 250}
"""


def make_dropping(parent: Path) -> Path:
    directory = parent / "policies"
    directory.mkdir()
    shutil.copy(ROOT / "policies" / "00-default.yaml", directory / "00-default.yaml")
    (directory / "50-a-team-with-a-long-file-name.yaml").write_text(DROPPING)
    return parent


def make_trap(parent: Path) -> Path:
    """The trap: the shipped defaults under the name `default.yaml`, which sorts after an
    admin's `50-strict.yaml` and so would take back what it changes."""
    directory = parent / "policies"
    directory.mkdir()
    shutil.copy(ROOT / "policies" / "00-default.yaml", directory / "default.yaml")
    (directory / "50-strict.yaml").write_text("version: 1\ndefaults:\n  agent: {max_steps: 40}\n")
    return parent


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Done]:
    good = make_policies(tmp_path_factory.mktemp("good"))
    bad = make_policies(tmp_path_factory.mktemp("bad"), bad=True)
    empty = tmp_path_factory.mktemp("empty")
    configured = {"FROGNANO_POLICY_DIR": "policies"}
    dropping = make_dropping(tmp_path_factory.mktemp("dropping"))
    trap = make_trap(tmp_path_factory.mktemp("trap"))
    narrow = {**configured, "COLUMNS": "60"}
    platform = "acme/platform-with-a-long-name"
    invocations: dict[str, tuple[list[str], Path, dict[str, str]]] = {
        "validate": (["validate"], good, {"FROGNANO_POLICY_DIR": str(good / "policies")}),
        "validate_bad": (["validate", "policies"], bad, {}),
        "validate_option": (["validate", "--policy-dir", "policies"], bad, {}),
        "validate_missing": (["validate"], empty, {}),  # FROGNANO_POLICY_DIR's default
        "schema": (["schema"], empty, {}),
        "explain": (["explain", "ACME/api", "--policy-dir", "policies"], good, {}),
        "explain_disabled": (["explain", "acme/legacy-crm"], good, configured),
        "explain_malformed": (["explain", "acme"], good, configured),
        "explain_invalid": (["explain", "acme/api"], bad, configured),
        "validate_dropping": (["validate", "policies"], dropping, {}),
        "explain_dropping": (["explain", platform], dropping, configured),
        "explain_extra": (["explain", "acme/web"], dropping, configured),
        "explain_changed": (["explain", platform, "--changed"], dropping, narrow),
        "explain_unchanged": (["explain", "acme/web", "--changed"], good, narrow),
        "validate_trap": (["validate", "policies"], trap, {}),
        "explain_trap": (["explain", "acme/api"], trap, configured),
    }
    with ThreadPoolExecutor(len(invocations)) as pool:
        futures = {
            name: pool.submit(frognano_policy, *args, cwd=cwd, env=env)
            for name, (args, cwd, env) in invocations.items()
        }
        return {name: future.result() for name, future in futures.items()}


def test_validate_the_configured_directory(runs: dict[str, Done]) -> None:
    done = runs["validate"]
    assert done.returncode == 0, done.stderr
    assert done.stdout == "2 files valid\n"


def test_validate_prints_every_error_line_and_exits_1(runs: dict[str, Done]) -> None:
    done = runs["validate_bad"]
    assert done.returncode == 1
    assert done.stdout.splitlines() == BAD_LINES
    assert "2 problems in the policy files of policies" in done.stderr


def test_validate_takes_policy_dir_like_explain(runs: dict[str, Done]) -> None:
    option, argument = runs["validate_option"], runs["validate_bad"]
    assert (option.returncode, option.stdout, option.stderr) == (
        argument.returncode, argument.stdout, argument.stderr,
    )  # fmt: skip


def test_validate_a_missing_directory_exits_2(runs: dict[str, Done]) -> None:
    done = runs["validate_missing"]
    assert done.returncode == 2
    assert "the policy directory policies does not exist" in done.stderr
    assert "FROGNANO_POLICY_DIR" in done.stderr
    assert done.stdout == ""


def test_schema_is_the_committed_file(runs: dict[str, Done]) -> None:
    done = runs["schema"]
    assert done.returncode == 0, done.stderr
    assert done.stdout == (ROOT / "policies" / "schema.json").read_text(encoding="utf-8")


def test_explain_shows_values_and_sources(runs: dict[str, Done]) -> None:
    done = runs["explain"]
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "ACME/api: enabled"

    def row(key: str) -> str:
        found = [line for line in lines if f" {key} " in line]
        assert len(found) == 1, (key, done.stdout)
        return found[0]

    assert "make test" in row("verify.command")
    assert "policies/50-acme.yaml:7 (repos[1] match 'acme/api')" in row("verify.command")
    assert "150" in row("agent.max_steps")
    default = (ROOT / "policies" / "00-default.yaml").read_text(encoding="utf-8").splitlines()
    (line,) = [n for n, text in enumerate(default, 1) if text.strip().startswith("max_steps:")]
    assert f"policies/00-default.yaml:{line} (defaults)" in row("agent.max_steps")
    assert '["frognano", "needs-human-review"]' in row("publish.labels")
    assert "built-in default" in row("enabled")


def test_explain_says_when_a_repo_is_disabled(runs: dict[str, Done]) -> None:
    done = runs["explain_disabled"]
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith(
        "acme/legacy-crm: DISABLED by policies/50-acme.yaml:4 (repos[0] match 'acme/legacy-*')"
    )
    assert "FrogNano ignores its issues" in first


def test_explain_rejects_a_malformed_name(runs: dict[str, Done]) -> None:
    done = runs["explain_malformed"]
    assert done.returncode == 2
    assert "OWNER/NAME" in done.stderr


def test_explain_with_invalid_files_prints_the_errors(runs: dict[str, Done]) -> None:
    done = runs["explain_invalid"]
    assert done.returncode == 1
    assert done.stdout.splitlines() == BAD_LINES


DROP_WARNING = (
    "policies/50-a-team-with-a-long-file-name.yaml:8: warning: "
    "repos[0].gate.forbidden_paths: replaces the list and drops 84 of the 85 entries it had "
    "(83 built-in defaults; 1 set at policies/50-a-team-with-a-long-file-name.yaml:4 "
    "(defaults)): '.gitlab-ci.yml', '.gitlab/**', '.circleci/**', "
    "'.travis.yml' and 80 more; to keep them, list only the new entries under "
    "`forbidden_paths_extra`"
)


def test_validate_warns_about_a_list_that_drops_entries_and_exits_0(
    runs: dict[str, Done],
) -> None:
    done = runs["validate_dropping"]
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [DROP_WARNING, "2 files valid"]
    assert "warning: 1 list of the policy files drops entries" in done.stderr


def test_explain_warns_and_shows_additions_with_their_line(runs: dict[str, Done]) -> None:
    done = runs["explain_dropping"]
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == DROP_WARNING
    assert "warning: 1 list" in done.stderr
    good = runs["explain"]
    (row,) = [line for line in good.stdout.splitlines() if " gate.forbidden_paths " in line]
    assert "policies/00-default.yaml" in row


def test_explain_changed_shows_only_changes_and_never_breaks_file_line(
    runs: dict[str, Done],
) -> None:
    done = runs["explain_changed"]
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "acme/platform-with-a-long-name: enabled"
    assert lines[1] == DROP_WARNING  # one line per warning, as compilers print them
    body = lines[2:]
    assert all(len(line) <= 60 for line in body if "yaml:" not in line), body
    text = "\n".join(body)
    name = "policies/50-a-team-with-a-long-file-name.yaml"
    for line_number in (8, 9):
        assert f"{name}:{line_number}" in text, text
    assert "agent.max_steps: 250 (built-in: 150)" in text
    assert '"infra/**"' in text
    assert '".gitlab-ci.yml"' in text
    assert "verify." not in text
    assert "trigger." not in text
    # Added in the defaults, then dropped by the rule: no change from the built-in list.
    assert '"deploy/**"' not in text


def test_explain_changed_says_when_nothing_changes(runs: dict[str, Done]) -> None:
    done = runs["explain_unchanged"]
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "Nothing: every key has its built-in default."


def test_explain_shows_each_addition_with_its_line(runs: dict[str, Done]) -> None:
    done = runs["explain_extra"]
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "acme/web: enabled"
    assert "warning" not in done.stdout + done.stderr
    (extra,) = [line for line in lines if " gate.forbidden_paths_extra " in line]
    assert '["deploy/**"]' in extra
    assert "policies/50-a-team-with-a-long-file-name.yaml:4 (defaults)" in extra
    (row,) = [line for line in lines if " gate.forbidden_paths " in line]
    assert "policies/00-default.yaml" in row
    assert "deploy" not in row


TRAP_WARNING = (
    "policies/default.yaml:1: warning: (file): the name does not start with two digits and a "
    "dash (NN-name.yaml), so its place in the order is easy to misjudge: files apply in name "
    "order and later ones win; it applies after 50-strict.yaml, so any key it sets overrides "
    "theirs; rename it 00-default.yaml, so that it applies first"
)


def test_validate_warns_about_a_default_yaml_that_sorts_after_an_admin_file(
    runs: dict[str, Done],
) -> None:
    done = runs["validate_trap"]
    assert done.returncode == 0, done.stderr  # a warning, the files stay valid
    assert done.stdout.splitlines() == [TRAP_WARNING, "2 files valid"]
    assert "warning: 1 policy file does not follow the NN-name.yaml naming" in done.stderr
    # What the warning is about: default.yaml really undoes 50-strict.yaml's max_steps.
    explained = runs["explain_trap"]
    assert explained.returncode == 0, explained.stderr
    assert TRAP_WARNING in explained.stdout.splitlines()
    (row,) = [line for line in explained.stdout.splitlines() if " agent.max_steps " in line]
    assert "150" in row
    assert "policies/default.yaml" in row


def test_the_shipped_names_get_no_naming_warning(runs: dict[str, Done]) -> None:
    for name in ("validate", "validate_dropping", "explain", "explain_extra"):
        assert "NN-name" not in runs[name].stdout + runs[name].stderr, name
