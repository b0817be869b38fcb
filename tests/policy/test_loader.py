"""Policy files: every error with its file and line, the merge order, globs and explain."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from pydantic import model_validator

from frognano.errors import ConfigError
from frognano.policy import merge
from frognano.policy.fileformat import SECTIONS
from frognano.policy.loader import PolicyError, PolicyIssue, PolicySet, load_policies
from frognano.policy.merge import LEAVES, check_repo_name, repo_matches
from frognano.policy.models import AgentPolicy, EffectivePolicy

ROOT = Path(__file__).resolve().parents[2]


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def issues_of(directory: Path) -> list[PolicyIssue]:
    with pytest.raises(PolicyError) as caught:
        load_policies(directory)
    return caught.value.issues


def where(issues: list[PolicyIssue]) -> list[tuple[str, int | None, str]]:
    return [(issue.file.name, issue.line, issue.path) for issue in issues]


def the_issue(directory: Path) -> PolicyIssue:
    issues = issues_of(directory)
    assert len(issues) == 1, issues
    return issues[0]


# Errors, each with its exact file and line


def test_yaml_syntax_error_has_the_parsers_line(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          verify:
            command: "make test
          gate: {}
        """,
    )
    issue = the_issue(tmp_path)
    assert (issue.file, issue.path) == (tmp_path / "a.yaml", "(yaml)")
    assert issue.line == 6  # where the parser found the string unterminated: end of file
    assert "quoted scalar" in issue.message


def test_tab_indentation_is_a_syntax_error_on_its_line(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "version: 1\ndefaults:\n\tagent: {}\n")
    issue = the_issue(tmp_path)
    assert (issue.line, issue.path) == (3, "(yaml)")


def test_unknown_keys_are_rejected_everywhere_with_a_suggestion(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        colour: blue
        defaults:
          agent:
            max_step: 3
          verfy: {}
        repos:
          - match: acme/api
            publish: {labels: [x], link_to: refs}
        """,
    )
    issues = issues_of(tmp_path)
    assert where(issues) == [
        ("a.yaml", 2, "colour"),
        ("a.yaml", 5, "defaults.agent.max_step"),
        ("a.yaml", 6, "defaults.verfy"),
        ("a.yaml", 9, "repos[0].publish.link_to"),
    ]
    assert issues[0].message.startswith("unknown key")
    assert "did you mean `max_steps`?" in issues[1].message
    assert "did you mean `verify`?" in issues[2].message
    assert "did you mean `link`?" in issues[3].message


def test_a_section_at_the_top_level_says_where_it_belongs(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "version: 1\nverify:\n  command: make\n")
    issue = the_issue(tmp_path)
    assert (issue.line, issue.path) == (2, "verify")
    assert "under `defaults:` or under a rule in `repos:`" in issue.message


def test_enabled_in_defaults_points_to_rules(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "version: 1\ndefaults:\n  enabled: false\n")
    issue = the_issue(tmp_path)
    assert (issue.line, issue.path) == (3, "defaults.enabled")
    assert "match: '*/*'" in issue.message


def test_wrong_types(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          agent:
            max_steps: many
            enable_thinking: maybe
          gate:
            forbidden_paths: "**/*.pem"
          publish: [refs]
        repos: {match: acme/api}
        """,
    )
    issues = issues_of(tmp_path)
    assert where(issues) == [
        ("a.yaml", 4, "defaults.agent.max_steps"),
        ("a.yaml", 5, "defaults.agent.enable_thinking"),
        ("a.yaml", 7, "defaults.gate.forbidden_paths"),
        ("a.yaml", 8, "defaults.publish"),
        ("a.yaml", 9, "repos"),
    ]
    assert "(got 'many')" in issues[0].message
    assert issues[2].message.startswith("must be a list")
    assert issues[3].message.startswith("must be a mapping")


