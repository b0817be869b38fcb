"""The gate's path rules: forbidden and allowed paths, files the workflows run, credential file
names and binary files, on diffs made by real git."""

from __future__ import annotations

from pathlib import Path

import pytest

from frognano.policy.gate.check import Finding, TreeFacts, run_gate
from frognano.policy.issues import PolicyError
from frognano.policy.loader import load_policies
from frognano.policy.models import GatePolicy
from tests.policy.fakes import AWS_KEY
from tests.policy.gitrepo import GitRepo, new_files

WORKFLOW = """\
on: pull_request
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: ./tools/setup-action
      - run: ./scripts/check.sh --all
      - run: |
          bash ci/run "${{ matrix.python }}"
          python tools/lint.py
        working-directory: .
"""
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) + b"\n"


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path)
    repo.write("src/app.py", "x = 1\n")
    repo.write(".github/workflows/ci.yml", WORKFLOW)
    repo.write("scripts/check.sh", "#!/bin/sh\n./scripts/helper.sh\n")
    repo.write("scripts/other.sh", "#!/bin/sh\necho other\n")
    repo.commit_base()
    return repo


def check(repo: GitRepo, gate: GatePolicy | None = None) -> list[Finding]:
    return run_gate(repo.diff(), repo.facts(), gate or GatePolicy())


def summary(findings: list[Finding]) -> list[tuple[str, str, str | None]]:
    return [(finding.severity, finding.kind, finding.path) for finding in findings]


@pytest.mark.parametrize(
    "path",
    [
        ".github/workflows/release.yml",
        ".github/actions/setup/action.yml",
        ".github/dependabot.yml",
        ".github/CODEOWNERS",
        ".github/FUNDING.yml",
        ".github/copilot-instructions.md",
        "CODEOWNERS",
        "docs/CODEOWNERS",
        ".gitlab-ci.yml",
        ".gitlab/ci/build.yml",
        ".circleci/config.yml",
        ".travis.yml",
        "azure-pipelines.yml",
        "deploy/Jenkinsfile",
        ".buildkite/pipeline.yml",
        ".pre-commit-config.yaml",
        ".husky/pre-commit",
        ".githooks/pre-push",
        "lefthook.yml",
        ".devcontainer/devcontainer.json",
        ".devcontainer.json",
        ".vscode/tasks.json",
        ".VSCode/tasks.json",  # the same folder on a case-insensitive checkout
        ".idea/runConfigurations/tests.xml",
        ".claude/settings.json",
        ".envrc",
        "src/.gitattributes",
        ".gitmodules",
        "renovate.json",
        ".gitpod.yml",
        ".readthedocs.yaml",
        "home/.ssh/authorized_keys",
    ],
)
def test_automation_and_repository_settings_are_forbidden(repo: GitRepo, path: str) -> None:
    repo.write(path, "x\n")

    findings = check(repo)

    assert summary(findings) == [("block", "forbidden_path", path)]
    assert "gate.forbidden_paths" in findings[0].reason


@pytest.mark.parametrize(
    "path",
    [
        ".github/ISSUE_TEMPLATE/bug.md",
        ".github/ISSUE_TEMPLATE/config.yml",
        ".github/PULL_REQUEST_TEMPLATE/feature.md",
        ".github/pull_request_template.md",
        ".github/PULL_REQUEST_TEMPLATE.md",
        ".gitlab/merge_request_templates/default.md",
        "docs/ci.md",
        "Makefile",
        "src/github/workflows.py",
    ],
)
def test_templates_and_ordinary_files_are_allowed(repo: GitRepo, path: str) -> None:
    repo.write(path, "x = 1\n")

    assert check(repo) == []


def test_allowed_paths_match_exactly_so_a_case_variant_stays_forbidden(repo: GitRepo) -> None:
    repo.write(".github/issue_template/bug.md", "x\n")

    assert summary(check(repo)) == [("block", "forbidden_path", ".github/issue_template/bug.md")]


def test_allowed_paths_exempt_from_forbidden_paths_only(repo: GitRepo) -> None:
    repo.write(".github/ISSUE_TEMPLATE/bug.md", f"Paste your key: {AWS_KEY}\n")
    repo.write(".github/labeler.yml", "docs: docs/**\n")

    findings = check(repo, GatePolicy(allowed_paths=[".github/labeler.yml"]))

    assert summary(findings) == [
        ("block", "forbidden_path", ".github/ISSUE_TEMPLATE/bug.md"),  # no longer allowed
        ("block", "secret", ".github/ISSUE_TEMPLATE/bug.md"),
    ]


