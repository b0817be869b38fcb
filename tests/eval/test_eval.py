"""`frognano eval` end to end: gold validation, predictions, agent runs, pass@k, resuming."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from frognano.eval.instances import Instance
from tests.eval.agents import Agents
from tests.eval.dataset import Dataset, build_dataset
from tests.eval.run import eval_argv, eval_env, run_eval
from tests.eval.wandb_file import summary as wandb_summary
from tests.fakes.model_server import ScriptedModelServer

pytestmark = pytest.mark.xdist_group("eval")

INFL1, INFL2, INFL3 = "pypi__inflection-1", "pypi__inflection-2", "pypi__inflection-3"
TOOLZ1, TOOLZ2 = "pypi__toolz-1", "pypi__toolz-2"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return build_dataset(tmp_path_factory.mktemp("dataset"))


def _instance(dataset: Dataset, instance_id: str) -> Instance:
    return next(i for i in dataset.instances if i.instance_id == instance_id)


def test_gold_validation_passes_every_sound_instance_and_names_the_broken_one(
    dataset: Dataset, tmp_path: Path
) -> None:
    offline = {"WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    run = run_eval(
        dataset.instances_path, dataset.repos, tmp_path / "gold", "--gold",
        "--wandb-project", "frognano-tests", env=offline,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr
    summary = run.summary
    assert summary["resolved_ids"] == sorted(dataset.gold_resolved)
    assert summary["unresolved_ids"] == sorted(dataset.broken)
    assert summary["error_ids"] == summary["empty_patch_ids"] == summary["incomplete_ids"] == []
    assert summary["model_name_or_path"] == "gold"
    (broken,) = dataset.broken
    assert f"broken: {broken}: unresolved" in " ".join(run.stderr.split())
    failed = run.result(broken)["attempts"][0]["official"]["fail_to_pass"]["failure"]
    assert failed == _instance(dataset, broken).fail_to_pass
    # SWE-bench's per-instance report, and the predictions are the gold patches.
    report = json.loads((run.out / "instances" / INFL1 / "report.json").read_text())
    assert report[INFL1]["resolved"] is True
    assert report[INFL1]["tests_status"]["FAIL_TO_PASS"]["failure"] == []
    patches = {p["instance_id"]: p["model_patch"] for p in run.predictions()}
    assert patches == {i.instance_id: i.patch for i in dataset.instances}
    # The wandb extra, offline: the run's figures and a table of the instances, on disk.
    (logged,) = (run.out / "wandb").glob("offline-run-*/run-*.wandb")
    figures = wandb_summary(logged)
    assert figures["resolved"] == len(dataset.gold_resolved)
    assert figures["resolved_rate"] == pytest.approx(len(dataset.gold_resolved) / 5)
    assert (figures["instances"], figures["instance_table/nrows"]) == (5, 5)


def test_predictions_are_graded_and_instances_without_one_left_out(
    dataset: Dataset, tmp_path: Path
) -> None:
    infl1 = _instance(dataset, INFL1)
    # SWE-agent's form: an object keyed by instance id.
    file = tmp_path / "preds.json"
    rows = {
        INFL1: {"instance_id": INFL1, "model_name_or_path": "m/x", "model_patch": infl1.patch},
        INFL2: {"instance_id": INFL2, "model_name_or_path": "m/x", "model_patch": infl1.patch},
        TOOLZ1: {"instance_id": TOOLZ1, "model_name_or_path": "m/x", "model_patch": ""},
    }
    file.write_text(json.dumps(rows))
    run = run_eval(
        dataset.instances_path, dataset.repos, tmp_path / "p", "--predictions", str(file)
    )
    assert run.returncode == 0, run.stderr
    summary = run.summary
    assert summary["total_instances"] == 3
    assert "2 instance(s) have no prediction and are left out" in run.stderr
    assert summary["resolved_ids"] == [INFL1]
    # inflection-1's fix on inflection-2's base: the context is there, the bug is not fixed.
    assert summary["unresolved_ids"] + summary["error_ids"] == [INFL2]
    assert summary["empty_patch_ids"] == [TOOLZ1]
    assert summary["model_name_or_path"] == "m/x"
    assert not (run.out / "instances" / TOOLZ1 / "report.json").exists()


def test_agent_runs_give_exactly_the_resolved_ids_of_what_the_agents_did(
    dataset: Dataset, tmp_path: Path
) -> None:
    plan = {INFL1: ["right"], INFL2: ["wrong"], INFL3: ["right"], TOOLZ1: ["nothing"]}
    plan[TOOLZ2] = ["tests_only"]
    agents = Agents(dataset.instances, plan)  # type: ignore[arg-type]
    # Each repository gets its own policy, as the App would resolve it for an issue there.
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "10-toolz.yaml").write_text(
        'version: 1\nrepos:\n  - match: "pypi/toolz"\n    agent:\n      max_steps: 7\n'
    )
    with ScriptedModelServer(default=agents) as server:
        run = run_eval(
            dataset.instances_path, dataset.repos, tmp_path / "a", "--workers", "2",
            "--policy-dir", str(policies), server=server,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    steps = {
        instance_id: json.loads(
            (run.out / "instances" / instance_id / "attempt-1" / "report.json").read_text()
        )["max_steps"]
        for instance_id in (INFL1, TOOLZ2)
    }
    assert steps == {INFL1: 150, TOOLZ2: 7}
    summary = run.summary
    # inflection-3 is broken: its hidden test expects a wrong value, whatever the agent does.
    assert summary["resolved_ids"] == [INFL1]
    assert summary["unresolved_ids"] == [INFL2, INFL3, TOOLZ2]
    assert summary["empty_patch_ids"] == [TOOLZ1]
    assert summary["error_ids"] == []
    first = run.result(INFL1)["attempts"][0]
    assert first["verdict"]["ready"] is True  # its own test fails on the base, passes with it
    assert first["steps"] == 2
    assert first["prompt_tokens"] > 0
    assert run.result(INFL2)["attempts"][0]["verdict"]["ready"] is False
    assert summary["agreement"]["ready_resolved"] == 1
    folder = run.out / "instances" / INFL1 / "attempt-1"
    for name in ("patch.diff", "trajectory.jsonl", "trajectory.html", "report.json"):
        assert (folder / name).is_file(), name
    assert "passed" in (folder / "test_output.txt").read_text()
    page = (run.out / "index.html").read_text()
    assert 'href="instances/pypi__inflection-1/attempt-1/trajectory.html"' in page


def test_pass_at_k_and_best_of_k_on_scripted_attempts(dataset: Dataset, tmp_path: Path) -> None:
    plan = {INFL1: ["wrong", "right", "nothing"], TOOLZ2: ["right", "tests_only", "right"]}
    agents = Agents(dataset.instances, plan)  # type: ignore[arg-type]
    with ScriptedModelServer(default=agents) as server:
        run = run_eval(
            dataset.instances_path, dataset.repos, tmp_path / "k",
            "--attempts", "3", "--workers", "2", "--instance-ids", f"{INFL1},{TOOLZ2}",
            server=server,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = run.summary

    def estimate(n: int, c: int, k: int) -> float:
        return 1.0 if n - c < k else 1 - math.comb(n - c, k) / math.comb(n, k)

    # inflection-1: one right of three; toolz-2: two right of three.
    for k in (1, 2, 3):
        expected = (estimate(3, 1, k) + estimate(3, 2, k)) / 2
        assert summary["pass_at_k"][str(k)] == pytest.approx(expected, abs=1e-6)
    assert summary["pass_at_k"]["1"] == pytest.approx(0.5)
    # FrogNano's own evidence (no hidden test) picks a right attempt for both.
    assert summary["best_of_k"]["resolved_ids"] == [INFL1, TOOLZ2]
    for instance_id in (INFL1, TOOLZ2):
        result = run.result(instance_id)
        picked = result["attempts"][result["chosen"]]
        assert picked["verdict"]["ready"]
        assert picked["official"]["status"] == "resolved"
    lines = (run.out / "predictions-attempt-1.jsonl").read_text().splitlines()
    assert len(lines) == 2


@pytest.mark.parametrize(
    ("stop", "status"),
    [(signal.SIGINT, 130), (signal.SIGKILL, -signal.SIGKILL)],
    ids=["ctrl-c", "kill"],
)
def test_a_stopped_run_resumes_and_never_redoes_a_finished_instance(
    dataset: Dataset, tmp_path: Path, stop: signal.Signals, status: int
) -> None:
    plan = {INFL1: ["right", "right"], TOOLZ2: ["right", "right"]}
    agents = Agents(dataset.instances, plan)  # type: ignore[arg-type]
    agents.hold[TOOLZ2] = held = threading.Event()
    out = tmp_path / "r"
    ids = ("--instance-ids", f"{INFL1},{TOOLZ2}")
    with ScriptedModelServer(default=agents) as server:
        process = subprocess.Popen(
            eval_argv(dataset.instances_path, dataset.repos, out, *ids),
            env=eval_env(tmp_path / "r-scratch", server),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # One worker: inflection-1 runs first; toolz-2's first turn waits for the test.
            assert agents.held.wait(timeout=300), "the second instance never started"
            process.send_signal(stop)  # Ctrl-C, or the machine's OOM killer
            _, stderr = process.communicate(timeout=120)
        finally:
            held.set()
            if process.poll() is None:
                process.kill()
        assert process.returncode == status, stderr
        finished = out / "instances" / INFL1 / "result.json"
        kept = finished.read_bytes()
        assert not (out / "instances" / TOOLZ2 / "result.json").exists()
        summary = json.loads((out / "summary.json").read_text())
        assert summary["submitted_ids"] == [INFL1]
        assert summary["incomplete_ids"] == [TOOLZ2]

        del agents.hold[TOOLZ2]
        agents.requests.clear()
        again = run_eval(dataset.instances_path, dataset.repos, out, *ids, server=server)
    assert again.returncode == 0, again.stderr
    assert "1 instance(s) finished before are kept" in again.stderr
    assert INFL1 not in agents.requests  # never asked again
    assert finished.read_bytes() == kept
    assert again.summary["resolved_ids"] == [INFL1, TOOLZ2]


def test_a_failed_run_is_an_error_and_is_run_again_on_resume(
    dataset: Dataset, tmp_path: Path
) -> None:
    agents = Agents(dataset.instances, {INFL1: ["refused", "right"]})
    out = tmp_path / "f"
    with ScriptedModelServer(default=agents) as server:
        first = run_eval(dataset.instances_path, dataset.repos, out, "--instance-ids", INFL1,
                         server=server)  # fmt: skip
        assert first.returncode == 0, first.stderr
        assert first.summary["error_ids"] == [INFL1]  # never an empty patch
        attempt = first.result(INFL1)["attempts"][0]
        assert attempt["official"]["reason"].startswith("the agent's run failed: ")
        assert attempt["error"]
        again = run_eval(dataset.instances_path, dataset.repos, out, "--instance-ids", INFL1,
                         server=server)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert again.summary["resolved_ids"] == [INFL1]
    assert [b for _, b in agents.started] == ["refused", "right"]


def test_no_model_server_stops_the_agent_run_before_any_instance(
    dataset: Dataset, tmp_path: Path
) -> None:
    out = tmp_path / "n"
    run = run_eval(dataset.instances_path, dataset.repos, out,
                   env={"FROGNANO_MODEL_BASE_URL": "http://127.0.0.1:9/v1"})  # fmt: skip
    assert run.returncode == 1
    assert "no model server answers at http://127.0.0.1:9/v1" in run.stderr
    assert "frognano model check" in run.stderr
    assert not (out / "instances").exists()


@pytest.mark.parametrize(
    ("more", "message"),
    [
        (("--gold", "--predictions", "{instances}"), "--gold and --predictions are two modes"),
        (("--gold", "--attempts", "2"), "--attempts counts agent runs"),
        (("--gold", "--filter", "("), "--filter is not a regular expression"),
        (("--gold", "--instance-ids", "nope"), "--instance-ids names unknown instances: nope"),
        (("--gold", "--out", "{instances}"), "is a file: name a folder"),
    ],
)
def test_bad_usage_says_what_to_fix_and_writes_nothing(
    dataset: Dataset, tmp_path: Path, more: tuple[str, ...], message: str
) -> None:
    argv = [m.format(instances=dataset.instances_path) for m in more]
    out = tmp_path / "u"
    if "--out" in argv:
        argv = [a for a in argv if a != "--out"]
        out = Path(argv.pop())  # the instances file itself
    run = run_eval(dataset.instances_path, dataset.repos, out, *argv)
    assert run.returncode == 2
    assert message in " ".join(run.stderr.split())
    assert not (tmp_path / "u").exists()
