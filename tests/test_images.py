"""The container images: both Dockerfiles checked against the chart, the sandbox pod, the docs."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from dockerfile_parse import DockerfileParser  # type: ignore[import-untyped]

import frognano
from frognano.sandbox.kubernetes.pod import SANDBOX_UID, PodOptions, sandbox_pod
from frognano.sandbox.paths import HOME, TMP, WORKSPACE
from frognano.settings import Settings
from tests.chart.helm import extract_helm
from tests.checkov import run_checkov, skips_for

ROOT = Path(__file__).resolve().parents[1]
SERVICE_DOCKERFILE = ROOT / "Dockerfile"
SANDBOX_DOCKERFILE = ROOT / "deploy" / "sandbox" / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
DOCS = ROOT / "docs" / "sandbox-image.md"
CHART = ROOT / "charts" / "frognano"
DEFAULT_POLICY = "policies/00-default.yaml"

# The final stage must come from a slim Debian 12 Python image, by tag and optionally digest.
PINNED_SLIM = re.compile(r"python:3\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?")
COMPILERS = {"build-essential", "gcc", "g++", "clang", "cpp", "make", "cmake", "libc6-dev"}
SECRET_NAME = re.compile(r"SECRET|TOKEN|PASSWORD|PRIVATE_KEY|API_KEY|CREDENTIAL", re.IGNORECASE)
WEBHOOK_SECRET = "image-test"
SETTING_NAMES = {f"FROGNANO_{name.upper()}" for name in Settings.model_fields}
# What FrogNano itself runs inside every sandbox (docs/sandbox-image.md has the table).
SANDBOX_PACKAGES = {"bash", "coreutils", "util-linux", "tar", "findutils", "sed", "grep",
                    "libc-bin", "git"}  # fmt: skip


@dataclass
class Stage:
    """One build stage: its base image and its instructions, with ENV, LABEL and ARG resolved."""

    image: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    args: dict[str, str] = field(default_factory=dict)

    def values(self, kind: str) -> list[str]:
        return [value for instruction, value in self.instructions if instruction == kind]

    def last(self, kind: str) -> str:
        found = self.values(kind)
        assert found, f"stage {self.name or self.image} has no {kind}"
        return found[-1]

    def exec_form(self, kind: str) -> list[str]:
        """ENTRYPOINT or CMD as Docker runs it; a value that is not a JSON list would silently
        become a shell command, so that is a failure here."""
        value: list[str] = json.loads(self.last(kind))
        assert isinstance(value, list), value
        return value

    def apt_packages(self) -> set[str]:
        found: set[str] = set()
        for run in self.values("RUN"):
            for match in re.finditer(r"apt-get\s+install\b([^&;|]*)", run):
                words = match.group(1).split()
                found.update(w for w in words if not w.startswith(("-", "$")))
        return found

    def copies(self, *, from_stage: bool) -> list[tuple[list[str], str]]:
        """(sources, destination) of each COPY, from another stage or from the context."""
        result: list[tuple[list[str], str]] = []
        for value in self.values("COPY"):
            words = value.split()
            flags = [w for w in words if w.startswith("--")]
            paths = [w for w in words if not w.startswith("--")]
            if any(f.startswith("--from=") for f in flags) == from_stage:
                result.append((paths[:-1], paths[-1]))
        return result


def parse(path: Path) -> list[Stage]:
    """The stages of a Dockerfile, read with dockerfile-parse (the parser checkov uses)."""
    parser = DockerfileParser(path=str(path))
    stages: list[Stage] = []
    for instruction, context in zip(parser.structure, parser.context_structure, strict=True):
        kind = instruction["instruction"]
        if kind == "FROM":
            match = re.fullmatch(
                r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?\s*",
                instruction["value"],
                re.IGNORECASE,
            )
            assert match, instruction["value"]
            stages.append(Stage(match.group(1), match.group(2)))
        elif kind != "COMMENT" and stages:
            stage = stages[-1]
            stage.instructions.append((kind, instruction["value"]))
            stage.env.update(context.line_envs)
            stage.labels.update(context.line_labels)
            stage.args.update(context.line_args)
    return stages


@pytest.fixture(scope="module")
def service() -> list[Stage]:
    return parse(SERVICE_DOCKERFILE)


@pytest.fixture(scope="module")
def sandbox() -> list[Stage]:
    return parse(SANDBOX_DOCKERFILE)


@pytest.fixture(scope="module")
def deployments(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The chart's Deployments with default values, by component (web, worker, ...)."""
    helm = extract_helm(tmp_path_factory.mktemp("helm"))
    home = tmp_path_factory.mktemp("helm-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HELM_", "KUBE"))}
    env.update(
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_DATA_HOME=str(home / "data"),
        KUBECONFIG=str(home / "no-kubeconfig"),
    )
    done = subprocess.run(
        [str(helm), "template", "fn", str(CHART), "--namespace", "frognano"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {
        doc["metadata"]["labels"]["app.kubernetes.io/component"]: doc
        for doc in yaml.safe_load_all(done.stdout)
        if doc and doc["kind"] == "Deployment"
    }


def _user(stage: Stage) -> tuple[int, int]:
    user, _, group = stage.last("USER").partition(":")
    assert user.isdigit(), f"USER must be a numeric uid:gid, got {user}:{group}"
    assert group.isdigit(), f"USER must be a numeric uid:gid, got {user}:{group}"
    return int(user), int(group)


# The service image


def test_service_image_is_multi_stage_on_one_pinned_slim_image(service: list[Stage]) -> None:
    builder, runtime = service[0], service[-1]
    assert len(service) >= 2
    assert PINNED_SLIM.fullmatch(runtime.image), runtime.image
    # The virtual environment is copied across stages, and its python is a symlink to the
    # base image's interpreter: every stage must use the very same base.
    assert {stage.image for stage in service} == {runtime.image}
    run = " ".join(builder.values("RUN"))
    assert "pip wheel" in run
    assert "python -m venv /opt/frognano" in run


def test_service_image_runtime_has_no_compilers_and_only_the_venv(service: list[Stage]) -> None:
    runtime = service[-1]
    installed = runtime.apt_packages()
    assert installed == {"tini"}, installed  # nothing else: every git or tar call is in the pod
    assert not installed & COMPILERS
    assert not [p for p in installed if p.endswith("-dev")]
    assert not [run for run in runtime.values("RUN") if "pip" in run]
    assert runtime.copies(from_stage=True) == [(["/opt/frognano"], "/opt/frognano")]
    assert runtime.env["PATH"].startswith("/opt/frognano/bin:")


def test_service_image_fits_the_chart(
    service: list[Stage], deployments: dict[str, dict[str, Any]]
) -> None:
    runtime = service[-1]
    uid, gid = _user(runtime)
    assert uid != 0
    assert gid != 0
    for role, subcommand in (("web", "serve"), ("worker", "worker")):
        pod = deployments[role]["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (
            uid,
            gid,
        )
        # The chart passes only args, so the image's ENTRYPOINT (tini -- frognano) runs them.
        assert "command" not in container
        assert container["args"][0] == subcommand
        # A read-only root: Python must not try to write bytecode next to the modules.
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert runtime.env["PYTHONDONTWRITEBYTECODE"] == "1"
        env = {e["name"]: e.get("value") for e in container["env"]}
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        assert env["FROGNANO_POLICY_DIR"] == runtime.env["FROGNANO_POLICY_DIR"]
        assert env["FROGNANO_POLICY_DIR"] in mounts
        assert "/tmp" in mounts
    worker = deployments["worker"]["spec"]["template"]["spec"]["containers"][0]
    trajectories = PurePosixPath(runtime.env["FROGNANO_TRAJECTORY_DIR"])
    assert {"name": "FROGNANO_TRAJECTORY_DIR", "value": str(trajectories)} in worker["env"]
    writable = [
        PurePosixPath(m["mountPath"]) for m in worker["volumeMounts"] if not m.get("readOnly")
    ]
    assert any(trajectories.is_relative_to(path) for path in writable)
    # The web port: the default command's, the EXPOSEd one and the chart's.
    web = deployments["web"]["spec"]["template"]["spec"]["containers"][0]
    (port,) = web["ports"]
    assert runtime.values("EXPOSE") == [str(port["containerPort"])]
    cmd = runtime.exec_form("CMD")
    assert cmd == ["serve", "--host", "0.0.0.0", "--port", str(port["containerPort"])]


def test_service_image_entrypoint_user_workdir_and_labels(service: list[Stage]) -> None:
    runtime = service[-1]
    assert runtime.exec_form("ENTRYPOINT") == ["tini", "--", "frognano"]
    assert runtime.last("WORKDIR") == "/var/lib/frognano"
    # The working directory is created for the image's user, so it is the user's own.
    uid, gid = _user(runtime)
    owned = re.compile(rf"install -d -o {uid} -g {gid} [^&]*/var/lib/frognano(\s|$)")
    assert any(owned.search(run) for run in runtime.values("RUN"))
    assert any(
        f"--uid {uid}" in r and "--shell /usr/sbin/nologin" in r for r in runtime.values("RUN")
    )
    assert runtime.env["PYTHONUNBUFFERED"] == "1"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    labels = runtime.labels
    assert labels["org.opencontainers.image.licenses"] == project["license"]
    assert labels["org.opencontainers.image.version"] == frognano.__version__
    for key in ("title", "description", "source", "revision"):
        assert labels[f"org.opencontainers.image.{key}"], key


def test_service_image_ships_the_default_policy_where_it_looks(service: list[Stage]) -> None:
    runtime = service[-1]
    policy_dir = PurePosixPath(runtime.env["FROGNANO_POLICY_DIR"])
    copied = [
        (sources, PurePosixPath(dest))
        for sources, dest in runtime.copies(from_stage=False)
        if sources == [DEFAULT_POLICY]
    ]
    assert len(copied) == 1, runtime.values("COPY")
    assert copied[0][1].parent == policy_dir
    assert copied[0][1].suffix == ".yaml"


def test_frognano_variables_are_settings_and_valid() -> None:
    for path in (SERVICE_DOCKERFILE, SANDBOX_DOCKERFILE):
        for stage in parse(path):
            names = {name for name in stage.env if name.upper().startswith("FROGNANO_")}
            assert names <= SETTING_NAMES, f"{path}: unknown settings {names - SETTING_NAMES}"
            # The values must pass the settings' own validation too (frozen model: no I/O).
            Settings.model_validate(
                {name.removeprefix("FROGNANO_").lower(): stage.env[name] for name in names}
            )


def test_no_secret_or_pip_cache_is_baked_in() -> None:
    for path in (SERVICE_DOCKERFILE, SANDBOX_DOCKERFILE):
        for stage in parse(path):
            for name in [*stage.env, *stage.args]:
                assert not SECRET_NAME.search(name), f"{path}: {name} looks like a secret"
            for sources, _ in stage.copies(from_stage=False):
                for source in sources:
                    assert not re.search(r"\.(pem|key|env)$", source), (path, source)
            cache_off = stage.env.get("PIP_NO_CACHE_DIR") == "1"
            for run in stage.values("RUN"):
                if re.search(r"pip (install|wheel)", run):
                    assert cache_off or "--no-cache-dir" in run, f"{path}: pip cache in {run!r}"


# The health check, run for real against a served `frognano serve`


def _healthcheck(stage: Stage) -> str:
    """The Python code of HEALTHCHECK CMD ["python", "-c", CODE], as Docker would run it."""
    match = re.fullmatch(r"((?:--\S+\s+)*)CMD\s+(\[.*\])\s*", stage.last("HEALTHCHECK"), re.S)
    assert match, stage.last("HEALTHCHECK")
    flags = dict(flag.removeprefix("--").split("=", 1) for flag in match.group(1).split())
    assert {"interval", "timeout", "start-period", "retries"} <= set(flags)
    argv = json.loads(match.group(2))
    assert argv[:2] == ["python", "-c"], argv
    assert len(argv) == 3, argv
    code: str = argv[2]
    assert code.count("/proc/1/cmdline") == 1
    return code


def _run_check(code: str, cmdline: Path) -> int:
    # The container's PID 1 is tini; here the command line comes from a file or a process.
    script = code.replace("/proc/1/cmdline", str(cmdline))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=30, check=False
    )
    return done.returncode


def _cmdline(path: Path, *argv: str) -> Path:
    path.write_bytes(b"".join(arg.encode() + b"\0" for arg in argv))
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def served(service: list[Stage], tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`frognano serve` with the image's environment and a copy of the image's policy folder."""
    runtime = service[-1]
    policies = tmp_path / "policies"
    policies.mkdir()
    ((_, dest),) = [c for c in runtime.copies(from_stage=False) if c[0] == [DEFAULT_POLICY]]
    (policies / PurePosixPath(dest).name).write_bytes((ROOT / DEFAULT_POLICY).read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("FROGNANO_")}
    env.update({k: v for k, v in runtime.env.items() if k != "PATH"})
    env.update(
        FROGNANO_POLICY_DIR=str(policies),
        FROGNANO_TRAJECTORY_DIR=str(tmp_path / "trajectories"),
        FROGNANO_WEBHOOK_SECRET=WEBHOOK_SECRET,
        # Nothing listens there; /healthz does not need Redis.
        FROGNANO_REDIS_URL=f"redis://127.0.0.1:{_free_port()}/0",
    )
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "frognano", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, f"serve exited: {proc.communicate()[1]}"
            assert time.monotonic() < deadline, "serve never answered /healthz"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                    break
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        yield proc, port
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_healthcheck_asks_serve_for_healthz(
    service: list[Stage], served: tuple[subprocess.Popen[str], int], tmp_path: Path
) -> None:
    code = _healthcheck(service[-1])
    proc, port = served
    assert _run_check(code, Path(f"/proc/{proc.pid}/cmdline")) == 0
    written = _cmdline(tmp_path / "eq", "tini", "--", "frognano", "serve", f"--port={port}")
    assert _run_check(code, written) == 0
    proc.terminate()
    proc.communicate(timeout=30)
    assert _run_check(code, written) != 0


def test_healthcheck_for_a_worker_and_other_commands(service: list[Stage], tmp_path: Path) -> None:
    code = _healthcheck(service[-1])
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = str(listener.getsockname()[1])
        worker = _cmdline(
            tmp_path / "worker",
            "tini",
            "--",
            "frognano",
            "worker",
            "--max-jobs",
            "2",
            "--metrics-port",
            port,
        )
        assert _run_check(code, worker) == 0
    assert _run_check(code, worker) != 0  # the metrics port no longer answers
    # Nothing to ask: a worker without a metrics port, a one-off command.
    plain = _cmdline(tmp_path / "plain", "tini", "--", "frognano", "worker", "--max-jobs", "2")
    assert _run_check(code, plain) == 0
    other = _cmdline(tmp_path / "other", "tini", "--", "frognano", "policy", "validate")
    assert _run_check(code, other) == 0


# The example sandbox image


def test_sandbox_image_matches_the_pod(sandbox: list[Stage]) -> None:
    image = sandbox[-1]
    assert PINNED_SLIM.fullmatch(image.image), image.image
    assert {stage.image for stage in sandbox} == {image.image}
    pod = sandbox_pod(PodOptions())
    (container,) = pod["spec"]["containers"]
    security = pod["spec"]["securityContext"]
    # Debian's tini package installs /usr/bin/tini, the path the pod's command names.
    assert "tini" in image.apt_packages()
    assert container["command"][0] == "/usr/bin/tini"
    assert image.exec_form("ENTRYPOINT") == ["/usr/bin/tini", "--"]
    assert _user(image) == (SANDBOX_UID, SANDBOX_UID)
    assert (security["runAsUser"], security["runAsGroup"]) == (SANDBOX_UID, SANDBOX_UID)
    # A passwd entry for the pod's uid, with the home the pod mounts and sets as HOME.
    assert {"name": "HOME", "value": HOME} in container["env"]
    assert any(
        f"--uid {SANDBOX_UID}" in run and f"--home-dir {HOME}" in run for run in image.values("RUN")
    )
    assert image.last("WORKDIR") == WORKSPACE
    assert {m["mountPath"] for m in container["volumeMounts"]} == {WORKSPACE, TMP, HOME}
    # The emptyDir at /workspace belongs to root: git needs it declared safe.
    assert any(
        f"git config --system --add safe.directory {WORKSPACE}" in run
        for run in image.values("RUN")
    )


def test_sandbox_image_has_the_tools_frognano_runs(sandbox: list[Stage]) -> None:
    image = sandbox[-1]
    assert image.apt_packages() >= SANDBOX_PACKAGES | {"tini"}
    # Python and pytest from a root-owned virtual environment first on PATH.
    (venv_copy,) = [value for value in image.values("COPY") if "/opt/venv" in value]
    source = re.search(r"--from=(\S+)", venv_copy)
    assert source, venv_copy
    deps = next(stage for stage in sandbox if stage.name == source.group(1))
    assert "pytest==" in deps.args["TOOLS"]
    assert any("python -m venv" in run and "/opt/venv" in run for run in deps.values("RUN"))
    assert image.env["PATH"].startswith("/opt/venv/bin:")
    assert image.env["VIRTUAL_ENV"] == "/opt/venv"
    # No network in the pod: pip must not try an index.
    assert image.env["PIP_NO_INDEX"] == "1"
    assert image.last("HEALTHCHECK") == "NONE"


# Build context, checkov and docs


def _dockerignore() -> list[tuple[bool, re.Pattern[str]]]:
    """(is_exception, pattern) per line, with Docker's syntax: `*` and `?` stay within one
    path segment, `**` spans any number of them, and a leading `!` re-includes."""
    rules: list[tuple[bool, re.Pattern[str]]] = []
    for raw in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        glob = os.path.normpath(line.removeprefix("!")).lstrip("/")
        regex = ""
        i = 0
        while i < len(glob):
            if glob.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif glob.startswith("**", i):
                regex, i = regex + ".*", i + 2
            elif glob[i] == "*":
                regex, i = regex + "[^/]*", i + 1
            elif glob[i] == "?":
                regex, i = regex + "[^/]", i + 1
            elif glob[i] == "[":
                end = glob.index("]", i + 1)
                regex, i = regex + "[" + glob[i + 1 : end].replace("!", "^", 1) + "]", end + 1
            else:
                regex, i = regex + re.escape(glob[i]), i + 1
        rules.append((negated, re.compile(regex)))
    return rules


def _ignored(path: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    # As Docker: the last rule matching the path or one of its parent folders decides.
    parts = path.split("/")
    candidates = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    ignored = False
    for negated, pattern in rules:
        if any(pattern.fullmatch(candidate) for candidate in candidates):
            ignored = not negated
    return ignored


def test_dockerignore_keeps_out_git_and_environments_but_not_what_the_build_copies(
    service: list[Stage],
) -> None:
    rules = _dockerignore()
    for path in (
        ".git/HEAD",
        ".venv/bin/python",
        "venv/bin/python",
        ".ci/venv/bin/python",
        ".ci/checkov-venv/bin/checkov",
        "service/.venv/bin/python",
        "service/venv/x",
        "service/frognano/__pycache__/cli.cpython-311.pyc",
        "service/frognano.egg-info/PKG-INFO",
        ".mypy_cache/x",
        ".pytest_cache/x",
        "tests/data/README.md",
        "frognano-runs/1/patch.diff",
        "trajectories/1.jsonl",
        ".env",
        "github-app.pem",
    ):
        assert _ignored(path, rules), f"{path} would be sent to the Docker build"
    copied: list[str] = []
    for stage in service:
        for sources, _ in stage.copies(from_stage=False):
            for source in sources:
                found = ROOT / source
                assert found.exists(), source
                files = [found] if found.is_file() else sorted(found.rglob("*"))
                copied += [
                    f.relative_to(ROOT).as_posix()
                    for f in files
                    if f.is_file()
                    and "__pycache__" not in f.parts
                    and not any(p.endswith(".egg-info") for p in f.parts)
                ]
    assert "service/frognano/cli/app.py" in copied
    assert "pyproject.toml" in copied
    for path in copied:
        assert not _ignored(path, rules), f"the build copies {path}, but .dockerignore drops it"


def test_checkov_passes_both_dockerfiles() -> None:
    failures, passed = run_checkov(
        [SERVICE_DOCKERFILE, SANDBOX_DOCKERFILE], "dockerfile", skips_for("dockerfile")
    )
    assert not failures, "\n".join(str(f) for f in failures)
    assert passed > 0


def test_docs_name_every_sandbox_tool_and_build_argument(sandbox: list[Stage]) -> None:
    docs = DOCS.read_text(encoding="utf-8")
    for package in sandbox[-1].apt_packages():
        assert re.search(rf"\b{re.escape(package)}\b", docs), package
    for needed in (
        "/bin/bash",
        "timeout",
        "head -c",
        "GNU `tar`",
        "/usr/bin/tini",
        "pytest",
        "10001",
        "read-only",
        "safe.directory",
        "runtime_class",
        "setup",
    ):
        assert needed in docs, needed
    for stage in sandbox:
        for name, default in stage.args.items():
            row = next((r for r in docs.splitlines() if r.startswith(f"| `{name}` |")), None)
            assert row is not None, f"build argument {name} is not documented"
            assert (f"`{default}`" if default else "empty") in row, (name, default)


def test_docs_policy_example_validates(tmp_path: Path) -> None:
    docs = DOCS.read_text(encoding="utf-8")
    examples = [b for b in re.findall(r"```yaml\n(.*?)```", docs, re.S) if "version: 1" in b]
    assert examples
    for n, example in enumerate(examples):
        (tmp_path / f"{n:02d}-example.yaml").write_text(example, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("FROGNANO_")}
    done = subprocess.run(
        [sys.executable, "-m", "frognano", "policy", "validate", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
