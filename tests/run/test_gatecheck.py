"""The gate's inputs FrogNano computes itself: the base's automation, the new bytes, the plan."""

from __future__ import annotations

import os
from pathlib import Path

from frognano.policy.gate.findings import Finding, TreeFacts
from frognano.policy.models import EffectivePolicy, VerifyPolicy
from frognano.run.apply import AppliedFile
from frognano.run.gatecheck import (
    MAX_AUTOMATION_BYTES,
    automation_files,
    check_patch,
    plan_findings,
    tree_facts,
)
from frognano.run.plan import Plan, Protected
from frognano.run.trees import HostTree

WORKFLOW = b"on: push\njobs:\n  t:\n    runs-on: x\n    steps:\n      - run: bash scripts/ci.sh\n"


async def base_tree(root: Path) -> HostTree:
    files = {
        ".github/workflows/ci.yml": WORKFLOW,
        ".github/CODEOWNERS": b"* @team\n",
        "scripts/ci.sh": b"#!/bin/sh\nsh tools/lint.bash\n",
        "tools/lint.bash": b"ruff check .\n",
        "deploy/values.yaml": b"a: 1\n",
        "big.yml": b"#" * (MAX_AUTOMATION_BYTES + 1),
        "edge.yml": b"#" * MAX_AUTOMATION_BYTES,
        "calc.py": b"x = 1\n",
        "README.md": b"hi\n",
    }
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    (root / "linked.sh").symlink_to("scripts/ci.sh")
    os.mkdir(root / "empty.yml")
    return await HostTree.scan(root, ())


async def test_automation_files_are_the_github_folder_and_shell_and_yaml_files(
    tmp_path: Path,
) -> None:
    found = automation_files(await base_tree(tmp_path))
    assert sorted(found) == [
        ".github/CODEOWNERS",
        ".github/workflows/ci.yml",
        "deploy/values.yaml",
        "edge.yml",
        "scripts/ci.sh",
        "tools/lint.bash",
    ]  # not too big, not a link, not a folder, not other code
    assert found["scripts/ci.sh"] == b"#!/bin/sh\nsh tools/lint.bash\n"


async def test_tree_facts_name_the_new_bytes_and_what_the_workflows_run(tmp_path: Path) -> None:
    base = await base_tree(tmp_path)
    applied = (
        AppliedFile("calc.py", "100644", b"x = 2\n"),
        AppliedFile("new.py", "100755", b"print()\n"),
        AppliedFile("README.md", "", None),  # deleted
    )
    facts = tree_facts(applied, base)
    assert facts == TreeFacts(
        sizes={"calc.py": 6, "new.py": 8},
        base_paths=base.paths,
        contents={"calc.py": b"x = 2\n", "new.py": b"print()\n"},
        automation_paths=frozenset({"scripts/ci.sh", "tools/lint.bash"}),
        automation_runners={
            "scripts/ci.sh": (".github/workflows/ci.yml",),
            "tools/lint.bash": (".github/workflows/ci.yml",),
        },
    )


def plan_of(*restored: Protected) -> Plan:
    return Plan(source=(), new_tests=(), restored=restored)


CONFTEST = Protected("tests/conftest.py", "it decides how the tests run", "harness")


def test_a_restored_file_blocks_or_warns_as_the_policy_says() -> None:
    blocking = EffectivePolicy(verify=VerifyPolicy(on_protected_change="block"))
    warning = EffectivePolicy(verify=VerifyPolicy(on_protected_change="revert"))
    assert plan_findings(plan_of(CONFTEST), blocking) == [
        Finding(
            "block",
            "protected_change",
            "the patch changes tests/conftest.py, which verification may not take from the "
            "agent: it decides how the tests run; change the code instead, or edit the policy",
            "tests/conftest.py",
        )
    ]
    assert plan_findings(plan_of(CONFTEST), warning) == [
        Finding(
            "warn",
            "protected_change",
            "tests/conftest.py was put back to its base state for verification and is left out "
            "of the pull request, because it decides how the tests run",
            "tests/conftest.py",
        )
    ]


def test_a_path_that_is_not_utf8_is_shown_readably() -> None:
    odd = Protected("tests/t\udcff.py", "it is a test", "test_file")
    (finding,) = plan_findings(plan_of(odd), EffectivePolicy())
    assert finding.path == "tests/t\udcff.py"
    assert "tests/t\ufffd.py" in finding.reason


async def test_check_patch_sorts_by_path_and_reports_each_finding_once(tmp_path: Path) -> None:
    base = await base_tree(tmp_path)
    diff = (
        b"diff --git a/.envrc b/.envrc\nnew file mode 100644\nindex 0000000..2e65efe\n"
        b"--- /dev/null\n+++ b/.envrc\n@@ -0,0 +1 @@\n+a\n"
    )
    applied = (AppliedFile(".envrc", "100644", b"a\n"),)
    twice = plan_of(CONFTEST, CONFTEST)
    found = check_patch(diff, applied, base, twice, EffectivePolicy())
    assert [(f.path, f.kind) for f in found] == [
        (".envrc", "forbidden_path"),
        ("tests/conftest.py", "protected_change"),
    ]
