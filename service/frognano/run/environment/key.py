"""The environment key: a digest of everything that decides what an install produces."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from frognano.errors import ConfigError
from frognano.sandbox.isolation import LAUNCH_ENV
from frognano.sandbox.pyenv import PythonEnv

# Bumped whenever how FrogNano builds an environment changes, so that no older build is reused.
BUILD_FORMAT = 1
# A dependency file bigger than this is hashed in pieces all the same; the cap only keeps a
# hostile repository from making FrogNano read for ever.
MAX_KEY_FILE_BYTES = 64 * 1024 * 1024

_IDENTITY = (
    "import platform, sys; "
    "print(sys.version.replace(chr(10), ' '), platform.machine(), sys.implementation.cache_tag)"
)


def interpreter_identity(python_env: PythonEnv) -> str:
    """What the environment's base interpreter is: its real path, version and machine."""
    python = python_env.bin_dir / "python"
    if not python.exists():
        python = python_env.bin_dir / "python3"
    try:
        done = subprocess.run(
            [str(python), "-I", "-c", _IDENTITY],
            capture_output=True,
            text=True,
            env=LAUNCH_ENV,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ConfigError(f"cannot run the environment's base interpreter {python}: {exc}") from exc
    return f"{os.path.realpath(python)} {done.stdout.strip()}"


def file_digest(repo_dir: Path, relative: str) -> str:
    """sha256 of a repository file as the build will see it: its bytes, or for a symlink the
    link itself (never what it points at, which may be outside the repository)."""
    path = repo_dir / relative
    digest = hashlib.sha256()
    try:
        if path.is_symlink():
            digest.update(b"symlink:" + os.fsencode(os.readlink(path)))
            return digest.hexdigest()
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return "absent"
    with os.fdopen(fd, "rb") as handle:
        read = 0
        while chunk := handle.read(1 << 20):
            read += len(chunk)
            if read > MAX_KEY_FILE_BYTES:
                raise ConfigError(f"{relative} is larger than {MAX_KEY_FILE_BYTES} bytes")
            digest.update(chunk)
    return digest.hexdigest()


def environment_key(
    repo_dir: Path,
    key_files: Sequence[str],
    commands: Sequence[str],
    *,
    index_urls: Sequence[str],
    interpreter: str,
    image: str,
    generated: Sequence[tuple[str, bytes]] = (),
) -> str:
    """The digest naming one environment: the dependency files' bytes, the base interpreter,
    the sandbox image (or host), the install commands and the approved index. A token for the
    index is not part of it: rotating a token rebuilds nothing."""
    decided = {
        "format": BUILD_FORMAT,
        "files": {path: file_digest(repo_dir, path) for path in sorted(set(key_files))},
        "commands": list(commands),
        # What FrogNano wrote from a lock: a fix to the translation is another environment.
        "generated": {name: hashlib.sha256(data).hexdigest() for name, data in generated},
        "index_urls": list(index_urls),
        "interpreter": interpreter,
        "image": image,
    }
    canonical = json.dumps(decided, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(canonical).hexdigest()
