"""Which Python environment a local sandbox exposes, and which host paths that takes."""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from frognano.errors import ConfigError
from frognano.sandbox.hostpaths import HostPaths

# Host directories that every local sandbox already mounts read-only.
SYSTEM_DIRS = ("/usr", "/etc")
# A repository's own environment is walked for sockets before it is mounted; past this many
# entries it is refused rather than walked for ever.
MAX_REPO_VENV_ENTRIES = 200_000


@dataclass(frozen=True)
class PythonEnv:
    """A Python environment: `bin_dir` goes first on PATH; `mounts` are bound read-only at
    their own paths so that scripts' absolute shebangs and the interpreter's home resolve."""

    prefix: Path
    bin_dir: Path
    mounts: tuple[Path, ...]
    is_venv: bool
    source: str
    """Who chose it: `--python-env`, `the repository's .venv` or `FrogNano's own`."""

    def host_paths(self) -> HostPaths:
        """Its host folders as the sandbox shows them, each with a placeholder: `<python>` for
        the environment itself, `<python-base>` (then `-2`, `-3`...) for each other folder it
        mounts, such as the base installation a venv runs on; none under /usr or /etc."""
        named: list[tuple[Path, str]] = [
            (self.prefix, "<python>"),
            (self.prefix.resolve(), "<python>"),
        ]
        by_real = {self.prefix.resolve(): "<python>"}
        for mount in self.mounts:
            real = mount.resolve()
            if real not in by_real:
                count = len(by_real)
                by_real[real] = "<python-base>" if count == 1 else f"<python-base-{count}>"
            named += [(mount, by_real[real]), (real, by_real[real])]
        # The system folders are the same on every host and say nothing of this one.
        return HostPaths.of(pair for pair in named if not _inside(pair[0], SYSTEM_DIRS))


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


class _Mounts:
    """Host directories to bind, none inside another and none already mounted as a system dir."""

    def __init__(self) -> None:
        self.paths: list[Path] = []

    def add(self, path: Path) -> None:
        path = Path(os.path.abspath(path))
        if path == Path("/") or _inside(path, SYSTEM_DIRS):
            return
        if any(path == m or path.is_relative_to(m) for m in self.paths):
            return
        self.paths[:] = [m for m in self.paths if not m.is_relative_to(path)]
        self.paths.append(path)


def _implied(prefix: Path, home: Path | None) -> list[Path]:
    """Every host directory an environment needs: itself, where its interpreter really lives,
    and the base installation its pyvenv.cfg names."""
    found = [prefix, prefix.resolve()]
    interpreter = _interpreter(prefix)
    if interpreter is not None:
        # A venv's interpreter lives in its base installation (pyenv, uv, a source build):
        # without it `bin/python` is a dangling symlink inside the sandbox.
        found.append(interpreter.resolve().parent.parent)
    if home is not None:
        found += [home.parent, home.resolve().parent]
    return found


def _sockets_under(root: Path) -> Path | None:
    """The first unix socket below `root` (links not followed), or None."""
    seen = 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in (*dirs, *files):
            seen += 1
            if seen > MAX_REPO_VENV_ENTRIES:
                raise ConfigError(
                    f"the repository's .venv at {root} has over {MAX_REPO_VENV_ENTRIES} "
                    "entries; pass --python-env with an environment outside the checkout"
                )
            with_name = Path(folder) / name
            try:
                if stat.S_ISSOCK(os.lstat(with_name).st_mode):
                    return with_name
            except OSError:
                continue
    return None


def _own_mounts() -> list[Path]:
    """What FrogNano's own environment needs: what the running interpreter knows of itself."""
    mounts = _Mounts()
    prefix, base = Path(sys.prefix), Path(sys.base_prefix)
    for path in (prefix, prefix.resolve(), base, base.resolve()):
        mounts.add(path)
    mounts.add(Path(os.path.realpath(sys.executable)).parent.parent)
    return mounts.paths


def _repo_venv(venv: Path) -> tuple[Path, list[Path]]:
    """A repository's .venv and its mounts, refused unless everything it implies lies inside
    it, in the system directories or in what FrogNano's own environment mounts anyway: its
    pyvenv.cfg and symlinks are the repository's to write and must not choose a host folder."""
    prefix = Path(os.path.abspath(venv))
    if _interpreter(prefix) is None:
        raise ConfigError(
            f"{venv} has no bin/python; create it (python3 -m venv .venv) or leave out --repo-venv"
        )
    own = _own_mounts()
    mounts = [prefix]
    for path in _implied(prefix, _venv_home(prefix)):
        resolved = Path(os.path.abspath(path)).resolve()
        if resolved != Path("/") and _inside(resolved, (str(prefix.resolve()), *SYSTEM_DIRS)):
            continue
        trusted = [m for m in own if resolved == m or resolved.is_relative_to(m)]
        if trusted:
            mounts.append(trusted[0])
            continue
        raise ConfigError(
            f"the repository's .venv ({prefix}) points outside itself, at {path}; a "
            "repository's environment may only use its own files, the system's (/usr) and "
            "the Python FrogNano runs on. Pass that environment with --python-env instead if "
            "you trust it"
        )
    socket = _sockets_under(prefix)
    if socket is not None:
        raise ConfigError(
            f"the repository's .venv holds a socket ({socket}); it is not mounted. Remove it "
            "or pass --python-env"
        )
    return prefix, mounts


def resolve_python_env(explicit: Path | None, repo_venv: Path | None = None) -> PythonEnv:
    """The environment to expose: `explicit` (the operator's --python-env) if given, else
    `repo_venv` (a checkout's .venv, only when the caller asked for it), else the environment
    running FrogNano. Nothing read from a repository can name a host directory to mount.
    Raises ConfigError with a fix."""
    mounts = _Mounts()
    if explicit is not None:
        prefix = Path(os.path.abspath(explicit))
        if _interpreter(prefix) is None:
            raise ConfigError(
                f"the Python environment {explicit} has no bin/python; pass the directory of a "
                "virtual environment or Python installation (the one containing bin/python)"
            )
        source = "--python-env"
        for path in _implied(prefix, _venv_home(prefix)):
            mounts.add(path)
    elif repo_venv is not None:
        prefix, paths = _repo_venv(repo_venv)
        source = "the repository's .venv"
        for path in paths:
            mounts.add(path)
    else:
        prefix = Path(sys.prefix)
        source = "FrogNano's own"
        for path in _own_mounts():
            mounts.add(path)
    return PythonEnv(
        prefix=prefix,
        bin_dir=prefix / "bin",
        mounts=tuple(mounts.paths),
        is_venv=(prefix / "pyvenv.cfg").exists(),
        source=source,
    )
