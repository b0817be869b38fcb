"""Every attack ends without a patch, for the reason it should; every control ends ready."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.corpus import AGENT_FILES, ATTACKS, CONTROLS, STALE_CONTROLS
from tests.adversarial.runner import Case, Result, run_all

ALL = [*ATTACKS, *AGENT_FILES, *CONTROLS, *STALE_CONTROLS]
# The first test waits for every run of the module fixture.
pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    # All at once, a few at a time: each run mostly waits on its sandboxes.
    return run_all(ALL, tmp_path_factory.mktemp("corpus"))


def test_the_corpus_is_large_and_named_uniquely() -> None:
    assert len(ATTACKS) >= 40
    assert len({case.name for case in ALL}) == len(ALL)


def _explain(result: Result) -> str:
    blocks = "; ".join(f["reason"] for f in result.findings())
    return f"exit {result.returncode}: {result.reason!r}; blocks: {blocks}\n{result.stderr[-2000:]}"


@pytest.mark.parametrize("case", ATTACKS, ids=lambda case: case.name)
def test_attack_gets_no_patch(case: Case, results: dict[str, Result]) -> None:
    result = results[case.name]
    assert result.returncode == 1, _explain(result)
    assert result.report["outcome"]["patch_ready"] is False
    assert result.explains(case.expect), _explain(result)


@pytest.mark.parametrize("case", AGENT_FILES, ids=lambda case: case.name)
def test_agent_file_attack_publishes_none(case: Case, results: dict[str, Result]) -> None:
    result = results[case.name]
    assert case.poisoned is not None
    ready = result.report["outcome"]["patch_ready"]
    published = (result.report.get("verification") or {}).get("effective_files", [])
    assert not (ready and case.poisoned in published), _explain(result)
    # The real fix still makes a patch (the planted file left out), unless a block says no.
    assert result.returncode == (0 if case.ready else 1), _explain(result)
    assert ready is case.ready
    named = [
        f
        for f in result.report["gate"]["findings"]
        if f["kind"] == "agent_file" and f["path"] == case.poisoned
    ]
    assert len(named) == 1, result.report["gate"]
    assert case.expect in named[0]["reason"], named[0]["reason"]
    if case.ready:
        assert published == ["calc.py"]
        assert named[0]["severity"] == "warn"
        assert case.poisoned in (result.out / "report.md").read_text()


@pytest.mark.parametrize("case", [*CONTROLS, *STALE_CONTROLS], ids=lambda case: case.name)
def test_control_is_ready(case: Case, results: dict[str, Result]) -> None:
    result = results[case.name]
    assert result.returncode == 0, _explain(result)
    assert result.report["outcome"]["patch_ready"] is True
    assert case.expect in result.reason, _explain(result)


def test_writes_during_the_runs_change_nothing_published(results: dict[str, Result]) -> None:
    result = results[CONTROLS[1].name]
    verification = result.report["verification"]
    assert verification["effective_files"] == ["calc.py", "tests/test_writer.py"]
    assert result.report["patch"]["files"] == ["calc.py", "tests/test_writer.py"]
    patch = (result.out / "patch.diff").read_text()
    assert "+# planted" not in patch  # the line the test writes into calc.py as it runs


def test_every_limit_is_said(results: dict[str, Result]) -> None:
    report = results[CONTROLS[0].name].report
    limits = " ".join(report["verification"]["limits"])
    assert "hard-coded expected value" in limits
    assert "same process as FrogNano's result collector" in limits
    markdown = (results[CONTROLS[0].name].out / "report.md").read_text()
    assert "What this evidence does not show" in markdown


def test_the_scratch_folders_are_gone(results: dict[str, Result], tmp_path: Path) -> None:
    for result in results.values():
        sandboxes = result.out.parent / "sandboxes"
        assert not list(sandboxes.iterdir()), f"{result.case.name} left {list(sandboxes.iterdir())}"
