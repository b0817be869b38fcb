"""The chart's optional package index (packageIndex.*): proxpi and the NetworkPolicies around it."""

from __future__ import annotations

import ipaddress
import itertools
import json
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.chart import test_chart as chart
from tests.chart.test_chart import (
    CHART,
    COMBINATIONS,
    NAMESPACE,
    RELEASE,
    VALUES_FILES,
    Manifest,
    Render,
    _by_kind,
    _env,
    _one,
    _pod_specs,
    _run_helm,
    _set_args,
)

# The chart tests' fixtures, reused by name: pytest finds fixtures among a module's attributes.
helm = chart.helm
helm_env = chart.helm_env
render = chart.render

ENVIRONMENT_LABELS = {"frognano.dev/purpose": "environment"}
INDEX = f"{RELEASE}-frognano-package-index"
# The in-cluster index with the default values besides its image, and an external one.
ENABLED: dict[str, Any] = COMBINATIONS["package-index"]
EXTERNAL: dict[str, Any] = COMBINATIONS["external-package-index"]
# Every way of turning an index on: the values files and dotted values each case renders with.
CASES: dict[str, tuple[tuple[Path, ...], dict[str, Any]]] = {
    "in-cluster": ((), ENABLED),
    "values-all": ((VALUES_FILES["values-all"],), {}),
    "external": ((), EXTERNAL),
    "values-external": ((VALUES_FILES["values-external"],), {}),
}
# Labels of the other sandbox pods FrogNano makes (docs/sandbox.md): none may reach anything.
OTHER_PURPOSES = ("agent", "verify", "network-check")


def _render_case(render: Render, case: str) -> list[Manifest]:
    files, values = CASES[case]
    return render(*files, **values)


def _values(case: str) -> dict[str, Any]:
    """The packageIndex values a case renders with (values.yaml's, overridden)."""
    merged: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    files, overrides = CASES[case]
    for path in files:
        merged = _merge(merged, yaml.safe_load(path.read_text()))
    for dotted, value in overrides.items():
        node = merged
        *parents, last = dotted.split(".")
        for key in parents:
            node = node[key]
        node[last] = value
    return merged


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = _merge(out[key], value) if both else value
    return out


def _policies_selecting(docs: list[Manifest], namespace: str, labels: dict[str, str]) -> list[Any]:
    """The NetworkPolicies that apply to a pod with `labels` in `namespace`."""
    found = []
    for policy in _by_kind(docs, "NetworkPolicy"):
        if policy["metadata"]["namespace"] != namespace:
            continue
        selector = policy["spec"]["podSelector"]
        assert set(selector) <= {"matchLabels"}, "only matchLabels selectors are understood here"
        if selector.get("matchLabels", {}).items() <= labels.items():
            found.append(policy)
    return found


def _egress_rules(policies: list[Any]) -> list[Any]:
    for policy in policies:
        assert "Egress" in policy["spec"]["policyTypes"]
    return [rule for policy in policies for rule in policy["spec"].get("egress", [])]


def _index_pod_labels(docs: list[Manifest]) -> dict[str, str]:
    labels: dict[str, str] = _one(docs, "StatefulSet", "-package-index")["spec"]["template"][
        "metadata"
    ]["labels"]
    return labels


# ------------------------------------------------------------------ off by default


def test_nothing_of_it_by_default(render: Render) -> None:
    for docs in (render(), render(VALUES_FILES["values-external"])):
        assert not [d for d in docs if "package-index" in d["metadata"]["name"]]
        assert not [
            d for d in docs
            if d["metadata"]["labels"].get("app.kubernetes.io/component") == "package-index"
        ]  # fmt: skip
    docs = render()
    assert not [d for d in _by_kind(docs, "NetworkPolicy") if "environment" in json.dumps(d)]


# ------------------------------------------------------------------ who reaches the index


