"""The repository inside the sandbox: what is uploaded, the baseline commit, the agent's diff."""

from __future__ import annotations

import base64
import re
import shlex
import subprocess
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from frognano.errors import ConfigError, SandboxError, SetupError
from frognano.sandbox.base import Sandbox
from frognano.sandbox.options import SandboxOptions
from frognano.sandbox.paths import WORKSPACE

# Caches and build products that never belong in a patch, whatever the repo's .gitignore says.
DIFF_EXCLUDES = (
    "__pycache__/",
    "*.py[cod]",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".hypothesis/",
    ".tox/",
    ".nox/",
    "*.egg-info/",
    ".coverage",
    ".coverage.*",
    "htmlcov/",
)
# The repository's .gitattributes must not make the committed bytes differ from the files
# (text=auto, eol, filters): FrogNano applies the diff to the files themselves, outside the
# sandbox, and checks every result against the blob ids the diff names.
NEUTRAL_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding\n"
MAX_PATCH_BYTES = 16 * 1024 * 1024
SETUP_TIMEOUT = 1800.0
SETUP_OUTPUT_BYTES = 24_000

# Git inside the sandbox ignores system and user configuration and runs no hooks; the commit
# date is fixed so the same tree always gives the same baseline commit.
# safe.directory: a pod's /workspace emptyDir is owned by root (fsGroup changes only its
# group), and git refuses a worktree another user owns unless told it is safe.
_GIT = (
    "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 "
    "GIT_AUTHOR_DATE=2000-01-01T00:00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00:00Z "
    "git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.autocrlf=false "
    "-c user.name=FrogNano -c user.email=frognano@localhost.invalid "
    "-c safe.directory=/workspace"
)
_SHA = re.compile(r"^[0-9a-f]{40,64}$")


@dataclass(frozen=True)
class Patch:
    """The agent's changes against the baseline, as `git apply` takes them."""

    diff: bytes
    """Bytes, not text: a file in another encoding than UTF-8 must survive unchanged."""
    files: tuple[str, ...]
    insertions: int
    deletions: int

    @property
    def empty(self) -> bool:
        return not self.diff


def upload_excludes(repo_dir: Path) -> list[str]:
    """Relative paths of `repo_dir` to leave out of the upload: `.git` and what git ignores.

    `repo_dir` may be a checkout or a folder inside one. History stays behind on purpose: a
    clone holds commits newer than the issue, and agents mine them for the fix. The sandbox
    gets one fresh commit instead (`make_baseline`).
    """
    inside = _git(repo_dir, "rev-parse", "--is-inside-work-tree", check=False)
    if inside.returncode != 0 or inside.stdout.strip() != b"true":
        raise ConfigError(
            f"{repo_dir} is not inside a git checkout; run `git init && git add -A && "
            "git commit -m base` there first, so FrogNano knows which files belong to the project"
        )
    # Paths come relative to repo_dir, and only from under it.
    listed = _git(repo_dir, "ls-files", "-z", "--others", "--ignored", "--exclude-standard",
                  "--directory").stdout  # fmt: skip
    ignored = [item.decode("utf-8", "surrogateescape").rstrip("/") for item in listed.split(b"\0")]
    own_git = [".git"] if (repo_dir / ".git").exists() else []
    return [*own_git, *(path for path in ignored if path)]


def env_in_tree(box: Sandbox, repo_dir: Path) -> list[str]:
    """What to leave out of an upload of `repo_dir`: the sandbox's Python environment when it
    lives inside the checkout (a CI .venv), mounted read-only already, so copying it only costs
    time."""
    env = box.python_env
    if env is not None and env.prefix.is_relative_to(repo_dir):
        return [str(env.prefix.relative_to(repo_dir))]
    return []


def env_prefix_in_tree(options: SandboxOptions, repo_dir: Path) -> list[str]:
    """env_in_tree before any sandbox exists: the options' Python environment, if it lives in
    the checkout."""
    prefix = options.python_env
    if prefix is not None and prefix.resolve().is_relative_to(repo_dir):
        return [str(prefix.resolve().relative_to(repo_dir))]
    return []


_REMOTE = re.compile(r"[:/]([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")


