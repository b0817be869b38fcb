"""Settings: every variable, the *_FILE variants, and clear errors for bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from frognano.errors import ConfigError
from frognano.settings import Settings, load_settings

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----"

# One valid non-default value per variable, and how it reads back.
VALUES: dict[str, tuple[str, object]] = {
    "WEBHOOK_SECRET": ("hook-secret", "hook-secret"),
    "WEBHOOK_MAX_BODY_BYTES": ("65536", 65536),
    "WEBHOOK_HEADER_TIMEOUT_SECONDS": ("2.5", 2.5),
    "WEBHOOK_BODY_TIMEOUT_SECONDS": ("4", 4.0),
    "WEBHOOK_KEEP_ALIVE_SECONDS": ("3", 3.0),
    "WEBHOOK_MAX_CONNECTIONS": ("50", 50),
    "WEBHOOK_MAX_HEADER_BYTES": ("8192", 8192),
    "REDIS_URL": ("redis://redis.example:6380/2", "redis://redis.example:6380/2"),
    "GITHUB_APP_ID": ("12345", 12345),
    "GITHUB_PRIVATE_KEY": (PEM, PEM),
    "GITHUB_API_URL": ("https://ghe.example/api/v3/", "https://ghe.example/api/v3"),
    "MODEL_BASE_URL": ("http://sglang:30000/v1", "http://sglang:30000/v1"),
    "MODEL_NAME": ("frognano-4b", "frognano-4b"),
    "SGLANG_PYTHON": ("/opt/sglang/bin/python", Path("/opt/sglang/bin/python")),
    "MODEL_API_KEY": ("sk-local", "sk-local"),
    "POLICY_DIR": ("/etc/frognano/policies", Path("/etc/frognano/policies")),
    "SANDBOX": ("kubernetes", "kubernetes"),
    "K8S_NAMESPACE": ("agents", "agents"),
    "K8S_KUBECONFIG": ("/etc/kube/config", Path("/etc/kube/config")),
    "K8S_POD_START_TIMEOUT_SECONDS": ("90", 90.0),
    "K8S_NETWORK_CHECK": ("warn", "warn"),
    "K8S_REAP_INTERVAL_SECONDS": ("60", 60),
    "K8S_SECCOMP_PROFILE": ("profiles/frognano-sandbox.json", "profiles/frognano-sandbox.json"),
    "TRAJECTORY_DIR": ("/var/lib/frognano", Path("/var/lib/frognano")),
    "MAX_ATTEMPTS_PER_REPO": ("3", 3),
    "LOG_FORMAT": ("json", "json"),
    "LOG_LEVEL": ("debug", "DEBUG"),
    "PYTHON_ENV": ("/opt/venv", Path("/opt/venv")),
    "LOCAL_SANDBOX_MECHANISM": ("bwrap", "bwrap"),
    "BASELINE_CACHE": ("/var/cache/frognano", "/var/cache/frognano"),
    "ENVIRONMENT_CACHE": ("/var/cache/frognano/envs", "/var/cache/frognano/envs"),
    "ENVIRONMENT_CACHE_MAX_BYTES": ("1073741824", 1073741824),
    "INDEX_TOKEN": ("idx-token", "idx-token"),
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.upper().startswith("FROGNANO_"):
            monkeypatch.delenv(name)


def _read(settings: Settings, name: str) -> object:
    value = getattr(settings, name.lower())
    return value.get_secret_value() if hasattr(value, "get_secret_value") else value


def test_every_field_is_covered_and_documented() -> None:
    assert {name.upper() for name in Settings.model_fields} == set(VALUES)
    for name, field in Settings.model_fields.items():
        assert field.description, f"{name} has no docstring"


def test_defaults() -> None:
    settings = load_settings()
    assert settings.redis_url == "redis://localhost:6379/0"
    assert settings.github_api_url == "https://api.github.com"
    assert settings.model_base_url == "http://localhost:30000/v1"
    assert settings.model_name == "frognano"
    assert settings.policy_dir == Path("policies")
    assert settings.sandbox == "local"
    assert settings.webhook_secret is None


@pytest.mark.parametrize("name", sorted(VALUES))
def test_each_variable_is_read(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    raw, expected = VALUES[name]
    monkeypatch.setenv(f"FROGNANO_{name}", raw)
    assert _read(load_settings(), name) == expected


@pytest.mark.parametrize(
    ("variable", "field"),
    [
        ("FROGNANO_WEBHOOK_SECRET_FILE", "webhook_secret"),
        ("FROGNANO_MODEL_API_KEY_FILE", "model_api_key"),
        ("FROGNANO_GITHUB_PRIVATE_KEY_FILE", "github_private_key"),
        ("FROGNANO_GITHUB_PRIVATE_KEY_PATH", "github_private_key"),
    ],
)
def test_secret_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str, field: str
) -> None:
    value = PEM if field == "github_private_key" else "from-a-file"
    secret = tmp_path / "secret"
    secret.write_text(value + "\n")  # the trailing newline of `echo` is not part of it
    monkeypatch.setenv(variable, str(secret))
    assert _read(load_settings(), field) == value


def test_secret_file_conflicts_and_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("a")
    monkeypatch.setenv("FROGNANO_WEBHOOK_SECRET", "b")
    monkeypatch.setenv("FROGNANO_WEBHOOK_SECRET_FILE", str(secret))
    with pytest.raises(ConfigError, match="set only one"):
        load_settings()
    monkeypatch.delenv("FROGNANO_WEBHOOK_SECRET")
    monkeypatch.setenv("FROGNANO_WEBHOOK_SECRET_FILE", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="FROGNANO_WEBHOOK_SECRET_FILE: cannot read"):
        load_settings()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("LOG_FORMAT", "xml", "FROGNANO_LOG_FORMAT (got 'xml'): Input should be 'json' or"),
        ("LOG_LEVEL", "loud", "FROGNANO_LOG_LEVEL (got 'LOUD')"),
        ("REDIS_URL", "http://redis:6379", "must start with redis://"),
        ("GITHUB_APP_ID", "abc", "FROGNANO_GITHUB_APP_ID (got 'abc'): Input should be a valid"),
        ("GITHUB_APP_ID", "-4", "must be a positive integer"),
        ("GITHUB_APP_ID", "Iv23liAbCdEf0123456", "is a client id: give the numeric App id"),
        ("GITHUB_API_URL", "api.github.com", "must be an http:// or https:// URL"),
        ("MODEL_BASE_URL", "https://", "must be an http:// or https:// URL"),
        ("SANDBOX", "docker", "FROGNANO_SANDBOX (got 'docker'): Input should be 'local' or"),
        ("MODEL_NAME", "  ", "must not be empty"),
    ],
)
def test_malformed_values(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(f"FROGNANO_{name}", value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert message in str(caught.value)


def test_secret_values_never_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FROGNANO_GITHUB_PRIVATE_KEY", "not-a-key-but-secret-text")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "FROGNANO_GITHUB_PRIVATE_KEY: is not a PEM private key" in str(caught.value)
    assert "secret-text" not in str(caught.value)
    monkeypatch.setenv("FROGNANO_GITHUB_PRIVATE_KEY", PEM)
    monkeypatch.setenv("FROGNANO_WEBHOOK_SECRET", "hush")
    assert "hush" not in repr(load_settings())


def test_unknown_variable_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FROGNANO_REDIS_URI", "redis://x")
    with pytest.raises(
        ConfigError, match="unknown setting FROGNANO_REDIS_URI; did you mean FROGNANO_REDIS_URL"
    ):
        load_settings()


def test_settings_are_frozen() -> None:
    settings = load_settings()
    with pytest.raises(ValueError, match="frozen"):
        settings.model_name = "other"


def test_the_baseline_cache_folder_expands_home_and_turns_off() -> None:
    assert Settings().baseline_cache_dir() == Path.home() / ".cache" / "frognano" / "baselines"
    assert Settings(baseline_cache="off").baseline_cache_dir() is None
    assert Settings(baseline_cache=" ").baseline_cache_dir() is None
    assert Settings(baseline_cache="/x/y").baseline_cache_dir() == Path("/x/y")