def test_a_script_a_workflow_runs_is_forbidden_and_the_reason_names_the_workflow(
    repo: GitRepo,
) -> None:
    repo.write("scripts/check.sh", "#!/bin/sh\nexit 0\n")

    findings = check(repo)

    assert summary(findings) == [("block", "forbidden_path", "scripts/check.sh")]
    assert "the workflow .github/workflows/ci.yml runs" in findings[0].reason


@pytest.mark.parametrize(
    "path",
    [
        "ci/run",  # bash ci/run
        "tools/lint.py",  # python tools/lint.py
        "scripts/helper.sh",  # run by scripts/check.sh, which the workflow runs
        "tools/setup-action/index.js",  # part of the local action `uses: ./tools/setup-action`
        "Tools/Lint.py",  # the same file on a case-insensitive runner
    ],
)
def test_everything_the_workflows_run_is_forbidden(repo: GitRepo, path: str) -> None:
    repo.write(path, "x = 2\n")

    findings = check(repo)

    assert summary(findings) == [("block", "forbidden_path", path)]
    assert ".github/workflows/ci.yml" in findings[0].reason


def test_a_script_no_workflow_runs_may_change(repo: GitRepo) -> None:
    repo.write("scripts/other.sh", "#!/bin/sh\necho changed\n")

    assert check(repo) == []


@pytest.mark.parametrize(
    ("path", "what"),
    [
        (".env", "environment file"),
        ("config/.env.production", "environment file"),
        ("deploy/id_rsa", "SSH private key"),
        ("deploy/id_ed25519_github", "SSH private key"),
        ("certs/server.pem", "key, certificate"),
        ("certs/client.key", "key, certificate"),
        ("certs/store.p12", "key, certificate"),
        (".npmrc", "credentials file"),
        (".pypirc", "credentials file"),
        ("home/.netrc", "credentials file"),
        (".git-credentials", "credentials file"),
        ("home/.aws/credentials", "credentials file"),
    ],
)
def test_files_named_like_credentials_are_secrets(repo: GitRepo, path: str, what: str) -> None:
    repo.write(path, "placeholder\n")

    findings = check(repo)

    assert summary(findings) == [("block", "secret", path)]
    assert what in findings[0].reason
    assert summary(check(repo, GatePolicy(secret_scan=False))) == []


@pytest.mark.parametrize(
    "path", [".env.example", "config/.env.sample", "deploy/id_rsa.pub", "docs/keys.md"]
)
def test_templates_and_public_keys_are_not_credential_files(repo: GitRepo, path: str) -> None:
    repo.write(path, "API_URL=https://example.invalid\n")

    assert check(repo) == []


def test_deleting_a_credential_file_is_fine(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path)
    repo.write(".env", "DEBUG=1\n")
    repo.commit_base()
    repo.path(".env").unlink()

    assert check(repo) == []


def test_an_elf_shipped_as_a_text_diff_is_binary(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path)
    repo.write(".gitattributes", "*.bin diff\n")  # the base makes git print raw bytes as text
    repo.commit_base()
    repo.write("tools/helper.bin", ELF)

    diff = repo.diff()
    with_bytes = run_gate(diff, repo.facts(), GatePolicy())
    diff_only = run_gate(diff, TreeFacts(sizes={}), GatePolicy())

    assert b"GIT binary patch" not in diff
    assert b"Binary files" not in diff
    assert summary(with_bytes) == [("block", "binary", "tools/helper.bin")]
    assert summary(diff_only) == [("block", "binary", "tools/helper.bin")]
    assert run_gate(diff, repo.facts(), GatePolicy(allow_binary=True)) == []


def test_text_that_git_calls_binary_is_text_and_is_scanned(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path)
    repo.write(".gitattributes", "*.cfg binary\n")  # hides the text from the diff
    repo.commit_base()
    repo.write("app.cfg", f"[aws]\nkey = {AWS_KEY}\n")

    diff = repo.diff()
    findings = check(repo)

    assert b"GIT binary patch" in diff
    assert summary(findings) == [("block", "secret", "app.cfg")]
    assert AWS_KEY not in repr(findings)


def test_a_nul_byte_makes_a_file_binary_whatever_its_name() -> None:
    diff, facts = new_files({"notes.txt": b"text\x00more\n"})

    assert summary(run_gate(diff, facts, GatePolicy())) == [("block", "binary", "notes.txt")]


def test_allowed_paths_are_checked_like_every_policy_glob(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "version: 1\ndefaults:\n  gate:\n    allowed_paths: ['/etc/**']\n", encoding="utf-8"
    )

    with pytest.raises(PolicyError) as caught:
        load_policies(tmp_path)

    assert "defaults.gate.allowed_paths[0]: the path pattern '/etc/**' is absolute" in str(
        caught.value
    )
