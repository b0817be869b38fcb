"""The policy's shape: every key admins may set, its type, bounds and the shipped default."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from frognano.policy.paths import check_glob, check_repo_path

Permission = Literal["read", "triage", "write", "maintain", "admin"]
Require = Literal["all_pass", "fail_to_pass", "no_regressions", "none"]
OnInstructionsChange = Literal["revert", "block", "allow"]

# Matched at any depth (`tests/**` also covers `src/pkg/tests/data.json`).
DEFAULT_PROTECTED_PATHS = (
    "tests/**",
    "test/**",
    "testing/**",
    "test_*.py",
    "*_test.py",
    "tests.py",
    "conftest.py",
)
# Everything a merge, a checkout or opening the folder can run or reconfigure: CI systems,
# git hooks and hook managers, dev containers and cloud workspaces, editor and AI-assistant
# settings that run commands, direnv, git's own attribute and submodule files, review routing
# (CODEOWNERS) and dependency bots. Files with credentials are the secret scan's business.
DEFAULT_FORBIDDEN_PATHS = (
    ".github/**",
    ".gitlab-ci.yml", ".gitlab/**", ".circleci/**", ".travis.yml",
    "azure-pipelines.yml", "azure-pipelines.yaml", ".azure-pipelines/**", "**/Jenkinsfile",
    "**/Jenkinsfile.*", ".buildkite/**", ".drone.yml", ".drone.yaml", ".woodpecker.yml",
    ".woodpecker.yaml", ".woodpecker/**", "bitbucket-pipelines.yml", "appveyor.yml",
    ".appveyor.yml", ".cirrus.yml", ".cirrus.star", ".semaphore/**", ".teamcity/**",
    ".tekton/**", "cloudbuild.yaml", "cloudbuild.yml", "cloudbuild.json", "buildspec.yml",
    "codemagic.yaml", ".readthedocs.yml", ".readthedocs.yaml", "netlify.toml", "vercel.json",
    ".pre-commit-config.yaml", ".pre-commit-hooks.yaml", ".husky/**", ".githooks/**",
    ".git-hooks/**", "lefthook.yml", "lefthook.yaml", ".lefthook.yml", ".lefthook.yaml",
    "lefthook-local.yml", ".lefthook/**", ".overcommit.yml",
    ".devcontainer/**", ".devcontainer.json", ".gitpod.yml", ".gitpod.Dockerfile",
    ".codesandbox/**", ".replit", "replit.nix", "devbox.json",
    ".vscode/**", ".idea/**", ".fleet/**", ".zed/**", "**/.dir-locals.el", ".exrc", ".nvimrc",
    ".nvim.lua", ".claude/**", ".cursor/**", ".mcp.json", ".gemini/**",
    ".envrc", "mise.toml", ".mise.toml", ".mise/**",
    "**/.gitattributes", ".gitmodules", ".lfsconfig",
    "CODEOWNERS", "docs/CODEOWNERS",
    "renovate.json", "renovate.json5", ".renovaterc", ".renovaterc.json", ".renovaterc.json5",
    ".mergify.yml", ".mergify/**", ".kodiak.toml",
    "**/authorized_keys", "**/authorized_keys2",
)  # fmt: skip
# Inert files under .github/: GitHub only shows issue and pull-request templates in its forms.
DEFAULT_ALLOWED_PATHS = (
    ".github/ISSUE_TEMPLATE/**",
    ".github/PULL_REQUEST_TEMPLATE/**",
    ".github/{ISSUE_TEMPLATE,issue_template}.md",
    ".github/{PULL_REQUEST_TEMPLATE,pull_request_template}.md",
    ".gitlab/{issue_templates,merge_request_templates}/**",
)


# Text for the model, not configuration: long enough for a page of conventions, short enough
# that it never crowds the issue out of the context window.
MAX_INSTRUCTIONS_CHARS = 16_384
MAX_INSTRUCTIONS_FILES = 10
MAX_PROTECTED_FILES = 100


def _repo_path(path: str) -> str:
    problem = check_repo_path(path)
    if problem is not None:
        raise ValueError(problem)
    return path


def _distinct(paths: list[str]) -> list[str]:
    twice = sorted({path for path in paths if paths.count(path) > 1})
    if twice:
        raise ValueError(f"lists {', '.join(map(repr, twice))} more than once")
    return paths


RepoPath = Annotated[str, AfterValidator(_repo_path)]


def _path_glob(pattern: str) -> str:
    problem = check_glob(pattern)
    if problem is not None:
        raise ValueError(problem)
    return pattern


PathGlob = Annotated[str, AfterValidator(_path_glob)]


def _branch_glob(pattern: str) -> str:
    problem = check_glob(pattern)
    if problem is None and (".." in pattern or any(c.isspace() or c in "~^:\\" for c in pattern)):
        problem = f"{pattern!r} cannot match a branch name (no '..', white space, ~ ^ : or \\)"
    if problem is not None:
        raise ValueError(problem.replace("path pattern", "branch pattern"))
    return pattern


BranchGlob = Annotated[str, AfterValidator(_branch_glob)]


class _Section(BaseModel):
    # Unknown keys are errors: a typo must never silently fall back to a default.
    model_config = ConfigDict(extra="forbid", frozen=True)


class TriggerPolicy(_Section):
    """Who may start a run."""

    label: str = Field(default="frognano", min_length=1, max_length=50)
    """The issue label that starts a run."""
    min_permission: Permission = "write"
    """The labeller's (or commenter's) least permission on the repository."""
    command: str = Field(default="/frognano", pattern=r"^/[A-Za-z0-9][A-Za-z0-9_.-]{0,48}$")
    """The word an issue comment starts with to command the App (`/frognano stop`)."""


class AgentPolicy(_Section):
    """The agent's budget and sampling (FrogNano-4B's model card: Leaf's evaluation budget and
    the "thinking, precise coding" sampling values)."""

    max_steps: int = Field(default=150, ge=1, le=1000)
    max_tokens_per_turn: int = Field(default=8192, ge=256, le=65536)
    context_tokens: int = Field(default=131072, ge=4096, le=1048576)
    time_limit_seconds: float = Field(default=10800, gt=0, le=86400)
    temperature: float = Field(default=0.6, ge=0, le=2)
    top_p: float = Field(default=0.95, gt=0, le=1)
    top_k: int = Field(default=20, ge=-1)
    """-1 turns top-k sampling off (SGLang's convention)."""
    enable_thinking: bool = True
    attempts: int = Field(default=1, ge=1, le=5)
    """Best-of-N: how many independent runs of the agent an issue's run makes (each in its own
    sandboxes, with its own trajectory); the one with the strongest evidence is published
    (run/ranking.py). A follow-up on a pull request makes one."""
    instructions: str = Field(default="", max_length=MAX_INSTRUCTIONS_CHARS)
    """The admins' notes for the agent, put in its first message after the issue and marked
    as theirs: text for the model only, which changes no policy value."""
    instructions_files: Annotated[list[RepoPath], AfterValidator(_distinct)] = Field(
        default_factory=lambda: ["AGENTS.md"], max_length=MAX_INSTRUCTIONS_FILES
    )
    """Repository files read from the base tree (never the agent's changes, never through a
    symlink) and put in the first message after the issue, marked as untrusted repository
    text; each is cut at 16 KiB. They are text for the model only: no policy value comes
    from a repository."""
    protected_files: Annotated[list[PathGlob], AfterValidator(_distinct)] = Field(
        default_factory=list, max_length=MAX_PROTECTED_FILES
    )
    """Globs, matched at any depth and in any letter case, of more files coding agents read as
    instructions or configuration, protected like `instructions_files` and FrogNano's built-in
    list of other tools' agent files (policy/gate/agentfiles.py), which no policy can shorten."""
    on_instructions_change: OnInstructionsChange = "revert"
    """A patch that adds, changes or deletes an agent file: `revert` puts it back to the base
    (an added one is not created) for verification and leaves it out of the pull request, with
    a warning; `block` fails the gate; `allow` keeps the change and names it in a warning."""


class SandboxPolicy(_Section):
    """Where the agent and the tests run."""

    image: str = Field(default="ghcr.io/frognano/sandbox-python:3.11", min_length=1)
    """Container image of the Kubernetes sandbox pod (the local sandbox uses the host's tools)."""
    cpu: str = Field(default="2", pattern=r"^([0-9]+(\.[0-9]+)?|[0-9]+m)$")
    memory: str = Field(default="4Gi", pattern=r"^[0-9]+(Ki|Mi|Gi|Ti|K|M|G|T)?$")
    """Memory limit (a Kubernetes quantity); the local sandbox applies it per process."""
    ephemeral_storage: str = Field(default="10Gi", pattern=r"^[0-9]+(Ki|Mi|Gi|Ti|K|M|G|T)?$")
    runtime_class: str | None = None
    """RuntimeClass of the pod, e.g. `gvisor` or `kata`; None uses the cluster's default."""
    setup: list[str] = Field(default_factory=list, max_length=20)
    """Commands run in order, offline, right after the upload; what they create (unless git
    ignores it) is committed with the base, so it never shows in a patch."""


def _index_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an http(s) URL with a host")
    if parts.username or parts.password:
        raise ValueError(
            "put no credentials in the URL: a policy is readable by every worker and shown by "
            "`policy explain`; set FROGNANO_INDEX_TOKEN (or _FILE) instead"
        )
    if parts.query or parts.fragment:
        raise ValueError(f"{url!r}: an index URL has no query or fragment")
    return url


IndexUrl = Annotated[str, AfterValidator(_index_url)]


class EnvironmentPolicy(_Section):
    """The environment phase: the repository's Python dependencies, installed before the agent
    runs through the one package index admins approve, built once per dependency set."""

    index_url: IndexUrl | None = None
    """The approved index (PEP 503 simple API, e.g. an in-cluster devpi-server or proxpi, or a
    company Artifactory/Nexus); None: no environment phase, the sandbox's own Python is used."""
    extra_urls: Annotated[list[IndexUrl], AfterValidator(_distinct)] = Field(
        default_factory=list, max_length=10
    )
    """Other hosts the install may reach, as URLs (only their host and port count): where the
    index serves its files from, when that is another host."""
    install: list[Annotated[str, Field(min_length=1)]] | None = Field(default=None, max_length=20)
    """Install commands, run in /workspace with the environment's `python` first on PATH;
    None: detected from the repository's requirements files, pyproject.toml or setup.py."""
    timeout_seconds: float = Field(default=1800, gt=0, le=21600)
    """Bound on each install command."""


class VerifyPolicy(_Section):
    """Which tests count, and what they must show."""

    command: str = Field(default="python -m pytest -q", min_length=1)
    """Run in /workspace; it must run pytest, which loads FrogNano's result collector."""
    timeout_seconds: float = Field(default=1800, gt=0, le=21600)
    """Bound on each test run (baseline and verification)."""
    baseline: bool = True
    """Run the tests on the untouched repository too, to tell fixed tests from broken ones."""
    require: Require = "fail_to_pass"
    protected_paths: list[str] = Field(default_factory=lambda: list(DEFAULT_PROTECTED_PATHS))
    """Globs, matched at any depth, of test files the agent may add but not change or delete
    (the test harness, such as conftest.py and pytest's configuration, is always protected)."""
    on_protected_change: Literal["revert", "block"] = "revert"
    """`revert`: verify with those files restored to the base; `block`: fail the gate."""
    fails_differently: Literal["block", "warn"] = "block"
    """A test that fails before and after the patch, but not the same way."""
    fail_to_pass: list[str] = Field(default_factory=list)
    """pytest node ids that must pass with the patch (for evaluation); replaces the rule that
    some failing test must be fixed."""
    pass_to_pass: list[str] = Field(default_factory=list)
    """pytest node ids that must still pass with the patch (for evaluation)."""
    hunks: Literal["off", "report", "require_needed"] = "report"
    """After verification holds, revert each hunk of the fix alone and run the tests the fix
    made pass: `report` says which hunks no test needs, `require_needed` also makes such a
    fix (or one whose check could not tell) not ready, `off` runs nothing more."""
    hunk_limit: int = Field(default=12, ge=1, le=100)
    """Past this many hunks, each file's hunks are reverted together."""
    parallel_runs: int = Field(default=4, ge=1, le=32)
    """How many of those runs go at once."""
    changed_line_coverage: Literal["report", "off"] = "report"
    """`report`: measure the fix's changed Python files in the runs with the patch
    (coverage.py, loaded by FrogNano's collector, never the repository's configuration) and
    say which changed lines no test executed; `off`: measure nothing."""
    changed_line_coverage_min: float = Field(default=0.0, ge=0.0, le=1.0)
    """The share of changed statements the tests must execute for the patch to be ready (0:
    no requirement); with a requirement, a missing measurement counts as unmet."""


class GatePolicy(_Section):
    """What a patch may never contain."""

    forbidden_paths: list[str] = Field(default_factory=lambda: list(DEFAULT_FORBIDDEN_PATHS))
    """Globs of paths a patch may not add, change or delete (CI, hooks, editor and dev-container
    settings, CODEOWNERS...); they also match in any letter case."""
    allowed_paths: list[str] = Field(default_factory=lambda: list(DEFAULT_ALLOWED_PATHS))
    """Exceptions to forbidden_paths, and to nothing else: a path matching one of these globs
    exactly (case included) is not forbidden; files the workflows run and secrets still block."""
    max_files_changed: int = Field(default=20, ge=1)
    max_lines_changed: int = Field(default=800, ge=1)
    max_file_bytes: int = Field(default=1_000_000, ge=1)
    """Any file the patch adds or changes must be at most this big."""
    allow_binary: bool = False
    allow_symlinks: bool = False
    secret_scan: bool = True
    """Refuse patches that add credentials or files named like credential files."""
    high_entropy: Literal["block", "warn"] = "block"
    """Secrets found only by their randomness or by a keyword (`password = ...` in a config
    file), which may be hashes or test data: block the patch, or warn in the pull request."""
    suspicious_patterns: Literal["warn", "block"] = "warn"
    """Test-weakening code on added lines (skips, sys.exit, atexit, dynamic code, a new
    conftest.py): warn in the pull request, or block it."""
    tampering: Literal["block", "warn"] = "block"
    """Code that can make tests pass with no fix at all (hard exits, raw descriptor writes,
    frame or garbage-collector introspection, pytest hooks and patches, swapped modules, an
    always-true `__eq__`, code that checks whether it runs under the tests): block or warn."""


class PublishPolicy(_Section):
    """How the draft pull request looks."""

    branch_prefix: str = Field(default="frognano/", min_length=1, pattern=r"^[A-Za-z0-9._/-]+$")
    labels: list[str] = Field(default_factory=lambda: ["frognano", "needs-human-review"])
    reviewers: list[str] = Field(default_factory=list)
    team_reviewers: list[str] = Field(default_factory=list)
    link: Literal["refs", "fixes"] = "refs"
    """`Refs #N` leaves the issue open on merge; `Fixes #N` closes it."""
    base_branches: list[BranchGlob] = Field(default_factory=list)
    """Branches a writer may ask a run to start from and its pull request to target, besides
    the default branch (globs: `release/*`); empty: the default branch only."""
    max_followups: int = Field(default=5, ge=0, le=100)
    """How many follow-up commits (`/frognano ...` on the pull request) one pull request may
    get after the run that opened it; 0 turns follow-ups off."""


class EffectivePolicy(_Section):
    """The policy in force for one repository, after every file and matching rule."""

    enabled: bool = True
    trigger: TriggerPolicy = Field(default_factory=TriggerPolicy)
    agent: AgentPolicy = Field(default_factory=AgentPolicy)
    sandbox: SandboxPolicy = Field(default_factory=SandboxPolicy)
    environment: EnvironmentPolicy = Field(default_factory=EnvironmentPolicy)
    verify: VerifyPolicy = Field(default_factory=VerifyPolicy)
    gate: GatePolicy = Field(default_factory=GatePolicy)
    publish: PublishPolicy = Field(default_factory=PublishPolicy)


_UNITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}  # fmt: skip


def quantity_bytes(quantity: str) -> int:
    """A Kubernetes memory quantity such as `4Gi` or `512M` in bytes."""
    digits = quantity.rstrip("KMGTi")
    return int(digits) * _UNITS[quantity[len(digits) :]]
