"""Options that several commands share: the sandbox backend and the Python environment."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from frognano.settings import SandboxBackend

SandboxChoice = Annotated[
    SandboxBackend | None,
    typer.Option("--sandbox", help="Sandbox backend (default: FROGNANO_SANDBOX)."),
]
PythonEnvOption = Annotated[
    Path | None,
    typer.Option(
        "--python-env",
        help="Python environment to mount read-only and put first on PATH "
        "(default: FROGNANO_PYTHON_ENV, else the one running frognano).",
        file_okay=False,
    ),
]
RepoVenvOption = Annotated[
    bool,
    typer.Option(
        "--repo-venv",
        help="Use REPO_DIR/.venv as the Python environment (only for a checkout you trust; "
        "refused if it points outside itself).",
    ),
]
