"""checkov over our manifests and Dockerfiles, with every skipped check and its reason here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import STRICT

# Set by .ci/run: checkov needs an older `packaging` than pytest, so it has its own venv.
ENV_VAR = "FNTEST_CHECKOV"

# The only checks we do not pass, per object kind we produce, with the reason. Nothing else
# is skipped; a new failure fails the tests until it is fixed or argued for here.
SKIPS: dict[str, dict[str, str]] = {
    # The sandbox pod frognano.sandbox.kubernetes.backend creates (and the network probe pod).
    "sandbox-pod": {
        "CKV_K8S_8": "no liveness probe: the container only runs `tini -- sleep infinity`; the "
        "backend's own exec calls are its liveness check and it deletes a pod that fails them",
        "CKV_K8S_9": "no readiness probe: nothing serves traffic; the backend waits for the "
        "Running phase and then proves readiness with a first exec",
        "CKV2_K8S_6": "the deny-all NetworkPolicy covering this pod is a namespace object of "
        "the chart (sandbox-networkpolicy.yaml), checked with the chart, not with the pod",
    },
    # Every object `helm template charts/frognano` renders (defaults, tests/chart/values-*.yaml).
    "chart": {
        "CKV_K8S_38": "the worker mounts its ServiceAccount token to create, exec into and delete "
        "sandbox pods, and sglang-router (sglang.replicas > 1) to list and watch the SGLang pods; "
        "each token is bound to one namespaced Role, and every other pod mounts none",
        "CKV_K8S_43": "the default values name images by tag because the chart cannot know the "
        "digests of the images an installer mirrors; image.digest, sglang.image.digest, "
        "redis.image.digest and sglang.router.image.digest pin them, docs/deploy.md asks for "
        "that in production, and a chart test requires it in tests/chart/values-*.yaml",
        "CKV_K8S_15": "pullPolicy Always is only needed for mutable tags; with a digest (see "
        "CKV_K8S_43) IfNotPresent pulls exactly that image, and the default keeps a node "
        "from pulling the multi-gigabyte SGLang image again at every restart",
        "CKV_K8S_35": "with redis.external.existingSecret the Redis URL (with its password) is "
        "an environment variable from a secretKeyRef, because FrogNano reads it only from "
        "FROGNANO_REDIS_URL (there is no _FILE form); the GitHub key and the webhook secret "
        "are mounted files",
    },
    # Dockerfile (the service image) and deploy/sandbox/Dockerfile (the example sandbox image).
    "dockerfile": {},
}


@dataclass(frozen=True)
class Failure:
    check_id: str
    name: str
    resource: str
    file: str

    def __str__(self) -> str:
        return f"{self.check_id} {self.name} ({self.resource} in {self.file})"


def checkov_binary() -> str:
    """The checkov executable, or skip (fail under .ci/run) when there is none."""
    path = os.environ.get(ENV_VAR) or shutil.which("checkov")
    if path and Path(path).exists():
        return path
    message = (
        f"checkov is not installed: set {ENV_VAR} to a checkov executable "
        "(python3 -m venv /tmp/ckv && /tmp/ckv/bin/pip install checkov==3.3.30)"
    )
    if STRICT:
        pytest.fail(message)
    pytest.skip(message)


def skips_for(*groups: str) -> dict[str, str]:
    """The skipped checks of the named groups of SKIPS, merged."""
    merged: dict[str, str] = {}
    for group in groups:
        merged.update(SKIPS[group])
    return merged


def run_checkov(
    paths: Sequence[Path], framework: str, skip: dict[str, str] | None = None
) -> tuple[list[Failure], int]:
    """Run checkov offline on `paths`; return its failures and how many checks passed."""
    argv = [checkov_binary(), "--framework", framework, "-o", "json", "--quiet"]
    argv += ["--skip-download", "--compact"]
    for path in paths:
        argv += ["-f", str(path)]
    if skip:
        argv += ["--skip-check", ",".join(sorted(skip))]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode not in (0, 1):
        raise AssertionError(f"checkov exited {done.returncode}: {done.stderr[-2000:]}")
    try:
        data = json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"checkov printed no JSON: {done.stdout[:500]!r}") from exc
    reports = data if isinstance(data, list) else [data]
    failures: list[Failure] = []
    passed = 0
    for report in reports:
        summary = report.get("summary", {})
        if summary.get("parsing_errors"):
            raise AssertionError(f"checkov could not parse: {summary}")
        passed += int(summary.get("passed", 0))
        for check in report.get("results", {}).get("failed_checks", []):
            failures.append(
                Failure(check["check_id"], check["check_name"], check["resource"],
                        check["file_path"])
            )  # fmt: skip
    return failures, passed
