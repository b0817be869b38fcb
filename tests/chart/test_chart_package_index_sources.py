"""The package index's chart values against what they name: proxpi's code and the Cilium example."""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart import test_chart as chart
from tests.chart.test_chart import CHART, ROOT, Render, _env, _one, _pod_specs
from tests.chart.test_chart_package_index import ENABLED, INDEX
from tests.conftest import STRICT
from tests.packageindex import PROXPI_ENV_VAR, PROXPI_VERSION

helm = chart.helm
helm_env = chart.helm_env
render = chart.render

CILIUM_EXAMPLE = ROOT / "docs" / "examples" / "cilium-package-index.yaml"
DEPLOY_DOC = ROOT / "docs" / "deploy.md"
# docs/deploy.md installs the chart as release `frognano` in namespace `frognano`.
DOC_RELEASE = "frognano"
DOC_NAMESPACE = "frognano"
# Where pip's requests to PyPI go: the index pages and the files they link to.
PYPI_HOSTS = {"pypi.org", "files.pythonhosted.org"}


def _proxpi_python() -> Path:
    """The Python of an environment with proxpi (FNTEST_PROXPI, as tests/conftest.py)."""
    python = os.environ.get(PROXPI_ENV_VAR)
    if python and Path(python).exists():
        return Path(python)
    message = (
        f"{PROXPI_ENV_VAR} must name the Python of an environment with proxpi=={PROXPI_VERSION}"
    )
    if STRICT:
        pytest.fail(message)
    pytest.skip(message)


def _proxpi_sources(python: Path) -> str:
    """proxpi's installed modules, read (never imported here, never committed)."""
    done = subprocess.run(
        [str(python), "-c", "import importlib.util as u; print(u.find_spec('proxpi').origin)"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    package = Path(done.stdout.strip()).parent
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(package.glob("*.py")))


def test_the_variables_and_routes_the_chart_uses_are_proxpis(render: Render) -> None:
    """Every PROXPI_* variable the chart sets is one proxpi reads; the probes and the URL the
    NOTES give are routes proxpi serves; gunicorn's app is proxpi.server's `app`."""
    python = _proxpi_python()
    done = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('proxpi'))"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.strip() == PROXPI_VERSION
    source = _proxpi_sources(python)
    read = set(re.findall(r"os\.environ(?:\.get\(|\[)\s*\"(PROXPI_[A-Z_]+)\"", source))
    (container,) = _pod_specs(render(**ENABLED))[INDEX]["containers"]
    chart_vars = {name for name in _env({"containers": [container]}) if name.startswith("PROXPI")}
    assert chart_vars
    assert chart_vars <= read, chart_vars - read
    routes = set(re.findall(r"@app\.route\(\"([^\"]+)\"", source))
    assert container["readinessProbe"]["httpGet"]["path"] in routes
    assert container["livenessProbe"]["httpGet"]["path"] in routes
    assert "/index/" in routes  # the index_url the NOTES give ends in /index/
    assert container["args"][-1] == "proxpi.server:app"
    assert re.search(r"^app = flask\.Flask\(", source, re.MULTILINE)


_SERVE = """
import json
from werkzeug.serving import make_server
from proxpi.server import app, cache
files, index = cache.file_cache, cache.root_cache
print(json.dumps([files.cache_dir, files.max_size, files.download_timeout, index.index_url,
                  index.ttl]), flush=True)
server = make_server("127.0.0.1", 0, app)
print(server.port, flush=True)
server.handle_request()
server.handle_request()
"""