def test_impossible_values(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          agent: {temperature: 0.5}
        repos:
          - match: acme/api
            agent:
              max_steps: 0
              temperature: 9
            trigger: {min_permission: owner}
            sandbox: {memory: lots}
        """,
    )
    issues = issues_of(tmp_path)
    assert where(issues) == [
        ("a.yaml", 7, "repos[0].agent.max_steps"),
        ("a.yaml", 8, "repos[0].agent.temperature"),
        ("a.yaml", 9, "repos[0].trigger.min_permission"),
        ("a.yaml", 10, "repos[0].sandbox.memory"),
    ]
    assert issues[0].message == "input should be greater than or equal to 1 (got 0)"
    assert issues[1].message == "input should be less than or equal to 2 (got 9)"


@pytest.mark.parametrize("command", ["frognano", "/", "/two words", "/" + "x" * 50, ""])
def test_a_command_must_be_a_slash_and_a_word(tmp_path: Path, command: str) -> None:
    write(tmp_path, "a.yaml", f"version: 1\ndefaults:\n  trigger:\n    command: '{command}'\n")
    issue = the_issue(tmp_path)
    assert (issue.line, issue.path) == (4, "defaults.trigger.command")
    assert "should match pattern" in issue.message


def test_base_branches_are_branch_globs(tmp_path: Path) -> None:
    text = "version: 1\ndefaults:\n  publish:\n    base_branches:\n      - release/*\n"
    write(tmp_path, "a.yaml", text + "      - 'a b'\n      - x..y\n      - ''\n")
    issues = issues_of(tmp_path)
    assert where(issues) == [
        ("a.yaml", 6, "defaults.publish.base_branches[1]"),
        ("a.yaml", 7, "defaults.publish.base_branches[2]"),
        ("a.yaml", 8, "defaults.publish.base_branches[3]"),
    ]
    assert "cannot match a branch name" in issues[0].message
    assert "branch pattern is empty" in issues[2].message
    write(tmp_path, "a.yaml", text)
    assert load_policies(tmp_path).for_repo("a/b").publish.base_branches == ["release/*"]
    write(tmp_path, "a.yaml", "version: 1\n")
    assert load_policies(tmp_path).for_repo("a/b").publish.base_branches == []


def test_the_command_defaults_to_frognano_and_can_change_per_repo(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        "version: 1\nrepos:\n  - match: acme/api\n    trigger: {command: /bot}\n",
    )
    policies = load_policies(tmp_path)
    assert policies.for_repo("acme/web").trigger.command == "/frognano"
    assert policies.for_repo("acme/api").trigger.command == "/bot"


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("defaults: {}\n", 1, "starts with `version: 1`"),
        ("# a comment\n\nversion: 2\n", 3, "must be 1, the only format version (got 2)"),
        ("version: '1'\n", 1, "(got '1')"),
    ],
)
def test_version_missing_or_wrong(tmp_path: Path, text: str, line: int, needle: str) -> None:
    write(tmp_path, "a.yaml", text)
    issue = the_issue(tmp_path)
    assert (issue.line, issue.path) == (line, "version")
    assert needle in issue.message


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("- version: 1\n", 1, "holds a list"),
        ("~\n", 1, "holds nothing"),
        ("# one\n# two\njust text\n", 3, "holds text"),
        ("", 1, "the file is empty"),
        ("# only a comment\n", 1, "the file is empty"),
    ],
)
def test_a_file_that_is_not_a_mapping(tmp_path: Path, text: str, line: int, needle: str) -> None:
    write(tmp_path, "a.yaml", text)
    issue = the_issue(tmp_path)
    assert (issue.line, issue.path) == (line, "(file)")
    assert needle in issue.message


def test_duplicate_keys_are_detected_at_every_level(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          verify:
            command: make test
            timeout_seconds: 60
            command: make check
        repos:
          - {match: acme/a, enabled: false, enabled: true}
        version: 1
        """,
    )
    issues = issues_of(tmp_path)
    assert where(issues) == [
        ("a.yaml", 6, "defaults.verify.command"),
        ("a.yaml", 8, "repos[0].enabled"),
        ("a.yaml", 9, "version"),
    ]
    assert "also set on line 4" in issues[0].message
    assert "also set on line 1" in issues[2].message