def repo_name(repo_dir: Path) -> str:
    """`owner/name` from the checkout's `origin` remote (GitHub-style URL), else
    `local/<folder name>`: the name policy rules match against. A folder inside someone
    else's checkout (FrogNano's own examples/calculator) is not that repository, so only the
    top of a checkout takes its origin's name."""
    top = _git(repo_dir, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0 or Path(top.stdout.decode(errors="replace").strip()) != (
        repo_dir.resolve()
    ):
        return f"local/{repo_dir.resolve().name}"
    remote = _git(repo_dir, "remote", "get-url", "origin", check=False)
    found = _REMOTE.search(remote.stdout.decode(errors="replace").strip())
    if remote.returncode == 0 and found:
        return f"{found.group(1)}/{found.group(2)}"
    return f"local/{repo_dir.resolve().name}"


def _git(repo_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", *args], cwd=repo_dir, capture_output=True, check=check, timeout=120
        )
    except FileNotFoundError as exc:
        raise ConfigError("git is not installed; install it to run `frognano solve`") from exc
    except subprocess.CalledProcessError as exc:
        raise ConfigError(
            f"git could not list the files of {repo_dir}: "
            f"{exc.stderr.decode(errors='replace').strip()}"
        ) from exc


async def make_baseline(sandbox: Sandbox) -> str:
    """Commit the uploaded tree as the only commit of a fresh repository; returns its id."""
    excludes = "\n".join(DIFF_EXCLUDES) + "\n"
    script = (
        f"set -e; rm -rf .git; {_GIT} init -q; "
        f"printf %s {shlex.quote(excludes)} >> .git/info/exclude; "
        f"printf %s {shlex.quote(NEUTRAL_ATTRIBUTES)} > .git/info/attributes; "
        # --force: every uploaded file is part of the base, even one the repo's rules ignore.
        f"{_GIT} add --all --force; "
        f"{_GIT} commit -q --no-verify --allow-empty -m 'FrogNano baseline'; "
        f"{_GIT} rev-parse HEAD"
    )
    return await _commit_id(sandbox, script, "could not create the baseline commit")


async def collect_patch(sandbox: Sandbox, base: str) -> Patch:
    """The diff of the working tree (untracked files included, caches excluded) against base.

    It runs inside the sandbox, where the agent could have tampered with `.git`; that is
    harmless because the patch is only ever applied to a fresh copy of the base and tested
    there, and a human reviews it.
    """
    if not _SHA.match(base):
        raise ValueError(f"not a commit id: {base!r}")
    # --full-index: whole blob ids, so each file is checked against the base by its full hash.
    diff_flags = "--cached --no-color --no-ext-diff --no-textconv --no-renames --full-index"
    # base64 carries the diff out byte for byte (exec output is decoded as UTF-8).
    encoded = await _git_output(
        sandbox,
        f"set -o pipefail; {_GIT} add --all && "
        f"{_GIT} diff {diff_flags} --binary {base} | base64 -w0",
    )
    diff = base64.b64decode(encoded)
    numstat = await _git_output(sandbox, f"{_GIT} diff {diff_flags} --numstat -z {base}")
    files: list[str] = []
    insertions = deletions = 0
    for record in numstat.split("\0"):
        added, _, rest = record.partition("\t")
        removed, _, path = rest.partition("\t")
        if not path:
            continue
        files.append(path)
        insertions += int(added) if added.isdigit() else 0
        deletions += int(removed) if removed.isdigit() else 0
    return Patch(diff, tuple(files), insertions, deletions)


async def _git_output(sandbox: Sandbox, command: str, stdin: bytes | None = None) -> str:
    result = await sandbox.exec(
        command,
        cwd=WORKSPACE,
        timeout=600,
        stdin=stdin,
        output_limit=MAX_PATCH_BYTES,
        split_stderr=True,
    )
    if result.truncated:
        raise SandboxError(f"the patch is larger than {MAX_PATCH_BYTES * 3 // 4 // 2**20} MiB")
    if not result.ok:
        raise SandboxError(f"git failed in the sandbox: {(result.stderr or '').strip()}")
    return result.stdout or ""


async def prepare(
    sandbox: Sandbox,
    repo_dir: Path,
    exclude: Collection[str],
    setup: Sequence[str] = (),
) -> str:
    """Upload the repository, commit it, run the policy's setup commands and commit what
    they add; returns the base commit every diff is taken against."""
    await sandbox.upload_tree(repo_dir, exclude=exclude)
    base = await make_baseline(sandbox)
    if not setup:
        return base
    await run_setup(sandbox, setup)
    # Files setup made that git does not ignore become part of the base; ignored ones (build
    # outputs, caches) stay as they are, outside every diff.
    script = (
        f"set -e; {_GIT} add --all; "
        f"if ! {_GIT} diff --cached --quiet; then "
        f"{_GIT} commit -q --no-verify -m 'FrogNano setup'; fi; {_GIT} rev-parse HEAD"
    )
    return await _commit_id(sandbox, script, "could not commit the setup's files")


async def commit_all(sandbox: Sandbox, message: str) -> str:
    """Commit everything in /workspace that git does not ignore (even nothing); its id."""
    script = (
        f"set -e; {_GIT} add --all; {_GIT} commit -q --no-verify --allow-empty "
        f"-m {shlex.quote(message)}; {_GIT} rev-parse HEAD"
    )
    return await _commit_id(sandbox, script, "could not commit the earlier rounds")


async def _commit_id(sandbox: Sandbox, script: str, failure: str) -> str:
    """Run `script`, which ends with `git rev-parse HEAD`, in /workspace; the commit id it
    printed last, else SandboxError("`failure`: output")."""
    result = await sandbox.exec(script, cwd=WORKSPACE, timeout=600)
    lines = result.output.strip().splitlines()
    if not result.ok or not lines or not _SHA.match(lines[-1]):
        raise SandboxError(f"{failure}: {result.output.strip()}")
    return lines[-1]


async def run_setup(sandbox: Sandbox, commands: Sequence[str]) -> None:
    """The policy's setup commands, in order, in /workspace; SetupError on the first failure."""
    for command in commands:
        result = await sandbox.exec(
            command, cwd=WORKSPACE, timeout=SETUP_TIMEOUT, output_limit=SETUP_OUTPUT_BYTES
        )
        if not result.ok:
            status = (
                f"timed out after {SETUP_TIMEOUT:g} s"
                if result.timed_out
                else f"exited {result.exit_code}"
            )
            raise SetupError(
                f"the policy's setup command `{command}` {status}:\n{result.output.strip()}"
            )
