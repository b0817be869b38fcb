"""Which policy a command-line run gets: the policy folder's, plus what its options override."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from frognano.errors import ConfigError
from frognano.policy.loader import load_policies
from frognano.policy.models import EffectivePolicy, EnvironmentPolicy

PolicyDirOption = Annotated[
    Path | None,
    typer.Option(
        help="Policy folder (default: FROGNANO_POLICY_DIR; the built-in defaults when that "
        "folder does not exist).",
        file_okay=False,
    ),
]
RepoOption = Annotated[
    str | None,
    typer.Option(
        metavar="OWNER/NAME",
        help="OWNER/NAME the policy rules match (default: from the `origin` remote, else "
        "local/FOLDER).",
    ),
]
IndexUrlOption = Annotated[
    str | None,
    typer.Option(
        "--index-url",
        metavar="URL",
        help="The package index the environment phase installs through (sets the policy's "
        "environment.index_url for this run).",
    ),
]


def policy_for(repo: str, given: Path | None, configured: Path) -> tuple[EffectivePolicy, str]:
    """The effective policy for `repo` and where it came from. Without `--policy-dir`, a
    missing FROGNANO_POLICY_DIR means the built-in defaults (a laptop has no policy folder)."""
    directory = given or configured
    if given is None and not directory.exists():
        return EffectivePolicy(), f"built-in defaults ({directory} does not exist)"
    policies = load_policies(directory)
    try:
        effective = policies.for_repo(repo)
    except ValueError as exc:
        raise ConfigError(f"--repo {repo!r}: {exc}") from exc
    return effective, f"{directory} ({len(policies.files)} file(s))"


def with_index_url(
    policy: EffectivePolicy, source: str, index_url: str | None
) -> tuple[EffectivePolicy, str]:
    """The policy with `--index-url` as its environment.index_url, when given."""
    if index_url is None:
        return policy, source
    try:
        environment = EnvironmentPolicy.model_validate(
            {**policy.environment.model_dump(), "index_url": index_url}
        )
    except ValidationError as exc:
        raise ConfigError(f"--index-url {index_url!r}: {exc.errors()[0]['msg']}") from None
    return policy.model_copy(update={"environment": environment}), f"{source}; --index-url"
