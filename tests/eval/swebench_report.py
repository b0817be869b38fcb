"""Run in SWE-bench's own environment: its run report of an eval folder, as JSON on stdout.

Usage: python swebench_report.py EVAL_OUT INSTANCES.jsonl WORKDIR

It loads predictions.jsonl with SWE-bench's predictions loader, lays out each instance's
report.json and test output where its harness writes them (logs/run_evaluation/RUN/MODEL/ID),
and calls its `make_run_report`. Only the standard library and swebench are imported here.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from swebench.harness.constants import (  # type: ignore[import-not-found]
    LOG_REPORT,
    LOG_TEST_OUTPUT,
    RUN_EVALUATION_LOG_DIR,
)
from swebench.harness.reporting import make_run_report  # type: ignore[import-not-found]
from swebench.harness.utils import get_predictions_from_file  # type: ignore[import-not-found]


def main() -> None:
    out, instances, work = (Path(arg).resolve() for arg in sys.argv[1:4])
    os.chdir(work)  # SWE-bench's log folder is relative to the working folder
    dataset = [json.loads(line) for line in instances.read_text().splitlines() if line.strip()]
    predictions = {
        p["instance_id"]: p
        for p in get_predictions_from_file(str(out / "predictions.jsonl"), "unused", "test")
    }
    for instance_id, prediction in predictions.items():
        source = out / "instances" / instance_id
        model = prediction["model_name_or_path"].replace("/", "__")
        target = RUN_EVALUATION_LOG_DIR / "frognano" / model / instance_id
        target.mkdir(parents=True)
        if (source / "report.json").exists():
            shutil.copy(source / "report.json", target / LOG_REPORT)
        output = source / "attempt-1" / "test_output.txt"
        if output.exists():
            shutil.copy(output, target / LOG_TEST_OUTPUT)
    path = make_run_report(predictions, dataset, "frognano", report_dir=str(work))
    sys.stdout.write("REPORT " + Path(path).read_text())


if __name__ == "__main__":
    main()
