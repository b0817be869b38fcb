"""Settings: every environment variable FrogNano reads, typed and documented, read once."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from frognano.errors import ConfigError

ENV_PREFIX = "FROGNANO_"

# Secrets may also come from a file named by `FROGNANO_<NAME>_FILE` (Kubernetes and Docker
# secrets are mounted as files; keeping them out of the environment keeps them out of
# `/proc/<pid>/environ` and crash dumps).
SECRET_FIELDS = ("webhook_secret", "github_private_key", "model_api_key", "index_token")
# `FROGNANO_GITHUB_PRIVATE_KEY_PATH` is the contract's name for the key file; `_FILE` works too.
FILE_ALIASES = {"github_private_key": ("GITHUB_PRIVATE_KEY_PATH",)}

LogFormat = Literal["json", "console"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
SandboxBackend = Literal["local", "kubernetes"]
LocalMechanism = Literal["auto", "bwrap", "unshare"]
NetworkCheck = Literal["enforce", "warn"]


def _file_variables(field: str) -> tuple[str, ...]:
    names = (f"{field.upper()}_FILE", *FILE_ALIASES.get(field, ()))
    return tuple(ENV_PREFIX + name for name in names)


class _SecretFileSource(PydanticBaseSettingsSource):
    """Reads each secret from the file named by its `*_FILE` variable."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        # Matched case-insensitively, like pydantic-settings matches the other variables.
        self._environ = {name.upper(): value for name, value in environ.items()}

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self().get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for field in SECRET_FIELDS:
            given = {
                name: self._environ[name]
                for name in _file_variables(field)
                if name in self._environ
            }
            if not given:
                continue
            direct = ENV_PREFIX + field.upper()
            if direct in self._environ:
                raise ConfigError(
                    f"both {direct} and {', '.join(given)} are set; set only one of them"
                )
            if len(set(given.values())) > 1:
                raise ConfigError(f"{' and '.join(given)} name different files; set only one")
            name, path = next(iter(given.items()))
            try:
                text = Path(path).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"{name}: cannot read {path!r}: {exc.strerror}") from exc
            except UnicodeDecodeError as exc:
                raise ConfigError(f"{name}: {path!r} is not UTF-8 text") from exc
            # Files written by `echo` or editors end in a newline that is not part of the secret.
            values[field] = text.rstrip("\r\n")
        return values