def test_bad_globs(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          verify:
            protected_paths:
              - tests/**
              - /etc/**
          gate:
            forbidden_paths: ["ok/**", "src/[ab"]
        repos:
          - match: acme
          - match: acme/api/v2
          - match: "acme/{api"
          - match: "acme/my repo"
          - match: ""
          - match: acme/[ab]pi
        """,
    )
    issues = issues_of(tmp_path)
    assert where(issues) == [
        ("a.yaml", 6, "defaults.verify.protected_paths[1]"),
        ("a.yaml", 8, "defaults.gate.forbidden_paths[1]"),
        ("a.yaml", 10, "repos[0].match"),
        ("a.yaml", 11, "repos[1].match"),
        ("a.yaml", 12, "repos[2].match"),
        ("a.yaml", 13, "repos[3].match"),
        ("a.yaml", 14, "repos[4].match"),
    ]
    messages = [issue.message for issue in issues]
    assert "absolute" in messages[0]
    assert "unbalanced '['" in messages[1]
    assert "exactly one `/` (found 0)" in messages[2]
    assert "exactly one `/` (found 2)" in messages[3]
    assert "unbalanced `{`" in messages[4]
    assert "whitespace" in messages[5]
    assert "empty" in messages[6]


def test_instructions_files_that_could_leave_the_tree_are_refused_at_load(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          agent:
            instructions_files:
              - AGENTS.md
              - ../secrets.md
              - /etc/passwd
              - docs/./AI.md
              - "docs\\\\AI.md"
              - docs/
              - " AGENTS.md"
              - ""
        repos:
          - match: acme/api
            agent: {instructions_files: [AGENTS.md, AGENTS.md]}
          - match: acme/web
            agent: {instructions_files: "AGENTS.md"}
          - match: acme/cli
            agent:
              instructions_files: [a, b, c, d, e, f, g, h, i, j, k]
        """,
    )
    issues = issues_of(tmp_path)
    assert where(issues) == [
        ("a.yaml", 6, "defaults.agent.instructions_files[1]"),
        ("a.yaml", 7, "defaults.agent.instructions_files[2]"),
        ("a.yaml", 8, "defaults.agent.instructions_files[3]"),
        ("a.yaml", 9, "defaults.agent.instructions_files[4]"),
        ("a.yaml", 10, "defaults.agent.instructions_files[5]"),
        ("a.yaml", 11, "defaults.agent.instructions_files[6]"),
        ("a.yaml", 12, "defaults.agent.instructions_files[7]"),
        ("a.yaml", 15, "repos[0].agent.instructions_files"),
        ("a.yaml", 17, "repos[1].agent.instructions_files"),
        ("a.yaml", 20, "repos[2].agent.instructions_files"),
    ]
    messages = [issue.message for issue in issues]
    assert messages[0] == (
        "the path '../secrets.md' contains a '..' segment; paths never leave the repository"
    )
    assert messages[1].startswith("the path '/etc/passwd' is absolute")
    assert "'.' segment" in messages[2]
    assert "backslash" in messages[3]
    assert "ends with '/'" in messages[4]
    assert "white space" in messages[5]
    assert messages[6] == "the path is empty (got '')"
    assert messages[7] == "lists 'AGENTS.md' more than once (got ['AGENTS.md', 'AGENTS.md'])"
    assert messages[8].startswith("must be a list")
    assert "at most 10 items" in messages[9]


def test_agent_file_keys_are_checked_item_by_item_at_load(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          agent:
            protected_files:
              - "docs/prompts/**"
              - /etc/**
              - "!AGENTS.md"
            on_instructions_change: ignore
        repos:
          - match: acme/api
            agent: {protected_files: [PROMPT.md, PROMPT.md]}
        """,
    )
    issues = issues_of(tmp_path)
    assert where(issues) == [
        ("a.yaml", 6, "defaults.agent.protected_files[1]"),
        ("a.yaml", 7, "defaults.agent.protected_files[2]"),
        ("a.yaml", 8, "defaults.agent.on_instructions_change"),
        ("a.yaml", 11, "repos[0].agent.protected_files"),
    ]
    messages = [issue.message for issue in issues]
    assert messages[0].startswith("the path pattern '/etc/**' is absolute")
    assert "negation is not supported" in messages[1]
    assert "'revert', 'block' or 'allow'" in messages[2]
    assert messages[3] == "lists 'PROMPT.md' more than once (got ['PROMPT.md', 'PROMPT.md'])"


def test_agent_file_keys_merge_and_default_to_revert(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          agent: {protected_files: ["prompts/**"]}
        repos:
          - match: acme/docs
            agent: {on_instructions_change: allow, protected_files: []}
        """,
    )
    policies = load_policies(tmp_path)
    docs = policies.for_repo("acme/docs").agent
    assert (docs.on_instructions_change, docs.protected_files) == ("allow", [])
    other = policies.for_repo("acme/other").agent
    assert (other.on_instructions_change, other.protected_files) == ("revert", ["prompts/**"])
    assert (AgentPolicy().on_instructions_change, AgentPolicy().protected_files) == ("revert", [])


def test_the_documented_instructions_error_is_what_the_loader_prints(tmp_path: Path) -> None:
    write(
        tmp_path,
        "50-acme.yaml",
        """
        version: 1
        repos:
          - match: acme/api
            agent:
              instructions: Run make test-fast.
              max_steps: 80
              instructions_files:
                - AGENTS.md
                - ../secrets.md
        """,
    )
    issue = the_issue(tmp_path)
    line = str(issue).replace(str(tmp_path), "policies")
    docs = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    assert line in docs.splitlines()


def test_instructions_text_is_capped(tmp_path: Path) -> None:
    text = "x" * 16_385
    write(tmp_path, "a.yaml", f"version: 1\ndefaults:\n  agent:\n    instructions: {text}\n")
    issue = the_issue(tmp_path)
    assert (issue.line, issue.path) == (4, "defaults.agent.instructions")
    assert "at most 16384 characters" in issue.message


def test_instructions_merge_like_every_other_key(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          agent: {instructions: "Use make test."}
        repos:
          - match: acme/api
            agent:
              instructions: |
                Keep the public API stable.
                Run tox -e py311.
              instructions_files: [AGENTS.md, docs/AI.md]
          - match: acme/quiet
            agent: {instructions_files: []}
        """,
    )
    policies = load_policies(tmp_path)
    api = policies.for_repo("acme/api").agent
    assert api.instructions == "Keep the public API stable.\nRun tox -e py311.\n"
    assert api.instructions_files == ["AGENTS.md", "docs/AI.md"]
    quiet = policies.for_repo("acme/quiet").agent
    assert (quiet.instructions, quiet.instructions_files) == ("Use make test.", [])
    other = policies.for_repo("acme/other").agent
    assert other.instructions_files == ["AGENTS.md"]
    assert EffectivePolicy().agent.instructions == ""


def test_keys_yaml_reads_as_booleans_are_reported_once(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "version: 1\nrepos:\n  - match: a/b\n    on: true\n")
    issue = the_issue(tmp_path)
    assert (issue.line, issue.path) == (4, "repos[0]")
    assert "'on' is read by YAML as a bool" in issue.message


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_bytes(b"version: 1\n# caf\xe9\n")
    issue = the_issue(tmp_path)
    assert (issue.line, issue.path) == (2, "(file)")
    assert "not UTF-8" in issue.message


def test_all_errors_of_all_files_are_collected(tmp_path: Path) -> None:
    write(tmp_path, "20-b.yaml", "version: 1\ndefaults:\n  agent: {top_p: 0}\n")
    write(tmp_path, "10-a.yaml", "version: 1\ndefaults:\n  agent: {top_k: -2}\n  gate: 3\n")
    write(tmp_path, "30-c.yaml", "version: 1\n")
    write(tmp_path, "40-d.yaml", "version: [\n")
    with pytest.raises(PolicyError) as caught:
        load_policies(tmp_path)
    assert where(caught.value.issues) == [
        ("10-a.yaml", 3, "defaults.agent.top_k"),
        ("10-a.yaml", 4, "defaults.gate"),
        ("20-b.yaml", 3, "defaults.agent.top_p"),
        ("40-d.yaml", 2, "(yaml)"),
    ]
    lines = str(caught.value).splitlines()
    assert lines == [str(issue) for issue in caught.value.issues]
    assert lines[0].startswith(f"{tmp_path / '10-a.yaml'}:3: defaults.agent.top_k: ")
    assert isinstance(caught.value, ConfigError)


@pytest.mark.parametrize("make", ["missing", "empty", "only_other_files", "a_file"])
def test_missing_or_empty_directory_says_how_to_fix(tmp_path: Path, make: str) -> None:
    directory = tmp_path / "policies"
    if make == "empty":
        directory.mkdir()
    elif make == "only_other_files":
        (directory / "examples").mkdir(parents=True)
        write(directory / "examples", "a.yaml", "version: 1\n")
        write(directory, "README.md", "hi")
        write(directory, ".hidden.yaml", "version: 1\n")
    elif make == "a_file":
        directory.write_text("version: 1\n")
    with pytest.raises(ConfigError) as caught:
        load_policies(directory)
    assert not isinstance(caught.value, PolicyError)
    assert str(directory) in str(caught.value)
    assert "FROGNANO_POLICY_DIR" in str(caught.value)


def test_yml_files_are_errors_not_silently_skipped(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "version: 1\n")
    write(tmp_path, "b.yml", "version: 1\n")
    issue = the_issue(tmp_path)
    assert (issue.file.name, issue.line, issue.path) == ("b.yml", 1, "(file)")
    assert "rename it to b.yaml" in issue.message


def test_subfolders_and_hidden_files_are_not_read(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "version: 1\n")
    (tmp_path / "examples").mkdir()
    write(tmp_path / "examples", "bad.yaml", "nonsense: [")
    write(tmp_path, ".#a.yaml", "nonsense: [")
    write(tmp_path, "schema.json", "{}")
    assert load_policies(tmp_path).files == (tmp_path / "a.yaml",)


# Merge order


def test_merge_order_is_key_by_key_across_files_and_rules(tmp_path: Path) -> None:
    write(
        tmp_path,
        "10-org.yaml",
        """
        version: 1
        defaults:
          verify:
            command: make test
            protected_paths: ["tests/**", "spec/**"]
          gate: {max_files_changed: 5}
        repos:
          - match: acme/*
            verify: {timeout_seconds: 60}
            gate: {max_files_changed: 7}
          - match: acme/api
            verify: {protected_paths: ["api/tests/**"]}
        """,
    )
    write(
        tmp_path,
        "20-team.yaml",
        """
        version: 1
        defaults:
          verify: {baseline: false}
          gate: {max_files_changed: 6}
        repos:
          - match: acme/api
            verify: {command: make check}
        """,
    )
    api = load_policies(tmp_path).for_repo("acme/api")
    assert api.verify.command == "make check"  # later file's rule
    assert api.verify.timeout_seconds == 60  # first file's first rule, kept
    assert api.verify.baseline is False  # second file's defaults
    assert api.verify.protected_paths == ["api/tests/**"]  # replaced, not appended
    assert api.verify.require == "fail_to_pass"  # built-in
    # Every file's defaults come before any rule: the rule of 10-org wins over 20-team defaults.
    assert api.gate.max_files_changed == 7
    other = load_policies(tmp_path).for_repo("other/api")
    assert other.verify.command == "make test"
    assert other.verify.protected_paths == ["tests/**", "spec/**"]
    assert other.gate.max_files_changed == 6
    assert other.verify.timeout_seconds == EffectivePolicy().verify.timeout_seconds


def test_an_empty_list_replaces_the_default_list(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "version: 1\ndefaults:\n  publish: {labels: []}\n")
    assert load_policies(tmp_path).for_repo("a/b").publish.labels == []


def test_a_repo_matching_nothing_gets_the_defaults(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        defaults:
          verify:
        repos:
          - {match: acme/api, enabled: false, agent: {max_steps: 5}}
        """,
    )
    policies = load_policies(tmp_path)
    assert policies.for_repo("acme/web") == EffectivePolicy()
    assert policies.for_repo("acme/api") == EffectivePolicy(
        enabled=False, agent=AgentPolicy(max_steps=5)
    )


def test_numbers_are_accepted_for_kubernetes_quantities(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "version: 1\ndefaults:\n  sandbox: {cpu: 4, memory: 4096}\n")
    sandbox = load_policies(tmp_path).for_repo("a/b").sandbox
    assert (sandbox.cpu, sandbox.memory) == ("4", "4096")


# Repository globs


@pytest.mark.parametrize(
    ("pattern", "repo", "expected"),
    [
        ("acme/api", "acme/api", True),
        ("acme/api", "ACME/Api", True),
        ("Acme/API", "acme/api", True),
        ("acme/*", "acme/api", True),
        ("acme/*", "acme/.github", True),
        ("*/*", "anyone/anything", True),
        ("acme/legacy-*", "acme/legacy-billing", True),
        ("acme/legacy-*", "acme/billing-legacy", False),
        ("acme*", "acme/api", False),
        ("*/api", "acme/api", True),
        ("*/api", "acme/api-v2", False),
        ("acme/{api,web}", "acme/web", True),
        ("acme/{api,web}", "acme/cli", False),
        ("acme/ap?", "acme/apx", True),
        ("acme/[ab]pi", "acme/bpi", True),
        ("acme/[!ab]pi", "acme/bpi", False),
        ("acme/api", "acme/api2", False),
        ("acme/api", "other/api", False),
    ],
)
def test_repo_globs(pattern: str, repo: str, expected: bool) -> None:
    assert repo_matches(pattern, repo) is expected


