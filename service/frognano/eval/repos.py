"""An instance's repository at its base commit, from a local checkout or bare mirror."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from frognano.errors import ConfigError


def find_repository(repos: Path, repo: str) -> Path:
    """The git directory for `owner/name` under `--repos`: `owner__name` (SWE-bench's naming),
    `owner/name` or `name`, each a checkout or a bare mirror (with or without `.git`)."""
    owner, name = repo.split("/", 1)
    candidates = [
        repos / f"{owner}__{name}",
        repos / owner / name,
        repos / name,
    ]
    for candidate in candidates:
        for path in (candidate, candidate.with_name(candidate.name + ".git")):
            gitdir = _git_dir(path)
            if gitdir is not None:
                return gitdir
    tried = ", ".join(str(c.relative_to(repos)) for c in candidates)
    raise ConfigError(
        f"no git repository for {repo} under {repos} (tried {tried}, each also with .git); "
        f"make one with: git clone --mirror https://github.com/{repo} "
        f"{repos / (owner + '__' + name)}"
    )


def _git_dir(path: Path) -> Path | None:
    if (path / ".git").is_dir():
        return path / ".git"
    if (path / "HEAD").is_file() and (path / "objects").is_dir():
        return path
    return None


def check_out(gitdir: Path, commit: str, target: Path) -> None:
    """Write the files of `commit` to `target` (an empty folder): every tracked file, with
    no `.git` and so no history after the base, where the fix may sit. git's own index
    and HEAD in `gitdir` are never touched, so instances can share one mirror."""
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="frognano-index-") as scratch:
        env = {
            **os.environ,
            "GIT_INDEX_FILE": str(Path(scratch) / "index"),
            "GIT_DIR": str(gitdir),
            "GIT_WORK_TREE": str(target),
        }
        _git(env, "cat-file", "-e", f"{commit}^{{commit}}", what=f"commit {commit}")
        _git(env, "read-tree", commit, what=f"the tree of {commit}")
        # checkout-index writes files as they are committed, unlike `git archive`, which
        # leaves out what .gitattributes marks export-ignore.
        _git(env, "checkout-index", "--all", "--force", what=f"the files of {commit}")


def _git(env: dict[str, str], *args: str, what: str) -> None:
    try:
        subprocess.run(
            ["git", *args],
            env=env,
            check=True,
            capture_output=True,
            timeout=600,
        )
    except subprocess.CalledProcessError as exc:
        detail = exc.stderr.decode(errors="replace").strip().splitlines()
        raise ConfigError(
            f"cannot read {what} from {env['GIT_DIR']}: {detail[-1] if detail else exc}"
        ) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"cannot run git for {what}: {exc}") from None
