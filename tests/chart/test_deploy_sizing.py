"""docs/deploy.md's sizing: its examples recomputed from its own formula and figures."""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from frognano.sandbox.kubernetes.pod import PodOptions, sandbox_pod

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
TEXT = " ".join(DOC.split())  # the prose with its line breaks folded
CHART = yaml.safe_load((ROOT / "charts" / "frognano" / "values.yaml").read_text())
POLICY = yaml.safe_load((ROOT / "policies" / "00-default.yaml").read_text())["defaults"]["sandbox"]
SHARES = {"half": Fraction(1, 2), "a fifth": Fraction(1, 5)}
KINDS = ("Cpu", "Memory", "EphemeralStorage")
TIMES = "\N{MULTIPLICATION SIGN}"  # as the doc writes a product


def _quantity(text: str) -> Fraction:
    """A Kubernetes quantity as a number of units (Gi for sizes, cores for CPU)."""
    match = re.fullmatch(r"([0-9.]+)\s*(m|Gi|Mi|CPU)?", str(text).strip())
    assert match, text
    number = Fraction(Decimal(match[1]))
    return {"m": number / 1000, "Mi": number / 1024}.get(match[2] or "", number)


def _formula() -> tuple[int, int]:
    found = re.search(
        rf"`worker\.replicas` {TIMES} \((\d+) {TIMES} `worker\.maxJobs` \+ (\d+)\) pods", TEXT
    )
    assert found, "the pods formula is not in docs/deploy.md"
    return int(found[1]), int(found[2])


def _shares() -> tuple[Fraction, Fraction, Fraction]:
    found = re.search(
        r"requests \((half|a fifth) the limits for CPU and memory, (half|a fifth) for "
        r"ephemeral storage",
        TEXT,
    )
    assert found, "the requests' shares are not in docs/deploy.md"
    return SHARES[found[1]], SHARES[found[1]], SHARES[found[2]]


def _needs(replicas: int, max_jobs: int, per_pod: list[Fraction]) -> dict[str, Fraction]:
    per_run, extra = _formula()
    pods = replicas * (per_run * max_jobs + extra)
    out: dict[str, Fraction] = {"pods": Fraction(pods)}
    for kind, limit, share in zip(KINDS, per_pod, _shares(), strict=True):
        out[f"limits{kind}"] = pods * limit
        out[f"requests{kind}"] = pods * limit * share
    return out


def _policy_limits() -> list[Fraction]:
    found = re.search(r"default policy's limits \(([0-9.]+) CPU, (\w+), (\w+) each\)", TEXT)
    assert found
    stated = [_quantity(found[i]) for i in (1, 2, 3)]
    actual = [_quantity(POLICY[k]) for k in ("cpu", "memory", "ephemeral_storage")]
    assert stated == actual, "deploy.md's default policy limits differ from 00-default.yaml"
    return actual


def _fits(quota: dict[str, Any], needs: dict[str, Fraction]) -> list[str]:
    return [
        f"{key}: {quota[key]} < {float(need):g}"
        for key, need in needs.items()
        if _quantity(quota[key]) < need
    ]


def test_the_request_shares_are_the_pods_own() -> None:
    spec = sandbox_pod(PodOptions(cpu="2", memory="4Gi", ephemeral_storage="10Gi"))
    resources = spec["spec"]["containers"][0]["resources"]
    cpu, memory, storage = _shares()
    assert _quantity(resources["requests"]["cpu"]) == 2 * cpu
    assert _quantity(resources["requests"]["memory"]) == 4 * memory
    assert _quantity(resources["requests"]["ephemeral-storage"]) == 10 * storage


def test_the_production_values_fit_the_formula() -> None:
    block = re.search(r"## 5\..*?```yaml\n(.*?)```", DOC, re.DOTALL)
    assert block
    values = yaml.safe_load(block[1])
    worker, quota = values["worker"], values["sandbox"]["quota"]
    needs = _needs(worker["replicas"], worker["maxJobs"], _policy_limits())
    assert _fits(quota, needs) == []
    # The sentence that works the example out says the same figures.
    found = re.search(
        rf"needs (\d+) {TIMES} \((\d+) {TIMES} (\d+) \+ (\d+)\) = (\d+) pods: "
        r"limits of (\d+) CPU, (\w+) and (\w+), requests of (\d+) CPU, (\w+) and (\w+)",
        TEXT,
    )
    assert found, "the worked example is not in docs/deploy.md"
    assert (int(found[1]), int(found[3])) == (worker["replicas"], worker["maxJobs"])
    assert (int(found[2]), int(found[4])) == _formula()
    stated = [_quantity(found[i]) for i in range(5, 12)]
    order = ["pods", *(f"limits{k}" for k in KINDS), *(f"requests{k}" for k in KINDS)]
    assert stated == [needs[key] for key in order]


def test_the_default_quota_fits_the_default_runs() -> None:
    found = re.search(
        r'default quota \(`pods: "(\d+)"`, limits of (\d+) CPU, (\w+) and (\w+), requests of '
        r"(\d+) CPU, (\w+) and (\w+)\) fits (\d+) pods",
        TEXT,
    )
    assert found, "the default quota's sentence is not in docs/deploy.md"
    quota = CHART["sandbox"]["quota"]
    keys = ["pods", *(f"limits{k}" for k in KINDS), *(f"requests{k}" for k in KINDS)]
    assert [_quantity(found[i]) for i in range(1, 8)] == [_quantity(quota[k]) for k in keys]
    default = re.search(rf"`worker\.maxJobs` \(default (\d+) {TIMES} (\d+)\)", TEXT)
    assert default
    replicas, max_jobs = int(default[1]), int(default[2])
    assert (replicas, max_jobs) == (CHART["worker"]["replicas"], CHART["worker"]["maxJobs"])
    assert _fits(quota, _needs(replicas, max_jobs, _policy_limits())) == []
    # "fits N pods": N pods at the default policy fit the quota, N + 1 do not.
    pods = int(found[8])
    limits = _policy_limits()
    per_pod = dict(zip((f"limits{k}" for k in KINDS), limits, strict=True))
    per_pod |= {
        f"requests{k}": limit * share
        for k, limit, share in zip(KINDS, limits, _shares(), strict=True)
    }
    assert all(_quantity(quota[k]) >= pods * v for k, v in per_pod.items())
    assert int(quota["pods"]) == pods
