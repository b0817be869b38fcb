"""`frognano policy`: validate the admins' policy files, print their schema, explain a repo."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from frognano.errors import ConfigError
from frognano.policy.fileformat import file_schema_text
from frognano.policy.issues import PolicyError
from frognano.policy.loader import PolicySet, load_policies
from frognano.policy.merge import check_repo_name
from frognano.settings import Settings
from frognano.terminal import printable

__all__ = ["policy_app"]

policy_app = typer.Typer(
    help="Check the admins' policy files and show what they decide for a repository.",
    no_args_is_help=True,
)

# The three helpers below mirror cli.py's; importing them would make cli.py, which imports
# this module, a cycle.


@functools.cache
def _console(stderr: bool = False) -> Console:
    # Made on first use, not at import: a Console reads the environment (NO_COLOR, COLUMNS).
    return Console(stderr=stderr)


def _fail(message: str, code: int) -> NoReturn:
    line = Text.assemble(("error:", "bold red"), " ", printable(message))
    _console(stderr=True).print(line, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _settings(ctx: typer.Context) -> Settings:
    settings = ctx.find_root().obj
    if not isinstance(settings, Settings):  # only if a command is invoked without the root
        raise typer.Exit(2)
    return settings


def _load(directory: Path) -> PolicySet:
    """The policy set, or exit: 1 with one line per problem on stdout, 2 for a missing or
    empty directory."""
    try:
        return load_policies(directory)
    except PolicyError as exc:
        _print_issues(exc)
        count = len(exc.issues)
        _fail(f"{count} problem{'s' if count != 1 else ''} in the policy files of {directory}", 1)
    except ConfigError as exc:
        _fail(str(exc), 2)


def _print_issues(exc: PolicyError) -> None:
    # Plain lines (FILE:LINE: key: message), as compilers print them, for editors and CI.
    sys.stdout.write("".join(f"{issue}\n" for issue in exc.issues))
    sys.stdout.flush()


PolicyDirArgument = Annotated[
    Path | None,
    typer.Argument(
        help="Directory of policy *.yaml files (default: FROGNANO_POLICY_DIR).",
        show_default=False,
    ),
]


@policy_app.command("validate")
def validate_command(ctx: typer.Context, directory: PolicyDirArgument = None) -> None:
    """Check every *.yaml directly in the policy directory, as the service would load them.

    Prints each problem as FILE:LINE: key: message and exits 1, or says how many files are
    valid and exits 0. A missing or empty directory exits 2.
    """
    where = directory if directory is not None else _settings(ctx).policy_dir
    policies = _load(where)
    count = len(policies.files)
    _console().print(f"{count} file{'s' if count != 1 else ''} valid", highlight=False)


@policy_app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of a policy file (the same as policies/schema.json).

    Regenerate the committed copy with: frognano policy schema > policies/schema.json
    """
    sys.stdout.write(file_schema_text())
    sys.stdout.flush()


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)


@policy_app.command("explain")
def explain_command(
    ctx: typer.Context,
    repo: Annotated[
        str, typer.Argument(metavar="OWNER/REPO", help="The repository, e.g. acme/api.")
    ],
    policy_dir: Annotated[
        Path | None,
        typer.Option(
            "--policy-dir",
            help="Directory of policy *.yaml files (default: FROGNANO_POLICY_DIR).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Show the policy in force for OWNER/REPO and where each key comes from.

    For each key: its value, and the file, line and rule that set it (or the built-in
    default). Says so first when the repository is disabled.
    """
    try:
        check_repo_name(repo)
    except ValueError as exc:
        _fail(str(exc), 2)
    directory = policy_dir if policy_dir is not None else _settings(ctx).policy_dir
    policies = _load(directory)
    try:
        origins = policies.explain(repo)
    except PolicyError as exc:
        _print_issues(exc)
        _fail(f"the policy files give {repo} an invalid policy", 1)
    out = _console()
    enabled = next(origin for origin in origins if origin.path == "enabled")
    if enabled.value:
        out.print(Text(f"{repo}: enabled", style="bold green"))
    else:
        out.print(
            Text(
                f"{repo}: DISABLED by {enabled.source}; FrogNano ignores its issues "
                "(the keys below would apply if it were enabled)",
                style="bold red",
            )
        )
    table = Table(title=f"Policy of {repo} ({len(policies.files)} file(s) in {directory})")
    for column in ("key", "value", "from"):
        table.add_column(column, overflow="fold")
    for origin in origins:
        table.add_row(
            Text(origin.path),
            Text(_shown(origin.value)),
            Text(origin.source, style="dim" if origin.file is None else ""),
        )
    out.print(table)
