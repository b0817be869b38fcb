"""Verification end to end: scripted agents that fix, cheat, break, do nothing, or hang."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from frognano.policy.models import EffectivePolicy, VerifyPolicy
from frognano.run.apply import AppliedFile
from frognano.run.job import SolveJob
from frognano.run.pipeline import SolveOutcome, solve
from frognano.run.ports import RunPorts
from frognano.run.report import ComparisonRecord, SuiteRunKey, SuiteRunRecord, VerificationRecord
from frognano.settings import Settings
from tests.fakes.model_server import ScriptedModelServer, Turn

CALC = "def mean(xs):\n    return sum(xs) / len(xs)\n"
TESTS = (
    "import pytest\n\nfrom calc import mean\n\n\n"
    "def test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
    "def test_empty():\n    with pytest.raises(ValueError):\n        mean([])\n"
)
GUARD = "    if not xs:\n        raise ValueError('mean() of an empty list')\n"
FAILING = "tests/test_calc.py::test_empty"
PASSING = "tests/test_calc.py::test_mean"


def make_repo(root: Path, tests: str = TESTS) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text(CALC)
    (root / "tests" / "test_calc.py").write_text(tests)
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                       cwd=root, check=True, capture_output=True)  # fmt: skip
    return root


def read(path: str) -> Turn:
    return Turn(calls=[("Read", {"file_path": f"/workspace/{path}"})])


def edit(path: str, old: str, new: str) -> Turn:
    return Turn(calls=[("Edit", {"file_path": f"/workspace/{path}", "old_string": old,
                                 "new_string": new})])  # fmt: skip


def verified(outcome: SolveOutcome) -> VerificationRecord:
    verification = outcome.report["verification"]
    assert verification is not None
    return verification


def compared(outcome: SolveOutcome) -> ComparisonRecord:
    comparison = verified(outcome)["comparison"]
    assert comparison is not None
    return comparison


def suite(outcome: SolveOutcome, key: SuiteRunKey) -> SuiteRunRecord:
    run = verified(outcome)[key]
    assert run is not None
    return run


def patched_files(outcome: SolveOutcome) -> list[str]:
    patch = outcome.report["patch"]
    assert patch is not None
    return patch["files"]


DONE = Turn(content="Done.")
FIX = edit("calc.py", "    return sum", GUARD + "    return sum")


async def run(
    tmp_path: Path,
    script: list[Turn],
    policy: EffectivePolicy | None = None,
    requests: list[dict[str, Any]] | None = None,
    **repo: Any,
) -> SolveOutcome:
    repo_dir = make_repo(tmp_path / "repo", **repo)
    with ScriptedModelServer(script) as server:
        settings = Settings(model_base_url=server.base_url)
        job = SolveJob(
            repo_dir=repo_dir,
            title="mean([]) crashes",
            body="It should raise ValueError.",
            out_dir=tmp_path / "out",
            repo="acme/calc",
            policy=policy or EffectivePolicy(),
        )
        outcome = await solve(RunPorts.from_settings(settings), job)
        if requests is not None:
            requests.extend(server.requests)
        return outcome


async def test_a_real_fix_is_accepted(tmp_path: Path) -> None:
    outcome = await run(tmp_path, [read("calc.py"), FIX, DONE])
    assert outcome.patch_ready, outcome.reason
    assert outcome.changes == (
        AppliedFile("calc.py", "100644", (CALC[:14] + GUARD + CALC[14:]).encode()),
    )
    assert verified(outcome)["held"]
    assert compared(outcome)["fixed"] == [FAILING]
    assert compared(outcome)["broken"] == []
    assert suite(outcome, "baseline")["tests"] == {FAILING: "failed", PASSING: "passed"}
    assert suite(outcome, "verification")["tests"] == {FAILING: "passed", PASSING: "passed"}
    assert outcome.report["gate"] == {"passed": True, "findings": []}
    assert "Rule `fail_to_pass` held" in (tmp_path / "out" / "report.md").read_text()
    assert "follow_up" not in outcome.report  # only a follow-up's report has the key
    assert outcome.follow_up is None


CHEAT = [
    read("tests/test_calc.py"),
    edit("tests/test_calc.py", "    with pytest.raises(ValueError):\n        mean([])\n",
         "    assert True\n"),
    read("calc.py"),
    edit("calc.py", "def mean", "# average\ndef mean"),
    DONE,
]  # fmt: skip


async def test_an_edited_test_does_not_certify_its_fix(tmp_path: Path) -> None:
    outcome = await run(tmp_path, CHEAT)
    assert not outcome.patch_ready
    verification = verified(outcome)
    assert verification["restored"] == ["tests/test_calc.py"]
    assert verification["effective_files"] == ["calc.py"]
    assert compared(outcome)["still_failing"] == [FAILING]
    assert compared(outcome)["fixed"] == []
    assert "verification failed (fail_to_pass): the patch changes nothing" not in outcome.reason
    assert "none of the 1 test(s) that fail on the base passes with the patch" in outcome.reason
    gate = outcome.report["gate"]
    assert gate is not None
    kinds = {(f["kind"], f["severity"]) for f in gate["findings"]}
    assert ("protected_change", "warn") in kinds


async def test_block_mode_fails_the_gate_for_an_edited_test(tmp_path: Path) -> None:
    policy = EffectivePolicy(verify=VerifyPolicy(on_protected_change="block"))
    outcome = await run(tmp_path, [*CHEAT[:2], read("calc.py"), FIX, DONE], policy)
    assert not outcome.patch_ready
    assert outcome.reason.startswith("the gate blocked the patch: ")
    assert "tests/test_calc.py" in outcome.reason
    # The real fix in calc.py still shows in the evidence, with the test restored.
    assert compared(outcome)["fixed"] == [FAILING]


async def test_a_patch_that_breaks_a_passing_test_is_refused(tmp_path: Path) -> None:
    breaks = edit("calc.py", "    return sum(xs) / len(xs)",
                  GUARD + "    return sum(xs) / len(xs) + 1")  # fmt: skip
    outcome = await run(tmp_path, [read("calc.py"), breaks, DONE])
    assert not outcome.patch_ready
    comparison = compared(outcome)
    assert comparison["fixed"] == [FAILING]
    assert comparison["broken"] == [PASSING]
    assert f"1 test(s) that passed on the base do not pass with the patch: {PASSING}" in (
        outcome.reason
    )


async def test_a_patch_with_no_effect_is_refused(tmp_path: Path) -> None:
    no_effect = edit("calc.py", "def mean(xs):\n", "def mean(xs):\n    # TODO: empty lists\n")
    outcome = await run(tmp_path, [read("calc.py"), no_effect, DONE])
    assert not outcome.patch_ready
    assert compared(outcome)["still_failing"] == [FAILING]
    assert "none of the 1 test(s) that fail on the base passes with the patch" in outcome.reason
    # With `no_regressions` the same patch passes: nothing broke.
    relaxed = EffectivePolicy(verify=VerifyPolicy(require="no_regressions"))
    again = await run(tmp_path / "relaxed", [read("calc.py"), no_effect, DONE], relaxed)
    assert again.patch_ready, again.reason


NEW_TEST = (
    "import pytest\n\nfrom calc import mean\n\n\n"
    "def test_empty_list():\n    with pytest.raises(ValueError):\n        mean([])\n"
)


async def test_a_new_test_of_the_agent_is_evidence(tmp_path: Path) -> None:
    only_passing = TESTS.split("\n\n\ndef test_empty", maxsplit=1)[0] + "\n"
    write = Turn(calls=[("Write", {"file_path": "/workspace/tests/test_empty.py",
                                   "content": NEW_TEST})])  # fmt: skip
    outcome = await run(tmp_path, [read("calc.py"), FIX, write, DONE], tests=only_passing)
    assert outcome.patch_ready, outcome.reason
    verification = verified(outcome)
    new = "tests/test_empty.py::test_empty_list"
    assert compared(outcome)["fixed"] == []
    assert compared(outcome)["new_evidence"] == [new]
    assert new not in suite(outcome, "baseline")["tests"]
    assert suite(outcome, "new_on_base")["tests"] == {new: "failed"}
    assert suite(outcome, "new_on_patched")["tests"] == {new: "passed"}
    assert verification["new_test_files"] == ["tests/test_empty.py"]
    assert verification["restored"] == []
    assert any("tests the agent wrote" in limit for limit in verification["limits"])


async def test_a_hanging_suite_is_bounded_and_reported(tmp_path: Path) -> None:
    hangs = TESTS + "\n\ndef test_hangs():\n    import time\n    time.sleep(600)\n"
    policy = EffectivePolicy(verify=VerifyPolicy(timeout_seconds=3))
    outcome = await run(tmp_path, [read("calc.py"), FIX, DONE], policy, tests=hangs)
    assert not outcome.patch_ready
    assert suite(outcome, "verification")["timed_out"]
    assert suite(outcome, "verification")["summary"] == "timed out after 3 s"
    assert "timed out after 3 s" in outcome.reason
    assert outcome.report["durations"]["verify"] < 60


ALSO_BROKEN = TESTS + "\n\ndef test_unrelated():\n    assert 1 == 2\n"


@pytest.mark.parametrize(
    ("require", "ready"), [("fail_to_pass", True), ("no_regressions", True), ("all_pass", False)]
)
async def test_an_unrelated_failure_only_matters_for_all_pass(
    tmp_path: Path, require: str, ready: bool
) -> None:
    policy = EffectivePolicy(verify=VerifyPolicy(require=require))  # type: ignore[arg-type]
    outcome = await run(tmp_path, [read("calc.py"), FIX, DONE], policy, tests=ALSO_BROKEN)
    assert outcome.patch_ready is ready, outcome.reason
    assert compared(outcome)["still_failing"] == ["tests/test_calc.py::test_unrelated"]


async def test_require_none_accepts_any_nonempty_patch(tmp_path: Path) -> None:
    no_effect = edit("calc.py", "def mean(xs):\n", "def mean(xs):\n    # TODO\n")
    policy = EffectivePolicy(verify=VerifyPolicy(require="none"))
    outcome = await run(tmp_path, [read("calc.py"), no_effect, DONE], policy)
    assert outcome.patch_ready, outcome.reason
    assert verified(outcome)["reason"] == "the policy requires no test evidence"


async def test_the_policy_drives_setup_and_the_agent(tmp_path: Path) -> None:
    policy = EffectivePolicy.model_validate(
        {
            "agent": {"temperature": 0.2, "top_k": 5, "max_tokens_per_turn": 4096,
                      "enable_thinking": False},
            "sandbox": {"setup": ["printf 'made by setup\\n' > GENERATED.txt",
                                  "mkdir -p build && touch build/cache.bin"]},
        }
    )  # fmt: skip
    seen: list[dict[str, Any]] = []
    script = [
        Turn(calls=[("Bash", {"command": "cat GENERATED.txt; git log --oneline"})]),
        read("calc.py"),
        FIX,
    ]
    outcome = await run(tmp_path, [*script, DONE], policy, requests=seen)
    assert outcome.patch_ready, outcome.reason
    assert (seen[0]["temperature"], seen[0]["top_k"], seen[0]["max_tokens"]) == (0.2, 5, 4096)
    assert seen[0]["chat_template_kwargs"] == {"enable_thinking": False}
    bash_result = seen[1]["messages"][-1]["content"]
    assert bash_result.startswith("made by setup\n")
    assert "FrogNano setup" in bash_result
    # What setup made is part of the base, so it is in no diff.
    assert patched_files(outcome) == ["calc.py"]


async def test_a_failing_setup_ends_the_run_with_its_output(tmp_path: Path) -> None:
    policy = EffectivePolicy.model_validate(
        {"sandbox": {"setup": ["echo 'no compiler here' >&2; exit 3"]}}
    )
    outcome = await run(tmp_path, [DONE], policy)
    assert not outcome.patch_ready
    assert outcome.reason == (
        "the policy's setup command `echo 'no compiler here' >&2; exit 3` exited 3:\n"
        "no compiler here"
    )
    assert outcome.report["steps"] == 0
    assert "no compiler here" in (tmp_path / "out" / "report.md").read_text()


async def test_a_tree_that_is_not_a_checkout(tmp_path: Path) -> None:
    """A GitHub tarball extracted by the worker has no .git: the caller says what to skip."""
    tree = tmp_path / "tree"
    make_repo(tree)
    shutil.rmtree(tree / ".git")
    (tree / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (tree / "run.sh").chmod(0o755)
    (tree / "link").symlink_to("calc.py")
    script = [
        read("calc.py"),
        FIX,
        Turn(
            calls=[("Bash", {"command": "chmod -x run.sh && ln -sfn tests link && rm pytest.ini"})]
        ),
        DONE,
    ]
    with ScriptedModelServer(script) as server:
        job = SolveJob(
            repo_dir=tree,
            title="t",
            body="b",
            out_dir=tmp_path / "out",
            repo="acme/calc",
            exclude=(),
            policy=EffectivePolicy.model_validate({"gate": {"allow_symlinks": True}}),
        )
        outcome = await solve(RunPorts.from_settings(Settings(model_base_url=server.base_url)), job)
    assert outcome.patch_ready, outcome.reason
    by_path = {change.path: change for change in outcome.changes}
    assert by_path["link"] == AppliedFile("link", "120000", b"tests")
    assert by_path["run.sh"].mode == "100644"
    # pytest.ini is part of the test harness: put back for verification, left out of the PR.
    assert "pytest.ini" not in by_path
    assert verified(outcome)["restored"] == ["pytest.ini"]
    assert by_path["calc.py"].content is not None


WRITER = (
    "import pathlib\n\nROOT = pathlib.Path(__file__).parents[1]\n"
    "(ROOT / '.git').mkdir(exist_ok=True)\n(ROOT / '.git' / 'HEAD').write_text('planted')\n"
    "(ROOT / 'calc.py').write_text('# planted\\n' + (ROOT / 'calc.py').read_text())\n"
    "(ROOT / 'planted.py').write_text('x = 1\\n')\n\n\n"
    "def test_writer():\n    assert True\n"
)


async def test_what_tests_write_during_the_runs_is_never_published(tmp_path: Path) -> None:
    """The published files are the base plus the gated diff, computed before any code ran:
    a test that rewrites the tree and plants a .git in every run it is part of changes none
    of them."""
    write = Turn(calls=[("Write", {"file_path": "/workspace/tests/test_writer.py",
                                   "content": WRITER})])  # fmt: skip
    outcome = await run(tmp_path, [read("calc.py"), FIX, write, DONE])
    assert outcome.patch_ready, outcome.reason
    assert outcome.changes == (
        AppliedFile("calc.py", "100644", (CALC[:14] + GUARD + CALC[14:]).encode()),
        AppliedFile("tests/test_writer.py", "100644", WRITER.encode()),
    )
    assert suite(outcome, "new_on_patched")["tests"] == {
        "tests/test_writer.py::test_writer": "passed"
    }


async def test_a_setup_that_fails_only_in_verification_ends_the_run_readably(
    tmp_path: Path,
) -> None:
    """Verification trees have no .git, so setup that needs one (setuptools_scm, say) fails
    there even though it passed in the agent's sandbox: the run says so, with the output."""
    policy = EffectivePolicy.model_validate(
        {"sandbox": {"setup": ["test -d .git || { echo 'no .git here' >&2; exit 4; }"]}}
    )
    outcome = await run(tmp_path, [read("calc.py"), FIX, DONE], policy)
    assert not outcome.patch_ready
    assert outcome.reason.startswith("the policy's setup command `test -d .git")
    assert "exited 4:\nno .git here" in outcome.reason
    assert outcome.report["error"] == outcome.reason
    assert patched_files(outcome) == ["calc.py"]
