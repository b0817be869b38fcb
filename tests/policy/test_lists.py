"""Protective lists: `KEY_extra` adds to them; a list that replaces one and drops entries warns."""

from __future__ import annotations

import logging
import shutil
import textwrap
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from frognano.policy.fileformat import SECURITY_LISTS
from frognano.policy.loader import PolicyError, load_policies
from frognano.policy.models import DEFAULT_FORBIDDEN_PATHS, DEFAULT_PROTECTED_PATHS
from frognano.policy.store import PolicyStore

ROOT = Path(__file__).resolve().parents[2]


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def test_every_security_list_has_an_adding_key_in_defaults_and_rules(tmp_path: Path) -> None:
    assert {
        ("agent", "protected_files"),
        ("verify", "protected_paths"),
        ("gate", "forbidden_paths"),
    } == SECURITY_LISTS
    org = write(
        tmp_path,
        "10-org.yaml",
        """
        version: 1
        defaults:
          agent: {protected_files_extra: [HACKING.md]}
          verify: {protected_paths_extra: ["fixtures/**"]}
          gate:
            forbidden_paths_extra:
              - "deploy/**"
              - ".github/**"
        repos:
          - match: acme/api
            gate:
              forbidden_paths_extra: ["infra/**"]
        """,
    )
    policies = load_policies(tmp_path)
    api = policies.for_repo("acme/api")
    assert api.gate.forbidden_paths == [*DEFAULT_FORBIDDEN_PATHS, "deploy/**", "infra/**"]
    assert api.verify.protected_paths == [*DEFAULT_PROTECTED_PATHS, "fixtures/**"]
    assert api.agent.protected_files == ["HACKING.md"]
    assert policies.for_repo("acme/web").gate.forbidden_paths == [
        *DEFAULT_FORBIDDEN_PATHS,
        "deploy/**",
    ]
    assert policies.warnings() == []
    origin = {o.path: o for o in policies.explain("acme/api")}["gate.forbidden_paths"]
    assert origin.source == "built-in default"
    assert [(a.entries, a.source) for a in origin.additions] == [
        (("deploy/**",), f"{org}:6 (defaults)"),
        (("infra/**",), f"{org}:12 (repos[0] match 'acme/api')"),
    ]


def test_an_addition_after_a_replacement_adds_to_the_replacement(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          verify:
            protected_paths: ["tests/**"]
            protected_paths_extra: ["spec/**"]
        """,
    )
    policies = load_policies(tmp_path)
    assert policies.for_repo("a/b").verify.protected_paths == ["tests/**", "spec/**"]
    (warning,) = policies.warnings()
    assert "drops 6 of the 7 entries it had (6 built-in defaults)" in warning.message


def test_a_replacement_whose_extra_adds_back_what_it_left_out_does_not_warn(
    tmp_path: Path,
) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          agent: {protected_files: [A.md]}
        repos:
          - match: a/b
            agent:
              protected_files: [B.md]
              protected_files_extra: [A.md]
        """,
    )
    policies = load_policies(tmp_path)
    assert policies.for_repo("a/b").agent.protected_files == ["B.md", "A.md"]
    assert policies.warnings() == []


