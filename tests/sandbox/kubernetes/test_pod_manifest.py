"""The sandbox pod manifest: valid, restricted, credential-free, and shaped by the policy."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from frognano.policy.models import EffectivePolicy
from frognano.run.sandbox_policy import sandbox_spec
from frognano.sandbox.kubernetes.pod import (
    ATTEMPT,
    EXPIRES,
    EXPIRY_MARGIN,
    RUN_ID,
    SELECTOR,
    PodOptions,
    label_value,
    pod_options,
    sandbox_pod,
)
from frognano.sandbox.options import SandboxOptions, SandboxSpec
from frognano.settings import Settings
from tests.checkov import run_checkov, skips_for

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
KUBERNETES_VERSIONS = ("1.30", "1.33", "1.35")


def _pod(**kwargs: Any) -> dict[str, Any]:
    return sandbox_pod(PodOptions(**kwargs), now=NOW)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("runtime_class", [None, "gvisor"])
def test_pod_is_valid_kubernetes(version: str, runtime_class: str | None) -> None:
    kubernetes_validate.validate(_pod(runtime_class=runtime_class), version, strict=True)


def test_pod_passes_checkov(tmp_path: Path) -> None:
    # checkov's Kubernetes runner needs a name; the API server makes one from generateName.
    # Pinned by digest, as docs/sandbox-image.md asks of production images.
    image = "registry.example.com/sandbox-python@sha256:" + "0" * 64
    pod = _pod(run_id="20261130-120000-abcdef", runtime_class="gvisor", image=image)
    pod["metadata"]["name"] = "frognano-sandbox-x1y2z"
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(pod), encoding="utf-8")
    failures, passed = run_checkov([path], "kubernetes", skips_for("sandbox-pod"))
    assert not failures, "\n".join(map(str, failures))
    assert passed > 20


def test_pod_meets_the_restricted_pod_security_standard() -> None:
    spec = _pod()["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == 10001
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = spec["containers"]
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["privileged"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert all("emptyDir" in volume for volume in spec["volumes"])
    assert not any(spec.get(key) for key in ("hostNetwork", "hostPID", "hostIPC"))


def test_pod_has_no_credentials_no_services_and_no_dns() -> None:
    pod = _pod()
    spec = pod["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert "serviceAccountName" not in spec  # the namespace's default, which has no bindings
    assert spec["enableServiceLinks"] is False
    assert spec["dnsPolicy"] == "None"
    assert spec["dnsConfig"] == {"nameservers": ["127.0.0.1"]}
    (container,) = spec["containers"]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert not [name for name in env if name.startswith("FROGNANO_")]
    assert all("valueFrom" not in item for item in container["env"])
    assert "envFrom" not in container
    text = yaml.safe_dump(pod).lower()
    assert "secret" not in text
    assert "token" not in text.replace("serviceaccounttoken", "")


def test_tini_is_pid_1_and_the_writable_paths_are_size_limited_emptydirs() -> None:
    spec = _pod(ephemeral_storage="6Gi")["spec"]
    (container,) = spec["containers"]
    assert container["command"][:2] == ["/usr/bin/tini", "--"]
    mounts = {mount["mountPath"]: mount["name"] for mount in container["volumeMounts"]}
    assert set(mounts) == {"/workspace", "/tmp", "/home/sandbox"}
    sizes = {volume["name"]: volume["emptyDir"]["sizeLimit"] for volume in spec["volumes"]}
    assert sizes[mounts["/workspace"]] == "6Gi"
    assert all(sizes.values())
    assert spec["restartPolicy"] == "Never"


def test_resources_runtime_class_and_lifetime_come_from_the_options() -> None:
    pod = _pod(
        image="registry.example.com/sbx@sha256:" + "a" * 64,
        cpu="500m",
        memory="3Gi",
        ephemeral_storage="8Gi",
        runtime_class="kata-qemu",
        lifetime_seconds=7200,
    )
    spec = pod["spec"]
    (container,) = spec["containers"]
    assert container["image"].endswith("a" * 64)
    resources = container["resources"]
    assert resources["limits"] == {"cpu": "500m", "memory": "3Gi", "ephemeral-storage": "8Gi"}
    assert resources["requests"] == {"cpu": "250m", "memory": "1Gi", "ephemeral-storage": "1Gi"}
    assert spec["runtimeClassName"] == "kata-qemu"
    assert spec["activeDeadlineSeconds"] == 7200
    assert "runtimeClassName" not in _pod()["spec"]


@pytest.mark.parametrize(
    ("limit", "expected"),
    [("2", "1"), ("1", "500m"), ("0.5", "250m"), ("3", "1.5"), ("100m", "50m"), ("1m", "1m")],
)
def test_cpu_requests_are_half_the_limit(limit: str, expected: str) -> None:
    (container,) = _pod(cpu=limit)["spec"]["containers"]
    assert container["resources"]["requests"]["cpu"] == expected


def test_labels_name_the_run_and_the_expiry() -> None:
    pod = _pod(run_id="20261130-120000-abcdef", lifetime_seconds=3600, labels={"team": "a/b c"})
    labels = pod["metadata"]["labels"]
    assert SELECTOR == "app.kubernetes.io/managed-by=frognano,app.kubernetes.io/component=sandbox"
    for pair in SELECTOR.split(","):
        key, value = pair.split("=")
        assert labels[key] == value
    assert labels[RUN_ID] == "20261130-120000-abcdef"
    expires = NOW.timestamp() + 3600 + EXPIRY_MARGIN.total_seconds()
    assert labels[EXPIRES] == str(int(expires))
    assert labels["team"] == "a-b-c"
    assert pod["metadata"]["annotations"]["frognano.dev/expires-at"] == "2026-11-30T13:10:00Z"
    assert pod["metadata"]["generateName"] == "frognano-sandbox-"


def test_label_values_are_made_valid() -> None:
    assert label_value("owner/repo#12") == "owner-repo-12"
    assert len(label_value("x" * 100)) == 63
    assert label_value("-._x_.-") == "x"


def test_pod_options_follow_the_policy() -> None:
    policy = EffectivePolicy.model_validate(
        {
            "sandbox": {
                "image": "example.com/py:1",
                "cpu": "3",
                "memory": "6Gi",
                "ephemeral_storage": "12Gi",
                "runtime_class": "gvisor",
            },
            "agent": {"time_limit_seconds": 3600},
            "verify": {"timeout_seconds": 600},
        }
    )
    options = sandbox_spec(policy, run_id="r1")
    assert (options.image, options.cpu, options.memory) == ("example.com/py:1", "3", "6Gi")
    assert (options.ephemeral_storage, options.runtime_class) == ("12Gi", "gvisor")
    # The agent's hour, two test runs and half an hour to spare.
    assert options.lifetime_seconds == 3600 + 2 * 600 + 1800
    assert options.run_id == "r1"


def test_a_lifetime_must_be_positive() -> None:
    with pytest.raises(ValueError, match="lifetime"):
        PodOptions(lifetime_seconds=0)


def test_the_pod_comes_from_the_spec_and_the_settings() -> None:
    policy = EffectivePolicy.model_validate(
        {"sandbox": {"image": "example.com/py:1", "cpu": "3", "runtime_class": "gvisor"}}
    )
    settings = Settings(
        k8s_namespace="sbx",
        k8s_seccomp_profile="profiles/frognano-sandbox.json",
        k8s_pod_start_timeout_seconds=30,
    )
    spec = sandbox_spec(policy, run_id="r1", attempt=2)
    options = SandboxOptions.from_settings(settings, spec=spec).for_purpose("verify-baseline")
    assert pod_options(options) == PodOptions(
        namespace="sbx",
        image="example.com/py:1",
        cpu="3",
        memory=spec.memory,
        ephemeral_storage=spec.ephemeral_storage,
        runtime_class="gvisor",
        run_id="r1",
        purpose="verify-baseline",
        lifetime_seconds=spec.lifetime_seconds,
        start_timeout=30,
        labels={ATTEMPT: "2"},
        seccomp_profile="profiles/frognano-sandbox.json",
    )
    # Options made without settings or a spec give the pod PodOptions' own defaults.
    assert pod_options(SandboxOptions()) == PodOptions()
    assert options.for_purpose("network-check", run_id="").spec.run_id == ""


def test_a_spec_lifetime_must_be_positive() -> None:
    with pytest.raises(ValueError, match="lifetime"):
        SandboxSpec(lifetime_seconds=0)
