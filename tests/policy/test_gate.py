"""The gate, on diffs made by real git exactly as production makes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from frognano.policy.gate import check as gate_module
from frognano.policy.gate import scan
from frognano.policy.gate.check import Finding, TreeFacts, blocked, run_gate
from frognano.policy.models import GatePolicy
from tests.policy.fakes import AWS_KEY
from tests.policy.gitrepo import GitRepo

KEY_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"
PRIVATE_KEY = (
    "-----BEGIN " + "RSA PRIVATE KEY-----\n"
    f"{KEY_BODY}\n"
    "VLhx7Gv5FJ6SCwRXDQ8cY9zXW3w7LmnPFDmBrrMgKNcF/sgP8hzg\n"
    "-----END RSA PRIVATE KEY-----\n"
)
APP = "def add(a, b):\n    return a - b\n"
TEST_APP = "from src.app import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """A small project committed as the base."""
    repo = GitRepo(tmp_path)
    repo.write("src/app.py", APP)
    repo.write("tests/test_app.py", TEST_APP)
    repo.write("tests/conftest.py", "import pytest\n")
    repo.write(".github/workflows/ci.yml", "on: push\n")
    repo.write("README.md", "# app\n")
    repo.commit_base()
    return repo


def check(repo: GitRepo, gate: GatePolicy | None = None) -> list[Finding]:
    return run_gate(repo.diff(), repo.facts(), gate or GatePolicy())


def summary(findings: list[Finding]) -> list[tuple[str, str, str | None]]:
    return [(finding.severity, finding.kind, finding.path) for finding in findings]


def test_a_clean_small_fix_has_no_findings(repo: GitRepo) -> None:
    repo.write("src/app.py", APP.replace("a - b", "a + b"))
    repo.write("tests/test_more.py", "def test_more():\n    assert True\n")

    findings = check(repo)

    assert findings == []
    assert not blocked(findings)


def test_an_empty_patch_is_blocked(repo: GitRepo) -> None:
    findings = check(repo)

    assert summary(findings) == [("block", "empty", None)]
    assert "empty" in findings[0].reason


def test_a_malformed_patch_is_blocked() -> None:
    findings = run_gate(b"not a diff\n", TreeFacts({}), GatePolicy())

    assert summary(findings) == [("block", "malformed", None)]


def test_a_private_key_block_is_found_and_not_echoed(repo: GitRepo) -> None:
    repo.write("deploy/id_rsa.txt", PRIVATE_KEY)

    findings = check(repo)

    assert summary(findings) == [("block", "secret", "deploy/id_rsa.txt")]
    assert "Private Key" in findings[0].reason
    assert KEY_BODY not in repr(findings)
    assert "PRIVATE KEY" not in (findings[0].line or "")
    assert "[REDACTED]" in (findings[0].line or "")


def test_an_encrypted_pkcs8_key_is_found(repo: GitRepo) -> None:
    repo.write("k.txt", "-----BEGIN " + f"ENCRYPTED PRIVATE KEY-----\n{KEY_BODY}\n")

    assert summary(check(repo)) == [("block", "secret", "k.txt")]


def test_an_aws_key_is_found_and_never_echoed(repo: GitRepo) -> None:
    repo.write("src/settings.py", f'AWS_ACCESS_KEY_ID = "{AWS_KEY}"\n')

    findings = check(repo)

    assert summary(findings) == [("block", "secret", "src/settings.py")]
    assert "AWS Access Key" in findings[0].reason
    assert findings[0].line == 'AWS_ACCESS_KEY_ID = "[REDACTED]"'
    assert AWS_KEY not in repr(findings)
    assert AWS_KEY[4:] not in repr(findings)


def test_a_secret_on_a_suspicious_line_is_redacted_there_too(repo: GitRepo) -> None:
    repo.write("src/app.py", APP + f'\nsys.exit("{AWS_KEY}")\n')

    findings = check(repo)

    assert summary(findings) == [
        ("block", "secret", "src/app.py"),
        ("warn", "suspicious", "src/app.py"),
    ]
    assert AWS_KEY not in repr(findings)
    assert findings[1].line == 'sys.exit("[REDACTED]")'


def test_a_secret_deep_in_a_long_line_is_found(repo: GitRepo) -> None:
    repo.write("dist/bundle.js", "var a='" + "x" * 10_000 + f"';var k='{AWS_KEY}';\n")

    findings = check(repo)

    assert summary(findings) == [("block", "secret", "dist/bundle.js")]
    assert AWS_KEY not in repr(findings)
    assert len(findings[0].line or "") <= gate_module.SHOWN_CHARS


def test_secret_scan_can_be_turned_off(repo: GitRepo) -> None:
    repo.write("src/settings.py", f'AWS_ACCESS_KEY_ID = "{AWS_KEY}"\n')

    assert check(repo, GatePolicy(secret_scan=False)) == []


def test_hashes_uuids_and_lock_files_are_not_secrets(repo: GitRepo) -> None:
    repo.write(
        "poetry.lock",
        'hash = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"\n'
        'integrity = "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="\n'  # noqa: E501
        'id = "123e4567-e89b-12d3-a456-426614174000"\n'
        'commit = "e17613e320d9c3758fb872a07159e0114adb7b21"\n',
    )
    repo.write("tests/test_db.py", 'URL = "postgres://user:pass@localhost/db"\npassword = "x"\n')

    assert check(repo) == []


def test_a_binary_file_is_blocked_unless_allowed(repo: GitRepo) -> None:
    repo.write("assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00")

    assert summary(check(repo)) == [("block", "binary", "assets/logo.png")]
    assert check(repo, GatePolicy(allow_binary=True)) == []


def test_deleting_a_binary_file_is_fine(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path)
    repo.write("old.bin", b"\x00\x01\x02")
    repo.commit_base()
    repo.path("old.bin").unlink()

    assert check(repo) == []


def test_a_symlink_is_blocked_unless_allowed(repo: GitRepo) -> None:
    repo.path("src/link.py").symlink_to("app.py")

    findings = check(repo)

    assert summary(findings) == [("block", "symlink", "src/link.py")]
    assert "gate.allow_symlinks" in findings[0].reason
    assert check(repo, GatePolicy(allow_symlinks=True)) == []


def test_a_file_turned_into_a_symlink_is_reported_once(repo: GitRepo) -> None:
    repo.path("README.md").unlink()
    repo.path("README.md").symlink_to("/etc/passwd")

    assert summary(check(repo)) == [("block", "symlink", "README.md")]


def test_chmod_x_is_a_warning(repo: GitRepo) -> None:
    repo.path("src/app.py").chmod(0o755)

    findings = check(repo)

    assert summary(findings) == [("warn", "executable", "src/app.py")]
    assert not blocked(findings)


def test_a_new_executable_file_is_a_warning(repo: GitRepo) -> None:
    repo.write("scripts/run.sh", "#!/bin/sh\necho hi\n", executable=True)

    assert summary(check(repo)) == [("warn", "executable", "scripts/run.sh")]


def test_a_workflow_edit_is_forbidden(repo: GitRepo) -> None:
    repo.write(".github/workflows/ci.yml", "on: push\njobs: {}\n")

    findings = check(repo)

    assert summary(findings) == [("block", "forbidden_path", ".github/workflows/ci.yml")]
    assert "'.github/**'" in findings[0].reason


def test_deleting_a_forbidden_path_is_forbidden_too(repo: GitRepo) -> None:
    repo.path(".github/workflows/ci.yml").unlink()

    assert summary(check(repo)) == [("block", "forbidden_path", ".github/workflows/ci.yml")]


def test_a_submodule_gitlink_is_blocked(repo: GitRepo) -> None:
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{repo.base},vendor/lib")

    diff = repo.diff(stage=False)
    findings = run_gate(diff, repo.facts(stage=False), GatePolicy())

    assert b"new file mode 160000" in diff
    assert summary(findings) == [("block", "submodule", "vendor/lib")]


def test_an_embedded_repository_becomes_a_blocked_submodule(repo: GitRepo) -> None:
    inner = GitRepo(repo.path("vendor/lib"))
    inner.write("lib.py", "x = 1\n")
    inner.commit_base()

    assert summary(check(repo)) == [("block", "submodule", "vendor/lib")]


@pytest.mark.parametrize("name", ["docs/café notes.md", "a\tb.py", "dir with space/ü.py"])
def test_special_file_names_keep_their_exact_path(repo: GitRepo, name: str) -> None:
    repo.write(name, "text\n")

    findings = check(repo, GatePolicy(forbidden_paths=[name], max_file_bytes=1))

    assert summary(findings) == [
        ("block", "forbidden_path", name),
        ("block", "large_file", name),  # found through facts.sizes, keyed by the same path
    ]


def test_a_file_over_the_size_limit_is_blocked(repo: GitRepo) -> None:
    repo.write("data/big.json", "[" + "1," * 100 + "1]\n")

    findings = check(repo, GatePolicy(max_file_bytes=100))

    assert summary(findings) == [("block", "large_file", "data/big.json")]
    assert "204 bytes" in findings[0].reason
    assert check(repo, GatePolicy(max_file_bytes=204)) == []


def test_without_a_size_the_added_text_is_a_lower_bound(repo: GitRepo) -> None:
    repo.write("data/big.json", "x" * 300 + "\n")

    findings = run_gate(repo.diff(), TreeFacts({}), GatePolicy(max_file_bytes=100))

    assert summary(findings) == [("block", "large_file", "data/big.json")]


def test_a_new_conftest_is_suspicious(repo: GitRepo) -> None:
    repo.write("src/conftest.py", "collect = 1\n")

    findings = check(repo)

    assert summary(findings) == [("warn", "suspicious", "src/conftest.py")]
    assert "new src/conftest.py" in findings[0].reason


def test_an_edited_conftest_is_not_new(repo: GitRepo) -> None:
    repo.write("tests/conftest.py", "import pytest\nimport os\n")

    # Whether it may change at all is verification's business (frognano.run.plan).
    assert summary(check(repo)) == []


def test_a_skip_marker_is_suspicious_and_the_policy_sets_its_severity(repo: GitRepo) -> None:
    repo.write("tests/test_new.py", '@pytest.mark.skip(reason="flaky")\ndef test_x():\n    pass\n')

    warned = check(repo)
    refused = check(repo, GatePolicy(suspicious_patterns="block"))

    assert summary(warned) == [("warn", "suspicious", "tests/test_new.py")]
    assert warned[0].line == '@pytest.mark.skip(reason="flaky")'
    assert not blocked(warned)
    assert summary(refused) == [("block", "suspicious", "tests/test_new.py")]


@pytest.mark.parametrize(
    "body",
    [
        "    def __eq__(self, other):\n        return True\n",
        '    def __eq__(self, other):\n        """Equal."""\n\n        return True\n',
        "    def __eq__(self, other): return True\n",
        "    __eq__ = lambda self, other: True\n",
        "    def __ne__(self, other):\n        return False\n",
    ],
)
def test_an_always_equal_object_is_suspicious(repo: GitRepo, body: str) -> None:
    repo.write("src/app.py", APP + "\n\nclass Result:\n" + body)

    findings = check(repo)

    assert summary(findings) == [("block", "tampering", "src/app.py")]
    assert "__eq__" in findings[0].reason
    assert summary(check(repo, GatePolicy(tampering="warn"))) == [
        ("warn", "tampering", "src/app.py")
    ]


def test_an_honest_eq_is_fine(repo: GitRepo) -> None:
    repo.write(
        "src/app.py",
        APP + "\n\nclass P:\n    def __eq__(self, other):\n        if self is other:\n"
        "            return True\n        return self.x == other.x\n",
    )

    assert check(repo) == []


def test_repeated_suspicious_lines_make_one_finding_each_kind(repo: GitRepo) -> None:
    repo.write("src/app.py", APP + "sys.exit(1)\nsys.exit(2)\nos._exit(3)\n")

    findings = check(repo)

    assert [(f.kind, f.line) for f in findings] == [
        ("suspicious", "sys.exit(1)"),
        ("tampering", "os._exit(3)"),
    ]
    assert "2 lines" in findings[0].reason


def test_too_many_files(repo: GitRepo) -> None:
    for name in ("a", "b", "c"):
        repo.write(f"src/{name}.py", "x = 1\n")

    findings = check(repo, GatePolicy(max_files_changed=2))

    assert summary(findings) == [("block", "too_many_files", None)]
    assert "3 files" in findings[0].reason
    assert check(repo, GatePolicy(max_files_changed=3)) == []


def test_too_many_lines(repo: GitRepo) -> None:
    repo.write("src/app.py", "def add(a, b):\n    return a + b\n" + "x = 1\n" * 4)  # +5 -1

    findings = check(repo, GatePolicy(max_lines_changed=5))

    assert summary(findings) == [("block", "too_many_lines", None)]
    assert "6 lines" in findings[0].reason
    assert check(repo, GatePolicy(max_lines_changed=6)) == []


def test_a_scan_past_its_budget_blocks(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "MAX_SCANNED_LINES", 5)
    repo.write("a.txt", f'k = "{AWS_KEY}"\n' + "x = 1\n" * 3)  # 4 lines: scanned
    repo.write("b.txt", "y = 2\nz = 3\n")  # 2 more: past the budget, so not scanned at all

    findings = check(repo)

    assert summary(findings) == [
        ("block", "scan_incomplete", None),
        ("block", "secret", "a.txt"),
    ]
    assert "1 file(s) left (b.txt)" in findings[0].reason
    assert blocked(findings)


def test_the_budget_fits_a_patch_at_the_default_limits() -> None:
    gate = GatePolicy()
    # Every file the largest allowed size and parsed as Python, plus its added lines' worth.
    assert gate.max_files_changed * gate.max_file_bytes <= scan.MAX_SCANNED_CHARS
    assert 100 * gate.max_lines_changed <= scan.MAX_SCANNED_LINES


def test_findings_are_sorted_by_path_then_kind_and_deterministic(repo: GitRepo) -> None:
    repo.write("z.py", "sys.exit(0)\n", executable=True)
    repo.write(".github/workflows/ci.yml", "on: pull_request\n")
    repo.path("src/app.py").chmod(0o755)
    repo.write("src/conftest.py", "import pytest\n")

    findings = check(repo, GatePolicy(max_files_changed=1))

    assert summary(findings) == [
        ("block", "too_many_files", None),
        ("block", "forbidden_path", ".github/workflows/ci.yml"),
        ("warn", "executable", "src/app.py"),
        ("warn", "suspicious", "src/conftest.py"),
        ("warn", "executable", "z.py"),
        ("warn", "suspicious", "z.py"),
    ]
    assert check(repo, GatePolicy(max_files_changed=1)) == findings


def test_blocked() -> None:
    warn = Finding("warn", "executable", "x", "a")
    block = Finding("block", "binary", "x", "b")
    assert not blocked([])
    assert not blocked([warn])
    assert blocked([warn, block])