class Settings(BaseSettings):
    """Everything FrogNano reads from its environment (prefix `FROGNANO_`)."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        case_sensitive=False,
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
        validate_default=True,
    )

    webhook_secret: SecretStr | None = None
    """Secret shared with GitHub to sign webhook deliveries (`X-Hub-Signature-256`)."""

    webhook_max_body_bytes: int = Field(default=2 * 1024 * 1024, ge=1024)
    """Largest webhook delivery accepted, in bytes; bigger ones get 413 before any parsing."""

    webhook_header_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    """Seconds a client has to send a request's headers; slower connections are closed."""

    webhook_body_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    """Seconds a client has to send a whole body (GitHub gives a delivery 10 s in all);
    slower ones get 408 and their connection is closed."""

    webhook_keep_alive_seconds: float = Field(default=5.0, ge=1, le=300)
    """Seconds an idle keep-alive connection stays open."""

    webhook_max_connections: int = Field(default=200, ge=1)
    """Connections and requests served at once; beyond them the receiver answers 503."""

    webhook_max_header_bytes: int = Field(default=16 * 1024, ge=1024, le=1024 * 1024)
    """Largest request line plus headers, in bytes; larger ones are refused."""

    redis_url: str = "redis://localhost:6379/0"
    """Redis holding the job queue and delivery ids (`redis://`, `rediss://` or `unix://`)."""

    github_app_id: int | None = None
    """Numeric id of the GitHub App (its settings page shows it)."""

    github_private_key: SecretStr | None = None
    """The App's PEM private key; or put it in a file named by `..._PATH` or `..._FILE`."""

    github_api_url: str = "https://api.github.com"
    """GitHub REST API root; for GitHub Enterprise Server use `https://HOST/api/v3`."""

    model_base_url: str = "http://localhost:30000/v1"
    """OpenAI-compatible endpoint serving FrogNano (SGLang's `/v1`)."""

    model_name: str = "frognano"
    """Model name sent with each request (SGLang's `--served-model-name`)."""

    sglang_python: Path | None = None
    """The Python of an environment where SGLang is installed, which `frognano model serve`
    runs (SGLang pins an older `openai` than FrogNano needs, so it lives in an environment of
    its own); unset: the interpreter running FrogNano."""

    model_api_key: SecretStr | None = None
    """API key for the model server, if it requires one (SGLang's `--api-key`)."""

    policy_dir: Path = Path("policies")
    """Directory of admin policy `*.yaml` files."""

    sandbox: SandboxBackend = "local"
    """Where agent commands run: `local` (Linux namespaces on this host) or `kubernetes`."""

    k8s_namespace: str = "frognano-sandbox"
    """Namespace for sandbox pods when `sandbox` is `kubernetes`."""

    k8s_kubeconfig: Path | None = None
    """Kubeconfig file for reaching the cluster; unset: the pod's own service account when
    running in a cluster, else the usual kubeconfig (`$KUBECONFIG` or `~/.kube/config`)."""

    k8s_pod_start_timeout_seconds: float = Field(default=600.0, ge=10, le=3600)
    """How long a sandbox pod may take to become ready (scheduling and image pull)."""

    k8s_network_check: NetworkCheck = "enforce"
    """`enforce`: the worker runs no job until a probe pod proves the sandbox namespace has no
    network; `warn`: it runs jobs anyway and logs the failure (an explicit admin override)."""

    k8s_reap_interval_seconds: int = Field(default=300, ge=30, le=86400)
    """How often the worker deletes expired, failed and evicted sandbox pods."""

    k8s_seccomp_profile: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._/-]+\.json$")
    """A Localhost seccomp profile for sandbox pods, relative to the kubelet's seccomp folder
    (e.g. `profiles/frognano-sandbox.json`, made by `frognano sandbox seccomp-profile`);
    unset: the runtime's default (RuntimeDefault)."""

    max_attempts_per_repo: int = Field(default=2, ge=1, le=64)
    """Most attempts of one repository's runs a worker runs at once (policy `agent.attempts`
    makes several per run); a run's only running attempt never waits for it, so it bounds
    best-of-N's extra attempts, not how many issues run. The worker's `--max-jobs` bounds all
    attempts together."""

    trajectory_dir: Path = Path("trajectories")
    """Directory where each run's trajectory is stored."""

    log_format: LogFormat = "console"
    """`json` (one object per line, for clusters) or `console` (readable, for terminals)."""

    log_level: LogLevel = "INFO"
    """Lowest level logged: DEBUG, INFO, WARNING or ERROR."""

    python_env: Path | None = None
    """Python environment mounted read-only in local sandboxes and first on their PATH.
    Default: the one running FrogNano (`solve --repo-venv` uses a checkout's own `.venv`)."""

    local_sandbox_mechanism: LocalMechanism = "auto"
    """How the local sandbox isolates: `bwrap`, `unshare` (root only) or `auto` (see docs)."""

    baseline_cache: str = "~/.cache/frognano/baselines"
    """Folder where `frognano solve` keeps baseline test runs to reuse on the same base,
    setup, test command and environment; `off` runs the baseline every time. (The worker
    keeps them in Redis.)"""

    environment_cache: str = "~/.cache/frognano/environments"
    """Folder where built Python environments are kept, one per environment key, shared by
    every run on this host (the environment phase, policy `environment`)."""

    environment_cache_max_bytes: int = Field(default=20 * 1024**3, ge=1024**2)
    """Most bytes the environment folder may hold; the least recently used environments are
    deleted past it (never one a run is using)."""

    index_token: SecretStr | None = None
    """A token for the policy's `environment.index_url`, sent as HTTP basic auth with the user
    `__token__`; only the sandbox that builds an environment sees it."""

    def environment_cache_dir(self) -> Path:
        """The environment folder, with `~` expanded."""
        return Path(os.path.expanduser(self.environment_cache.strip()))

    def baseline_cache_dir(self) -> Path | None:
        """The baseline cache folder, or None when it is off."""
        value = self.baseline_cache.strip()
        if value.lower() in ("", "off"):
            return None
        return Path(os.path.expanduser(value))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _SecretFileSource(settings_cls, os.environ))

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str) -> str:
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value

    @field_validator("github_api_url", "model_base_url")
    @classmethod
    def _check_http_url(cls, value: str) -> str:
        scheme, _, rest = value.partition("://")
        if scheme not in ("http", "https") or not rest.strip("/"):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")

    @field_validator("github_app_id", mode="before")
    @classmethod
    def _not_a_client_id(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().startswith("Iv"):
            raise ValueError(
                "is a client id: give the numeric App id (the App's settings page shows both)"
            )
        return value

    @field_validator("github_app_id")
    @classmethod
    def _check_app_id(cls, value: int | None) -> int | None:
        if value is not None and value <= 0:
            raise ValueError("must be a positive integer")
        return value

    @field_validator("github_private_key")
    @classmethod
    def _check_pem(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and "-----BEGIN" not in value.get_secret_value():
            raise ValueError(
                "is not a PEM private key (expected '-----BEGIN ... PRIVATE KEY-----')"
            )
        return value

    @field_validator("k8s_seccomp_profile")
    @classmethod
    def _relative_profile(cls, value: str | None) -> str | None:
        if value is not None and (value.startswith("/") or ".." in value.split("/")):
            raise ValueError(
                "must be a path inside the kubelet's seccomp folder, such as "
                "profiles/frognano-sandbox.json (not absolute, no `..`)"
            )
        return value

    @field_validator("model_name", "k8s_namespace")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


def _known_variables() -> set[str]:
    names = {ENV_PREFIX + name.upper() for name in Settings.model_fields}
    for field in SECRET_FIELDS:
        names.update(_file_variables(field))
    return names


def load_settings(**overrides: Any) -> Settings:
    """Build Settings from the environment (and explicit overrides), or raise ConfigError.

    The error names each offending variable and says what it should be. Unknown `FROGNANO_*`
    variables are errors too: a misspelt setting that is silently ignored is worse than none.
    """
    known = _known_variables()
    for name in sorted(os.environ):
        if name.upper().startswith(ENV_PREFIX) and name.upper() not in known:
            close = difflib.get_close_matches(name.upper(), known, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ConfigError(f"unknown setting {name}{hint}")
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None


def _describe(exc: ValidationError) -> str:
    lines = ["invalid settings:"]
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else "?"
        variable = ENV_PREFIX + field.upper()
        shown = "" if field in SECRET_FIELDS else f" (got {error.get('input')!r})"
        message = error["msg"].removeprefix("Value error, ")
        lines.append(f"  {variable}{shown}: {message}")
    return "\n".join(lines)