def test_star_never_crosses_the_slash(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "version: 1\nrepos:\n  - {match: 'a*/*', enabled: false}\n")
    policies = load_policies(tmp_path)
    assert policies.for_repo("abc/x").enabled is False
    # `a*` is the owner part only: it cannot eat `b/c` out of a name.
    assert policies.for_repo("xa/bc").enabled is True


@pytest.mark.parametrize("repo", ["acme", "acme/api/x", "/api", "acme/", " acme/api", ""])
def test_a_malformed_repository_name_is_a_value_error(tmp_path: Path, repo: str) -> None:
    write(tmp_path, "a.yaml", "version: 1\n")
    with pytest.raises(ValueError, match="OWNER/NAME"):
        load_policies(tmp_path).for_repo(repo)
    with pytest.raises(ValueError, match="OWNER/NAME"):
        check_repo_name(repo)


# Disabled repositories


def test_rules_disable_and_later_rules_enable_again(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.yaml",
        """
        version: 1
        repos:
          - {match: "*/*", enabled: false}
          - {match: "acme/*", enabled: true}
          - {match: "acme/legacy-*", enabled: false}
          - {match: "acme/legacy-keep", verify: {command: make}}
        """,
    )
    policies = load_policies(tmp_path)
    assert policies.for_repo("other/api").enabled is False
    assert policies.for_repo("acme/api").enabled is True
    assert policies.for_repo("Acme/Legacy-Billing").enabled is False
    # A rule that does not mention `enabled` leaves it as it was.
    assert policies.for_repo("acme/legacy-keep").enabled is False
    assert policies.for_repo("acme/legacy-keep").verify.command == "make"


