"""The chart's SGLang container runs exactly the command `frognano model serve` builds."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from frognano.cli.model import DEFAULTS
from frognano.modelserver.sglang import LAUNCH_MODULE, SGLangOptions, launch_args
from frognano.settings import Settings
from tests.chart import test_chart as chart
from tests.chart.test_chart import CHART, Render

# The chart tests' fixtures, reused by name: pytest finds fixtures among a module's attributes.
helm = chart.helm
helm_env = chart.helm_env
render = chart.render

CHART_VALUES: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())

# Value sets to render; each key is a dotted values path (as `render` takes them).
CASES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "everything-changed": {
        "model.name": "frognano-4b",
        "sglang.model.path": "fn4b/bf16",
        "sglang.port": 31000,
        "sglang.gpus": 2,
        "sglang.contextLength": 65536,
        "sglang.memFractionStatic": 0.7,
        "sglang.extraArgs": ["--language-model-only", "--max-running-requests", "8"],
    },
    "whole-memory-fraction": {"sglang.memFractionStatic": 1},
    "router": {"sglang.replicas": 3},
}


def _value(overrides: dict[str, Any], dotted: str) -> Any:
    if dotted in overrides:
        return overrides[dotted]
    value: Any = CHART_VALUES
    for key in dotted.split("."):
        value = value[key]
    return value


def options_for(overrides: dict[str, Any]) -> SGLangOptions:
    """What the chart should run for these values, as `frognano model serve` options (the
    weights volume is mounted at /models; the pod listens on every address)."""
    return SGLangOptions(
        model_path=f"/models/{_value(overrides, 'sglang.model.path')}",
        served_model_name=_value(overrides, "model.name"),
        host="0.0.0.0",
        port=_value(overrides, "sglang.port"),
        tp_size=_value(overrides, "sglang.gpus"),
        context_length=_value(overrides, "sglang.contextLength"),
        mem_fraction_static=_value(overrides, "sglang.memFractionStatic"),
        extra_args=tuple(_value(overrides, "sglang.extraArgs")),
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_chart_runs_the_command_frognano_model_serve_builds(render: Render, case: str) -> None:
    values = CASES[case]
    (deployment,) = [
        doc
        for doc in render(**values)
        if doc["kind"] == "Deployment" and doc["metadata"]["name"].endswith("-sglang")
    ]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python3", "-m", LAUNCH_MODULE]
    assert container["args"] == launch_args(options_for(values))


def test_model_serve_defaults_are_the_charts() -> None:
    assert options_for({}) == SGLangOptions(
        model_path=DEFAULTS.model_path,
        served_model_name=Settings.model_fields["model_name"].default,
        host="0.0.0.0",
        port=DEFAULTS.port,
        tp_size=DEFAULTS.tp_size,
        context_length=DEFAULTS.context_length,
        mem_fraction_static=DEFAULTS.mem_fraction_static,
        extra_args=DEFAULTS.extra_args,
    )
