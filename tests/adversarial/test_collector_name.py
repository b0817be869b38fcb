"""Attacks on how the collector is found: a module of its name in the tree, before it on sys.path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adversarial.corpus import FORCE_PASS_HOOK, NO_FIX, NOOP
from tests.adversarial.runner import BASE, Case, Result, run_all

# ruff: noqa: E501 - the attack scripts read best as the shell lines they are
FORGED = (
    "import glob\n\n"
    "_real = sorted(glob.glob('/opt/frognano/frognano_collector.py')"
    " + glob.glob('/tmp/.frognano-collector-*/frognano_collector.py'))[0]\n"
    "exec(compile(open(_real).read(), _real, 'exec'))\n\n" + FORCE_PASS_HOOK
)
"""FrogNano's own collector, run from a module of the same name, with every test made to pass
before it reports: records with the right token, a consistent session, exit status 0."""
SRC_LAYOUT = {
    "src/calc.py": BASE["calc.py"],
    "tests/test_calc.py": BASE["tests/test_calc.py"],
    "pyproject.toml": BASE["pyproject.toml"],
}


WARN_ONLY = "  gate:\n    tampering: warn\n"
"""The gate's tampering check would block the forgery's hook: with it only warning, what stands
is the harness rule, which holds whatever the policy says."""


def _plant(path: str) -> str:
    folder = path.rpartition("/")[0]
    return (f"mkdir -p {folder}\n" if folder else "") + f"cat > {path} <<'EOF'\n{FORGED}EOF\n"


ATTACKS = [
    Case(
        "a forged frognano_collector.py at the root, first on sys.path under python -m",
        _plant("frognano_collector.py") + NOOP,
        NO_FIX,
        policy=WARN_ONLY,
    ),
    Case(
        "a forged frognano_collector package at the root",
        _plant("frognano_collector/__init__.py") + NOOP,
        NO_FIX,
        policy=WARN_ONLY,
    ),
    Case(
        "a forged frognano_collector.py in src/, which the command's PYTHONPATH names first",
        _plant("src/frognano_collector.py") + "printf '\\n# looked at this\\n' >> src/calc.py\n",
        NO_FIX,
        files=SRC_LAYOUT,
        command="PYTHONPATH=src:$PYTHONPATH python -m pytest -q",
        policy=WARN_ONLY,
    ),
]
CONTROLS = [
    Case(
        "the fix on a src-layout project whose command sets PYTHONPATH=src",
        "sed -i '0,/return a - b/s//return a + b/' src/calc.py\n",
        "test(s) that fail on the base pass with the patch",
        ready=True,
        files=SRC_LAYOUT,
        command="PYTHONPATH=src python -m pytest -q",
    ),
]
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    return run_all([*ATTACKS, *CONTROLS], tmp_path_factory.mktemp("collector-name"))


def _explain(result: Result) -> str:
    return f"exit {result.returncode}: {result.reason!r}\n{result.stderr[-2000:]}"


@pytest.mark.parametrize("case", ATTACKS, ids=lambda case: case.name)
def test_a_module_of_the_collector_s_name_is_put_back(
    case: Case, results: dict[str, Result]
) -> None:
    result = results[case.name]
    assert result.report["outcome"]["patch_ready"] is False, _explain(result)
    assert result.explains(case.expect), _explain(result)
    findings = result.report["gate"]["findings"]
    assert any(
        f["kind"] == "protected_change" and "frognano_collector" in f["path"] for f in findings
    ), findings


@pytest.mark.parametrize("case", CONTROLS, ids=lambda case: case.name)
def test_a_src_layout_command_runs_as_written(case: Case, results: dict[str, Result]) -> None:
    result = results[case.name]
    assert result.returncode == 0, _explain(result)
    assert case.expect in result.reason, _explain(result)


def test_nothing_is_left_behind(results: dict[str, Result], tmp_path: Path) -> None:
    for result in results.values():
        assert not list((result.out.parent / "sandboxes").iterdir())