# explain


def test_explain_names_the_source_of_every_key(tmp_path: Path) -> None:
    write(
        tmp_path,
        "10-org.yaml",
        """
        version: 1
        defaults:
          agent:
            max_steps: 90
        repos:
          - match: acme/legacy-*
            enabled: false
          - match: acme/api
            verify:
              command: make test
        """,
    )
    policies = load_policies(tmp_path)
    origins = {origin.path: origin for origin in policies.explain("acme/api")}
    assert list(origins) == list(LEAVES)
    org = tmp_path / "10-org.yaml"
    assert origins["agent.max_steps"].source == f"{org}:4 (defaults)"
    assert origins["agent.max_steps"].value == 90
    assert (origins["agent.max_steps"].file, origins["agent.max_steps"].line) == (org, 4)
    assert origins["verify.command"].source == f"{org}:10 (repos[1] match 'acme/api')"
    assert origins["verify.command"].value == "make test"
    assert origins["verify.timeout_seconds"].source == "built-in default"
    assert origins["verify.timeout_seconds"].file is None
    assert origins["enabled"].source == "built-in default"
    assert origins["gate.forbidden_paths"].value == list(EffectivePolicy().gate.forbidden_paths)

    legacy = {origin.path: origin for origin in policies.explain("acme/legacy-x")}
    assert legacy["enabled"].value is False
    assert legacy["enabled"].source == f"{org}:7 (repos[0] match 'acme/legacy-*')"
    assert legacy["verify.command"].source == "built-in default"