@pytest.mark.parametrize("case", ["in-cluster", "values-all"])
def test_only_environment_pods_of_the_sandbox_namespace_reach_the_index(
    render: Render, case: str
) -> None:
    docs = _render_case(render, case)
    values = _values(case)["packageIndex"]
    sandbox = _values(case)["sandbox"]["namespace"]
    index_labels = _index_pod_labels(docs)
    (policy,) = _policies_selecting(docs, NAMESPACE, index_labels)
    assert policy["metadata"]["name"] == INDEX
    # The policy selects the index pods and no other workload of the chart.
    selector = policy["spec"]["podSelector"]["matchLabels"]
    for workload in docs:
        if workload["kind"] in ("Deployment", "StatefulSet"):
            labels = workload["spec"]["template"]["metadata"]["labels"]
            assert (selector.items() <= labels.items()) is (workload["metadata"]["name"] == INDEX)
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    # Exactly one source: pods labelled purpose=environment AND in the sandbox namespace (one
    # peer holding both selectors), on the index's port alone. Any widening (an empty
    # podSelector, a second peer, a rule without ports) breaks an equality here.
    assert policy["spec"]["ingress"] == [
        {
            "from": [
                {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": sandbox}},
                    "podSelector": {"matchLabels": ENVIRONMENT_LABELS},
                }
            ],
            "ports": [{"port": values["port"], "protocol": "TCP"}],
        }
    ]
    (container,) = _pod_specs(docs)[INDEX]["containers"]
    assert container["ports"] == [
        {"name": "http", "containerPort": values["port"], "protocol": "TCP"}
    ]


@pytest.mark.parametrize("case", sorted(CASES))
def test_environment_pods_reach_the_index_and_nothing_else(render: Render, case: str) -> None:
    docs = _render_case(render, case)
    values = _values(case)["packageIndex"]
    sandbox = _values(case)["sandbox"]["namespace"]
    env_policies = _policies_selecting(docs, sandbox, {**ENVIRONMENT_LABELS, "other": "x"})
    (egress,) = [p for p in env_policies if p["spec"]["podSelector"] != {}]
    # It selects exactly the environment pods and only adds egress.
    assert egress["spec"]["podSelector"] == {"matchLabels": ENVIRONMENT_LABELS}
    assert egress["spec"]["policyTypes"] == ["Egress"]
    # Every egress rule that applies to an environment pod names both a destination and ports
    # (a rule without one allows every destination or every port), never DNS.
    rules = _egress_rules(env_policies)
    assert rules
    for rule in rules:
        assert rule.get("to"), rule
        assert rule.get("ports"), rule
        for port in rule["ports"]:
            assert port["port"] not in (53, "dns", "domain"), rule
    if values["enabled"]:
        index_port = values["port"]
        assert rules == [
            {
                "to": [
                    {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}
                        },
                        "podSelector": {"matchLabels": _index_selector(docs)},
                    }
                ],
                "ports": [{"port": index_port, "protocol": "TCP"}],
            }
        ]
        # That selector picks the index pods and no other workload.
        for name, workload in ((d["metadata"]["name"], d) for d in docs
                               if d["kind"] in ("Deployment", "StatefulSet")):  # fmt: skip
            labels = workload["spec"]["template"]["metadata"]["labels"]
            assert (_index_selector(docs).items() <= labels.items()) is (name == INDEX)
    else:
        external = values["external"]
        assert rules == [
            {
                "to": [{"ipBlock": {"cidr": cidr}} for cidr in external["cidrs"]],
                "ports": [{"port": port, "protocol": "TCP"} for port in external["ports"]],
            }
        ]
    # The agent's and verification's pods (and the probe pod) keep no network at all: only
    # the deny-all applies to them, and it allows nothing.
    for purpose in OTHER_PURPOSES:
        (deny_all,) = _policies_selecting(docs, sandbox, {"frognano.dev/purpose": purpose})
        assert deny_all["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def _index_selector(docs: list[Manifest]) -> dict[str, str]:
    selector: dict[str, str] = _one(docs, "Service", "-package-index")["spec"]["selector"]
    return selector


# ------------------------------------------------------------------ the index's own egress


def test_the_index_reaches_dns_and_its_upstream_only(render: Render) -> None:
    docs = render(**ENABLED)
    (policy,) = _policies_selecting(docs, NAMESPACE, _index_pod_labels(docs))
    dns, upstream = policy["spec"]["egress"]
    assert dns == {
        "to": [
            {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                },
                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
            }
        ],
        "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
    }
    assert upstream["ports"] == [{"port": 443, "protocol": "TCP"}]
    (block,) = upstream["to"]
    assert block["ipBlock"]["cidr"] == "0.0.0.0/0"
    excepted = [ipaddress.ip_network(cidr) for cidr in block["ipBlock"]["except"]]
    # The metadata address, the private ranges (pods, Services, nodes) and link-local are out.
    for address in ("169.254.169.254", "10.0.0.1", "172.16.0.1", "192.168.0.1", "100.64.0.1"):
        assert any(ipaddress.ip_address(address) in net for net in excepted), address
    assert not any(ipaddress.ip_address("151.101.0.223") in net for net in excepted)  # pypi.org
    # With a CiliumNetworkPolicy allowing the upstream by name, only DNS stays here.
    docs = render(**ENABLED, **{"packageIndex.egress.cidrs": []})
    (policy,) = _policies_selecting(docs, NAMESPACE, _index_pod_labels(docs))
    assert policy["spec"]["egress"] == [dns]


