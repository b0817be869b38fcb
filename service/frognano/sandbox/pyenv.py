"""Which Python environment a local sandbox exposes, and which host paths that takes."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from frognano.errors import ConfigError

# Host directories that every local sandbox already mounts read-only.
SYSTEM_DIRS = ("/usr", "/etc")


@dataclass(frozen=True)
class PythonEnv:
    """A Python environment: `bin_dir` goes first on PATH; `mounts` are bound read-only at
    their own paths so that scripts' absolute shebangs and the interpreter's home resolve."""

    prefix: Path
    bin_dir: Path
    mounts: tuple[Path, ...]
    is_venv: bool


def _inside(path: Path, parents: tuple[str, ...]) -> bool:
    return any(path == Path(p) or path.is_relative_to(p) for p in parents)


def _interpreter(prefix: Path) -> Path | None:
    for name in ("python", "python3"):
        candidate = prefix / "bin" / name
        if candidate.exists():
            return candidate
    return None


def _venv_home(prefix: Path) -> Path | None:
    try:
        lines = (prefix / "pyvenv.cfg").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return Path(value.strip())
    return None


def resolve_python_env(explicit: Path | None, repo_dir: Path | None) -> PythonEnv:
    """The environment to expose: `explicit` if given, else `repo_dir/.venv` if it holds a
    Python, else the environment running FrogNano. Raises ConfigError with a fix."""
    if explicit is not None:
        prefix = Path(os.path.abspath(explicit))
        if _interpreter(prefix) is None:
            raise ConfigError(
                f"the Python environment {explicit} has no bin/python; pass the directory of a "
                "virtual environment or Python installation (the one containing bin/python)"
            )
    elif repo_dir is not None and _interpreter(repo_dir / ".venv") is not None:
        prefix = Path(os.path.abspath(repo_dir / ".venv"))
    else:
        prefix = Path(sys.prefix)

    mounts: list[Path] = []

    def add(path: Path) -> None:
        path = Path(os.path.abspath(path))
        if path == Path("/") or _inside(path, SYSTEM_DIRS):
            return
        if any(path == m or path.is_relative_to(m) for m in mounts):
            return
        mounts[:] = [m for m in mounts if not m.is_relative_to(path)]
        mounts.append(path)

    add(prefix)
    add(prefix.resolve())
    # A venv's interpreter lives in its base installation (pyenv, uv, a source build): mount
    # that too, or `bin/python` is a dangling symlink inside the sandbox.
    interpreter = _interpreter(prefix)
    if interpreter is not None:
        add(interpreter.resolve().parent.parent)
    home = _venv_home(prefix)
    if home is not None:
        add(home.parent)
        add(home.resolve().parent)
    return PythonEnv(
        prefix=prefix,
        bin_dir=prefix / "bin",
        mounts=tuple(mounts),
        is_venv=(prefix / "pyvenv.cfg").exists(),
    )