def test_proxpi_starts_with_the_charts_environment_and_answers_health(
    render: Render, tmp_path: Path
) -> None:
    """proxpi, given the chart's variables (its cache folder moved here), takes each of them
    as its setting and serves /health without asking the upstream."""
    python = _proxpi_python()
    (container,) = _pod_specs(render(**ENABLED))[INDEX]["containers"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXPI_")}
    env.update(_env({"containers": [container]}))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "kept.whl").write_bytes(b"x")  # a file from an earlier life of the PVC
    env.update(PROXPI_CACHE_DIR=str(cache), HOME=str(tmp_path), NO_PROXY="127.0.0.1")
    with subprocess.Popen(
        [str(python), "-c", _SERVE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as server:
        try:
            assert server.stdout is not None
            settings = json.loads(server.stdout.readline())
            port = int(server.stdout.readline())
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with opener.open(f"http://127.0.0.1:{port}/health", timeout=10) as answer:
                assert json.loads(answer.read()) == {"status": "success", "data": None}
            # The home page (no upstream) answers too; then the server exits.
            with opener.open(f"http://127.0.0.1:{port}/", timeout=10) as answer:
                assert answer.status == 200
            server.wait(timeout=10)
        finally:
            server.kill()
    # proxpi took every setting from the chart's variables.
    values = yaml.safe_load((CHART / "values.yaml").read_text())["packageIndex"]
    assert settings == [
        str(cache),
        values["persistence"]["cacheMaxBytes"],
        values["downloadTimeoutSeconds"],
        values["upstreamIndexUrl"],
        values["indexTtlSeconds"],
    ]
    assert (cache / "kept.whl").exists()  # a provided cache folder is kept, not deleted


def _cilium() -> dict[str, Any]:
    (policy,) = list(yaml.safe_load_all(CILIUM_EXAMPLE.read_text()))
    assert isinstance(policy, dict)
    return policy


def test_the_cilium_example_selects_the_index_pods(render: Render) -> None:
    policy = _cilium()
    assert (policy["apiVersion"], policy["kind"]) == ("cilium.io/v2", "CiliumNetworkPolicy")
    assert policy["metadata"]["namespace"] == DOC_NAMESPACE
    assert f"helm install {DOC_RELEASE} " in DEPLOY_DOC.read_text()
    assert f"-n {DOC_NAMESPACE}" in DEPLOY_DOC.read_text()
    # The selector is the index's own selector labels for release `frognano`.
    statefulset = _one(render(**ENABLED), "StatefulSet", "-package-index")
    selector = dict(statefulset["spec"]["selector"]["matchLabels"])
    selector["app.kubernetes.io/instance"] = DOC_RELEASE
    assert policy["spec"]["endpointSelector"] == {"matchLabels": selector}
    assert "ingress" not in policy["spec"]  # it widens nothing towards the index


def test_the_cilium_example_allows_pypi_by_name_with_the_dns_rule_it_needs() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())["packageIndex"]
    upstream = urllib.parse.urlsplit(values["upstreamIndexUrl"]).hostname
    dns_rule, fqdn_rule = _cilium()["spec"]["egress"]
    names = {entry["matchName"] for entry in fqdn_rule["toFQDNs"]}
    assert names == PYPI_HOSTS
    assert upstream in names
    assert fqdn_rule["toPorts"] == [
        {"ports": [{"port": str(p), "protocol": "TCP"} for p in values["egress"]["ports"]]}
    ]
    # toFQDNs works only when Cilium's DNS proxy sees the lookups: an L7 dns rule towards the
    # cluster DNS (the pods the chart's own policy allows) covering every name.
    dns = values["egress"]["dns"]
    assert dns_rule["toEndpoints"] == [
        {"matchLabels": {"k8s:io.kubernetes.pod.namespace": dns["namespace"], **dns["podLabels"]}}
    ]
    (ports,) = dns_rule["toPorts"]
    assert ports["ports"] == [{"port": "53", "protocol": "ANY"}]
    assert {entry["matchName"] for entry in ports["rules"]["dns"]} >= names
    # It comes with the chart's 0.0.0.0/0 rule turned off, which the file says how to do.
    assert "packageIndex.egress.cidrs=[]" in CILIUM_EXAMPLE.read_text()


def test_deploy_md_names_what_the_chart_makes(render: Render) -> None:
    """docs/deploy.md's URL, object names and defaults for release `frognano` are the chart's."""
    text = " ".join(DEPLOY_DOC.read_text(encoding="utf-8").split())
    values = yaml.safe_load((CHART / "values.yaml").read_text())["packageIndex"]
    suffix = INDEX.removeprefix(f"{chart.RELEASE}-frognano")  # "-package-index"
    index = f"{DOC_RELEASE}{suffix}"
    assert f"index_url: http://{index}.{DOC_NAMESPACE}.svc:{values['port']}/index/" in text
    docs = render(**ENABLED)
    statefulset = _one(docs, "StatefulSet", suffix)
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    assert f"PVC `{claim['metadata']['name']}-{index}-0`" in text
    assert f"`{index}`" in text
    egress = _one(docs, "NetworkPolicy", "-sandbox-environment-egress")["metadata"]["name"]
    assert f"`{egress.replace(f'{chart.RELEASE}-frognano', DOC_RELEASE)}`" in text
    assert f"(`packageIndex.egress.dns`: namespace `{values['egress']['dns']['namespace']}`" in text
    assert f"`packageIndex.downloadTimeoutSeconds` ({values['downloadTimeoutSeconds']} by" in text
    assert "frognano.dev/purpose: environment" in text