def test_an_adding_key_checks_its_globs_item_by_item(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          gate:
            forbidden_paths_extra:
              - "ok/**"
              - "/etc/**"
        """,
    )
    with pytest.raises(PolicyError) as caught:
        load_policies(tmp_path)
    ((issue),) = caught.value.issues
    assert (issue.line, issue.path) == (6, "defaults.gate.forbidden_paths_extra[1]")
    assert "absolute" in issue.message


def test_a_replacing_list_that_drops_entries_warns_with_its_line(tmp_path: Path) -> None:
    shutil.copy(ROOT / "policies" / "00-default.yaml", tmp_path / "00-default.yaml")
    team = write(
        tmp_path,
        "50-team.yaml",
        """
        version: 1
        repos:
          - match: acme/platform
            verify:
              protected_paths: ["**/tests/**"]
            gate:
              forbidden_paths:
                - ".github/**"
                - "deploy/**"
        """,
    )
    policies = load_policies(tmp_path)  # valid: a warning is no error
    warnings = [str(warning) for warning in policies.warnings()]
    dropped = len(DEFAULT_FORBIDDEN_PATHS) - 1
    assert warnings == [
        f"{team}:5: warning: repos[0].verify.protected_paths: replaces the list and drops 7 of "
        "the 7 entries it had (7 built-in defaults): 'tests/**', 'test/**', "
        "'testing/**', 'test_*.py' and 3 more; to keep them, list only the new entries under "
        "`protected_paths_extra`",
        f"{team}:7: warning: repos[0].gate.forbidden_paths: replaces the list and drops "
        f"{dropped} of the {len(DEFAULT_FORBIDDEN_PATHS)} entries it had ({dropped} built-in "
        "defaults): '.gitlab-ci.yml', '.gitlab/**', '.circleci/**', '.travis.yml' "
        f"and {dropped - 4} more; to keep them, list only the new entries under "
        "`forbidden_paths_extra`",
    ]
    assert [str(w) for w in policies.warnings("acme/platform")] == warnings
    assert policies.warnings("acme/other") == []


def test_a_rule_that_replaces_what_an_earlier_file_added_warns(tmp_path: Path) -> None:
    org = write(
        tmp_path, "10-org.yaml", "version: 1\ndefaults:\n  agent:\n    protected_files: [A.md]\n"
    )
    team = write(
        tmp_path,
        "20-team.yaml",
        "version: 1\nrepos:\n  - match: a/b\n    agent:\n      protected_files: [B.md]\n",
    )
    (warning,) = load_policies(tmp_path).warnings()
    assert (warning.file, warning.line, warning.path) == (team, 5, "repos[0].agent.protected_files")
    assert f"drops 1 of the 1 entries it had (1 set at {org}:4 (defaults)): 'A.md'" in str(warning)


def test_lists_that_keep_every_entry_do_not_warn(tmp_path: Path) -> None:
    shutil.copy(ROOT / "policies" / "00-default.yaml", tmp_path / "default.yaml")
    write(
        tmp_path,
        "z.yaml",
        'version: 1\ndefaults:\n  gate:\n    allowed_paths: []\n    forbidden_paths: ["**"]\n'
        '  verify:\n    protected_paths: ["conftest.py", "tests/**", "test/**", "testing/**",'
        ' "test_*.py", "*_test.py", "tests.py", "more/**"]\n',
    )
    assert load_policies(tmp_path).warnings()[0].path == "defaults.gate.forbidden_paths"
    assert len(load_policies(tmp_path).warnings()) == 1  # allowed_paths is no security list


@pytest.mark.parametrize("example", ["monorepo-rules.yaml", "strict-fintech.yaml"])
def test_the_shipped_examples_add_and_drop_nothing(tmp_path: Path, example: str) -> None:
    shutil.copy(ROOT / "policies" / "00-default.yaml", tmp_path / "00-default.yaml")
    shutil.copy(ROOT / "policies" / "examples" / example, tmp_path / "50-example.yaml")
    policies = load_policies(tmp_path)
    assert policies.warnings() == []
    text = (ROOT / "policies" / "examples" / example).read_text(encoding="utf-8")
    assert "_extra:" in text


def test_the_store_logs_the_warnings_once_per_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path, "a.yaml", "version: 1\ndefaults:\n  gate: {forbidden_paths: []}\n")
    with caplog.at_level(logging.WARNING, logger="frognano.policy.store"):
        store = PolicyStore(tmp_path, registry=CollectorRegistry())
        assert caplog.text.count("policy.drops_entries") == 1
        assert f"{tmp_path / 'a.yaml'}:3: warning: defaults.gate.forbidden_paths" in caplog.text
        write(tmp_path, "a.yaml", "version: 1\ndefaults:\n  gate: {forbidden_paths: [x]}\n")
        assert store.reload() is True
        assert caplog.text.count("policy.drops_entries") == 2
        write(tmp_path, "a.yaml", "version: 1\ndefaults:\n  gate: {max_files_changed: 3}\n")
        assert store.reload() is True
        assert caplog.text.count("policy.drops_entries") == 2
