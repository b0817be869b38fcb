"""SWE-bench's own harness code reads `frognano eval`'s files and agrees with its summary."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import STRICT
from tests.eval.dataset import Dataset, build_dataset
from tests.eval.run import run_eval

pytestmark = pytest.mark.xdist_group("eval")

ENV_VAR = "FNTEST_SWEBENCH_PYTHON"
SCRIPT = Path(__file__).with_name("swebench_report.py")
KEYS = (
    "total_instances", "submitted_instances", "completed_instances", "resolved_instances",
    "unresolved_instances", "empty_patch_instances", "error_instances", "completed_ids",
    "incomplete_ids", "empty_patch_ids", "submitted_ids", "resolved_ids", "unresolved_ids",
    "error_ids", "schema_version",
)  # fmt: skip


def _swebench() -> str:
    python = os.environ.get(ENV_VAR)
    if not python:
        message = f"{ENV_VAR} must name the Python of an environment with swebench 5.0.2"
        if STRICT:
            pytest.fail(message)
        pytest.skip(message)
    return python


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return build_dataset(tmp_path_factory.mktemp("dataset"))


def test_swebench_reads_the_predictions_and_reports_what_the_summary_says(
    dataset: Dataset, tmp_path: Path
) -> None:
    python = _swebench()
    gold = {i.instance_id: i.patch for i in dataset.instances}
    infl1, infl2, toolz1 = "pypi__inflection-1", "pypi__inflection-2", "pypi__toolz-1"
    patches = {
        **gold,
        toolz1: "",  # an empty patch
        infl2: gold[infl1].replace("@@ -", "@@ -9", 1),  # a patch that does not apply
    }
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(
        "".join(
            json.dumps({"instance_id": k, "model_name_or_path": "org/model", "model_patch": v})
            + "\n"
            for k, v in patches.items()
        )
    )
    run = run_eval(
        dataset.instances_path, dataset.repos, tmp_path / "out", "--predictions", str(predictions)
    )
    assert run.returncode == 0, run.stderr
    work = tmp_path / "swebench"
    work.mkdir()
    done = subprocess.run(
        [python, str(SCRIPT), str(run.out), str(dataset.instances_path), str(work)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout.split("REPORT ", 1)[1])
    ours = run.summary
    assert {key: ours[key] for key in KEYS} == {key: theirs[key] for key in KEYS}
    # The cases above are all there: what agreement means is not an empty run.
    assert ours["empty_patch_ids"] == [toolz1]
    assert ours["error_ids"] == [infl2]
    assert ours["unresolved_ids"] == sorted(dataset.broken)
    assert len(ours["resolved_ids"]) == 2