def test_the_index_egress_from_the_values(render: Render) -> None:
    docs = render(VALUES_FILES["values-all"])
    (policy,) = _policies_selecting(docs, NAMESPACE, _index_pod_labels(docs))
    dns, upstream = policy["spec"]["egress"]
    assert dns["to"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "kube-dns-system"
    }
    assert dns["to"][0]["podSelector"]["matchLabels"] == {"k8s-app": "coredns"}
    everywhere, internal = upstream["to"]
    assert "169.254.169.254/32" in everywhere["ipBlock"]["except"]
    # Only 0.0.0.0/0 gets the exceptions (an except outside its cidr would be invalid).
    assert internal == {"ipBlock": {"cidr": "10.40.0.0/16"}}
    assert [p["port"] for p in upstream["ports"]] == [443, 8443]


# ------------------------------------------------------------------ the workload


@pytest.mark.parametrize("case", ["in-cluster", "values-all"])
def test_proxpi_runs_as_configured(render: Render, case: str) -> None:
    docs = _render_case(render, case)
    values = _values(case)["packageIndex"]
    statefulset = _one(docs, "StatefulSet", "-package-index")
    assert statefulset["spec"]["replicas"] == 1
    pod = statefulset["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsUser"] == values["runAsUser"]
    (container,) = pod["containers"]
    image = values["image"]
    assert container["image"] == (
        f"{image['repository']}@{image['digest']}"
        if image["digest"]
        else f"{image['repository']}:{image['tag']}"
    )
    # One process (proxpi's cache is per process), threads for concurrency.
    assert container["command"] == ["gunicorn"]
    args = container["args"]
    assert args[args.index("--workers") + 1] == "1"
    assert args[args.index("--threads") + 1] == str(values["threads"])
    assert args[args.index("--bind") + 1] == f"0.0.0.0:{values['port']}"
    assert args[-1] == "proxpi.server:app"
    env = _env(pod)
    assert env == {
        "PROXPI_INDEX_URL": values["upstreamIndexUrl"],
        "PROXPI_INDEX_TTL": str(values["indexTtlSeconds"]),
        "PROXPI_CACHE_DIR": "/var/cache/proxpi",
        "PROXPI_CACHE_SIZE": str(values["persistence"]["cacheMaxBytes"]),
        "PROXPI_DOWNLOAD_TIMEOUT": str(values["downloadTimeoutSeconds"]),
        "HOME": "/tmp",
    }
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts == {"/var/cache/proxpi": "cache", "/tmp": "tmp"}
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "cache"
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim["spec"]["resources"]["requests"]["storage"] == values["persistence"]["size"]
    assert claim["spec"].get("storageClassName", "") == values["persistence"]["storageClass"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/health", "port": "http"}
    service = _one(docs, "Service", "-package-index")
    assert service["spec"]["ports"] == [
        {"name": "http", "port": values["port"], "targetPort": "http", "protocol": "TCP"}
    ]


# ------------------------------------------------------------------ values that cannot be


def test_in_cluster_and_external_exclude_each_other(
    helm: list[str], helm_env: dict[str, str]
) -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    both = _merge(
        defaults, {"packageIndex": {"enabled": True, "external": {"cidrs": ["10.0.0.1/32"]}}}
    )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(both, schema)
    for one in ({"enabled": True}, {"external": {"cidrs": ["10.0.0.1/32"]}}, {}):
        jsonschema.validate(_merge(defaults, {"packageIndex": one}), schema)
    result = _run_helm(
        helm, helm_env, "template", RELEASE, str(CHART), *_set_args({**ENABLED, **EXTERNAL})
    )
    assert result.returncode != 0
    assert "packageIndex" in result.stderr
    # Without the schema, the template refuses it too.
    result = _run_helm(
        helm, helm_env, "template", RELEASE, str(CHART), "--skip-schema-validation",
        *_set_args({**ENABLED, **EXTERNAL}),
    )  # fmt: skip
    assert result.returncode != 0
    assert "packageIndex.enabled and packageIndex.external.cidrs exclude each other" in (
        result.stderr
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"packageIndex.enabled": True}, "packageIndex.image.repository is required"),
        ({**ENABLED, "packageIndex.port": 80}, "packageIndex/port"),
        ({**ENABLED, "packageIndex.upstreamIndexUrl": "pypi.org"}, "upstreamIndexUrl"),
        ({"packageIndex.external.cidrs": ["pypi.org"]}, "packageIndex/external/cidrs"),
        ({"packageIndex.external.ports": []}, "packageIndex/external/ports"),
        ({**ENABLED, "packageIndex.egress.exceptCidrs": ["169.254.169.254"]}, "exceptCidrs"),
    ],
)
def test_bad_package_index_values_fail_to_render(
    helm: list[str], helm_env: dict[str, str], values: dict[str, Any], message: str
) -> None:
    result = _run_helm(helm, helm_env, "template", RELEASE, str(CHART), *_set_args(values))
    assert result.returncode != 0
    assert message in result.stderr