def test_explain_values_equal_for_repo(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "version: 1\nrepos:\n  - {match: a/b, publish: {link: fixes}}\n")
    policies = load_policies(tmp_path)
    dumped = policies.for_repo("a/b").model_dump()
    for origin in policies.explain("a/b"):
        section, _, key = origin.path.partition(".")
        assert origin.value == (dumped[section][key] if key else dumped[section])


# Checks of the merged result (EffectivePolicy), with the line of the key that broke them


class _NeedsList(EffectivePolicy):
    """EffectivePolicy with a check that spans files: a non-pytest command needs fail_to_pass."""

    @model_validator(mode="after")
    def _list(self) -> _NeedsList:
        if "pytest" not in self.verify.command and not self.verify.fail_to_pass:
            raise ValueError("a command other than pytest needs verify.fail_to_pass")
        return self


def test_checks_across_keys_point_at_the_key_that_broke_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(merge, "EffectivePolicy", _NeedsList)
    write(tmp_path, "10-a.yaml", "version: 1\ndefaults:\n  verify: {fail_to_pass: [t]}\n")
    write(
        tmp_path,
        "20-b.yaml",
        """
        version: 1
        repos:
          - match: acme/*
            verify: {fail_to_pass: []}
          - match: acme/api
            verify:
              command: make test
        """,
    )
    # Each rule alone on top of the defaults is fine, so the set loads...
    policies = load_policies(tmp_path)
    assert policies.for_repo("acme/web").verify.fail_to_pass == []
    # ...but acme/api gets both rules, and that combination breaks the check.
    with pytest.raises(PolicyError) as caught:
        policies.for_repo("acme/api")
    (issue,) = caught.value.issues
    assert issue.file == tmp_path / "20-b.yaml"
    # The check spans the whole policy, so the issue points at the key set last: the rule that
    # tipped the combination over.
    assert (issue.line, issue.path) == (7, "repos[1].verify.command")
    assert "needs verify.fail_to_pass" in issue.message
    assert "in the policy of acme/api" in issue.message

    # A rule that breaks it on its own is an error at load time.
    write(
        tmp_path,
        "30-c.yaml",
        "version: 1\nrepos:\n  - match: x/y\n    verify: {command: go, fail_to_pass: []}\n",
    )
    issue = the_issue(tmp_path)
    assert (issue.file.name, issue.line) == ("30-c.yaml", 4)
    assert issue.path.startswith("repos[0].verify.")
    assert "with repos[0] match 'x/y'" in issue.message


