"""The `frognano` command: builds Settings once, then wires and starts what was asked for."""

from __future__ import annotations

from typing import Annotated

import typer

from frognano import __version__
from frognano.cli.appcreate import app_app
from frognano.cli.common import console as _console
from frognano.cli.common import fail as _fail
from frognano.cli.env import env_app
from frognano.cli.eval import eval_command
from frognano.cli.model import model_app
from frognano.cli.policy import policy_app
from frognano.cli.sandbox import sandbox_app
from frognano.cli.serve import serve_command
from frognano.cli.solve import solve_command
from frognano.cli.style import typer_app
from frognano.cli.trajectory import trajectory_app
from frognano.cli.worker import worker_command
from frognano.errors import ConfigError
from frognano.log import configure_logging
from frognano.settings import load_settings

app = typer_app(
    name="frognano",
    help="Draft pull requests with the FrogNano-4B coding agent, in sandboxes without network.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(env_app, name="env")
app.command("solve")(solve_command)
app.command("eval")(eval_command)
app.command("serve")(serve_command)
app.command("worker")(worker_command)
app.add_typer(policy_app, name="policy")
app.add_typer(model_app, name="model")
app.add_typer(trajectory_app, name="trajectory")
app.add_typer(app_app, name="app")


def _version(value: bool) -> None:
    if value:
        _console().print(f"frognano {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", is_eager=True, callback=_version
        ),
    ] = False,
) -> None:
    """FrogNano drafts pull requests for labelled issues with a small coding agent that works
    in a sandbox without network; a human reviews every draft.

    Settings come from FROGNANO_* environment variables (see docs/configuration.md).
    """
    try:
        settings = load_settings()
    except ConfigError as exc:
        _fail(str(exc), 2)
    configure_logging(settings.log_format, settings.log_level)
    ctx.obj = settings


def main() -> None:
    """Console-script entry point."""
    app()