def test_notes_give_the_index_url_for_the_policy(
    helm: list[str], helm_env: dict[str, str], render: Render, tmp_path: Path
) -> None:
    from frognano.policy.loader import load_policies

    result = _run_helm(
        helm, helm_env, "install", RELEASE, str(CHART), "--namespace", NAMESPACE,
        "--dry-run=client", *_set_args(ENABLED),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    notes = result.stdout.split("NOTES:", 1)[1]
    lines = notes[notes.index("  defaults:") :].splitlines()
    snippet = textwrap.dedent("\n".join(itertools.takewhile(lambda x: x.startswith("  "), lines)))
    service = _one(render(**ENABLED), "Service", "-package-index")
    url = f"http://{service['metadata']['name']}.{NAMESPACE}.svc:{service['spec']['ports'][0]['port']}/index/"
    assert yaml.safe_load(snippet) == {"defaults": {"environment": {"index_url": url}}}
    # The snippet is a valid policy file as it stands.
    (tmp_path / "50-index.yaml").write_text("version: 1\n" + snippet)
    assert load_policies(tmp_path).files


def test_the_index_policies_do_not_depend_on_network_policies_enabled(render: Render) -> None:
    docs = render(**ENABLED, **{"networkPolicies.enabled": False})
    names = {p["metadata"]["name"] for p in _by_kind(docs, "NetworkPolicy")}
    assert names == {
        f"{RELEASE}-frognano-sandbox-deny-all",
        f"{RELEASE}-frognano-sandbox-environment-egress",
        INDEX,
    }