# The shipped files


def test_shipped_default_yaml_sets_every_key_to_its_built_in_default(tmp_path: Path) -> None:
    shutil.copy(ROOT / "policies" / "00-default.yaml", tmp_path)
    policies = load_policies(tmp_path)
    assert policies.for_repo("any/repo") == EffectivePolicy()
    for origin in policies.explain("any/repo"):
        if origin.path != "enabled":  # rule-level only
            assert origin.file == tmp_path / "00-default.yaml", origin


def test_shipped_policy_directory_loads() -> None:
    policies = load_policies(ROOT / "policies")
    assert [path.name for path in policies.files] == ["00-default.yaml"]


@pytest.mark.parametrize(
    "example", sorted(path.name for path in (ROOT / "policies" / "examples").glob("*.yaml"))
)
def test_examples_are_valid_beside_the_default(tmp_path: Path, example: str) -> None:
    shutil.copy(ROOT / "policies" / "00-default.yaml", tmp_path)
    shutil.copy(ROOT / "policies" / "examples" / example, tmp_path / f"50-{example}")
    policies = load_policies(tmp_path)
    assert len(policies.files) == 2
    assert any(layer.match is not None for layer in policies.layers)


def test_examples_do_what_their_comments_say(tmp_path: Path) -> None:
    for name in ("strict-fintech.yaml", "monorepo-rules.yaml"):
        shutil.copy(ROOT / "policies" / "examples" / name, tmp_path)
    policies = load_policies(tmp_path)
    assert policies.for_repo("fintech-corp/payments-gateway").gate.max_files_changed == 3
    assert policies.for_repo("fintech-corp/payments-gateway").verify.on_protected_change == (
        "block"
    )
    assert policies.for_repo("fintech-corp/card-pci-vault").enabled is False
    assert policies.for_repo("acme/legacy-crm").enabled is False
    # FrogNano's evidence comes from pytest: repositories tested otherwise are switched off.
    assert policies.for_repo("Acme/Web-App").enabled is False
    assert policies.for_repo("acme/billing-svc").enabled is False


def test_leaves_cover_every_key_of_the_models() -> None:
    assert list(SECTIONS) == [name for name in EffectivePolicy.model_fields if name != "enabled"]
    expected = ["enabled"] + [
        f"{section}.{key}"
        for section, model in SECTIONS.items()
        for key in EffectivePolicy.model_fields[section].annotation.model_fields  # type: ignore[union-attr]
    ]
    assert list(LEAVES) == expected


def test_a_policy_set_is_immutable(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", "version: 1\ndefaults:\n  publish: {labels: [x]}\n")
    policies = load_policies(tmp_path)
    first = policies.for_repo("a/b")
    first.publish.labels.append("y")  # the model is frozen, its list is not
    assert policies.for_repo("a/b").publish.labels == ["x"]
    with pytest.raises(AttributeError):
        policies.files = ()  # type: ignore[misc]
    assert isinstance(policies, PolicySet)
