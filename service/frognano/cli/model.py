"""`frognano model`: start SGLang the way FrogNano needs it, and check a running model server."""

from __future__ import annotations

import importlib.util
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from frognano.cli.common import console as _console
from frognano.cli.common import fail as _fail
from frognano.cli.common import root_settings as _settings
from frognano.cli.common import run as _run
from frognano.cli.style import typer_app
from frognano.modelserver.sglang import SGLangOptions, conflicting_flags, launch_command
from frognano.terminal import printable

if TYPE_CHECKING:  # the verdicts import the agent's modules: a second, only for `check`
    from frognano.modelserver.verdicts import Item

__all__ = ["model_app"]

model_app = typer_app(
    help="Serve FrogNano-4B with SGLang, and check that a model server suits FrogNano.",
    no_args_is_help=True,
)

DEFAULTS = SGLangOptions(model_path="/models/frognano", served_model_name="frognano")
"""Where the defaults of `model serve` come from (the chart's defaults, see SGLangOptions)."""

INSTALL_HINT = (
    "SGLang is not installed for {python}. It pins an older openai than FrogNano, so give it "
    "an environment of its own on a machine with a GPU: `python3 -m venv ~/sglang && "
    "~/sglang/bin/pip install sglang==0.5.23`, then set FROGNANO_SGLANG_PYTHON=~/sglang/bin/python "
    "(or print the command with `frognano model serve --dry-run` and run it there)"
)
_HAS_SGLANG = "import importlib.util, sys; sys.exit(importlib.util.find_spec('sglang') is None)"


@model_app.command("serve")
def serve_command(  # noqa: PLR0917 - typer maps each parameter to an option
    ctx: typer.Context,
    extra_args: Annotated[
        list[str] | None,
        typer.Argument(
            help="Further SGLang arguments, after `--` (e.g. -- --language-model-only).",
            show_default=False,
        ),
    ] = None,
    model_path: Annotated[
        str,
        typer.Option(
            metavar="PATH",
            help="Folder with FrogNano-4B's weights (or a Hugging Face repository id).",
        ),
    ] = DEFAULTS.model_path,
    host: Annotated[
        str,
        typer.Option(
            metavar="ADDRESS",
            help="Address to listen on. SGLang has no authentication: keep it on loopback "
            "unless a firewall or network policy guards the port.",
        ),
    ] = DEFAULTS.host,
    port: Annotated[
        int, typer.Option(metavar="PORT", help="TCP port to listen on.", min=1, max=65535)
    ] = DEFAULTS.port,
    gpus: Annotated[
        int, typer.Option(help="GPUs to split the model over (SGLang's --tp-size).", min=1)
    ] = DEFAULTS.tp_size,
    context_length: Annotated[
        int, typer.Option(help="Context window in tokens.", min=4096)
    ] = DEFAULTS.context_length,
    mem_fraction_static: Annotated[
        float,
        typer.Option(
            help="Share of GPU memory for the weights and the KV cache.", min=0.01, max=1.0
        ),
    ] = DEFAULTS.mem_fraction_static,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the command line (shell-quoted) and exit.")
    ] = False,
    _no_dry_run: Annotated[bool, typer.Option("--no-dry-run", hidden=True)] = False,
) -> None:
    """Start SGLang serving FrogNano-4B with the flags the Helm chart uses.

    Runs `python -m sglang.launch_server` with FROGNANO_SGLANG_PYTHON (default: this
    interpreter), in place of this process, with --served-model-name FROGNANO_MODEL_NAME,
    --reasoning-parser qwen3, --tool-call-parser qwen3_coder, --enable-metrics and
    --enable-cache-report. Needs a GPU and SGLang; --dry-run needs neither. Exits 2 for bad
    usage, otherwise with SGLang's own status.
    """

    settings = _settings(ctx)
    extra = list(extra_args or [])
    if extra[:1] == ["--"]:
        extra = extra[1:]
    clashes = conflicting_flags(extra)
    if clashes:
        _fail(
            f"{', '.join(clashes)} after `--` would override what `frognano model serve` sets; "
            "use its own options (see --help) instead",
            2,
        )
    options = SGLangOptions(
        model_path=model_path,
        served_model_name=settings.model_name,
        host=host,
        port=port,
        tp_size=gpus,
        context_length=context_length,
        mem_fraction_static=mem_fraction_static,
        extra_args=tuple(extra),
    )
    python = str(settings.sglang_python or sys.executable)
    command = launch_command(python, options)
    line = shlex.join(command)
    if dry_run:
        # Written as is: a console would wrap it or read markup in a path.
        sys.stdout.write(line + "\n")
        return
    # find_spec looks without importing: SGLang's import pulls in torch and CUDA (seconds).
    if not _has_sglang(python):
        _fail(INSTALL_HINT.format(python=python), 2)
    if model_path.startswith(("/", "./", "../")) and not Path(model_path).is_dir():
        _fail(
            f"no model folder at {model_path}; pass --model-path with the folder holding "
            "FrogNano-4B's weights (config.json, *.safetensors, tokenizer files)",
            2,
        )
    local = "127.0.0.1" if host in ("0.0.0.0", "::") else host  # noqa: S104 - compared, not bound
    if ":" in local:
        local = f"[{local}]"  # an IPv6 address in a URL
    sys.stderr.write(
        f"Starting SGLang: {line}\n"
        f"When it is ready: frognano model check --model-url http://{local}:{port}/v1\n"
    )
    sys.stdout.flush()
    sys.stderr.flush()
    # Replace this process rather than wrap it: Ctrl-C and SIGTERM reach SGLang directly, it
    # shuts down its own scheduler processes, and its exit status is ours.
    try:
        os.execv(python, command)  # noqa: S606 - a fixed argv, no shell involved
    except OSError as exc:
        _fail(f"cannot start {python}: {exc.strerror}", 1)


def _stopped_at(items: list[Item]) -> Item | None:
    """The required check that failed and stopped the rest (every later one skipped), if any:
    the server did not answer, answered something else than asked, or lacks the model."""
    from frognano.modelserver.verdicts import Status  # noqa: PLC0415

    for index, item in enumerate(items):
        if item.status is Status.FAIL and item.required:
            rest = items[index + 1 :]
            return item if all(later.status is Status.SKIP for later in rest) else None
    return None


def _has_sglang(python: str) -> bool:
    if python == sys.executable:
        return importlib.util.find_spec("sglang") is not None
    try:
        done = subprocess.run(
            [python, "-c", _HAS_SGLANG], capture_output=True, timeout=60, check=False
        )
    except OSError:
        return False
    return done.returncode == 0


@model_app.command("check")
def check_command(  # noqa: PLR0917 - typer maps each parameter to an option
    ctx: typer.Context,
    model_url: Annotated[
        str | None,
        typer.Option(
            "--model-url",
            metavar="URL",
            help="OpenAI-compatible root, e.g. http://localhost:30000/v1 "
            "(default: FROGNANO_MODEL_BASE_URL).",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            metavar="NAME", help="Served model name to check (default: FROGNANO_MODEL_NAME)."
        ),
    ] = None,
    max_tokens: Annotated[
        int, typer.Option(help="Tokens the test completion may generate.", min=16)
    ] = 512,
    timeout: Annotated[
        float, typer.Option(metavar="SECONDS", help="Seconds to wait for each answer.", min=1)
    ] = 120.0,
    base_url: Annotated[str | None, typer.Option("--base-url", hidden=True)] = None,
) -> None:
    """Check that a model server is reachable, serves the model and parses its output.

    Asks /v1/models, then sends one small chat completion with FrogNano's tools and thinking
    on, and reports whether the tool call came back parsed (--tool-call-parser qwen3_coder),
    the reasoning separated (--reasoning-parser qwen3) and cached prompt tokens reported
    (--enable-cache-report; a warning only). The API key is FROGNANO_MODEL_API_KEY. Exits 0
    when every required check passed, 1 otherwise, 2 for bad usage. A failure that stops the
    checks (no answer, an answer that is not what was asked, the model not served) is one
    error line and one hint line, without the table.
    """
    from rich.table import Table  # noqa: PLC0415

    # Imported here: the openai client and the agent's modules take a second to import.
    from frognano.modelserver.check import check_server  # noqa: PLC0415
    from frognano.modelserver.verdicts import Status, Target, required_passed  # noqa: PLC0415

    settings = _settings(ctx)
    url = (model_url or base_url or settings.model_base_url).rstrip("/")
    scheme, _, rest = url.partition("://")
    if scheme not in ("http", "https") or not rest:
        _fail(f"--model-url {url!r} is not an http:// or https:// URL", 2)
    name = model or settings.model_name
    if not name.strip():
        _fail("--model must not be empty", 2)
    key = settings.model_api_key.get_secret_value() if settings.model_api_key else None
    items = _run(check_server(Target(url, name, key), max_tokens=max_tokens, timeout=timeout))
    stopped = _stopped_at(items)
    if stopped is not None:
        # Nothing after it was checked: a table of "skipped" rows would only hide the cause.
        err = _console(stderr=True)
        for label, style, text in (
            ("error:", "bold red", f"the model server is not ready for FrogNano: "
             f"{stopped.name}: {stopped.detail}"),
            ("hint:", "bold", stopped.fix),
        ):  # fmt: skip
            if text:
                # The server's words may span lines; the message stays one line.
                err.print(
                    Text.assemble((label, style), " ", printable(" ".join(text.split("\n")))),
                    highlight=False,
                    soft_wrap=True,
                )
        raise typer.Exit(1)

    shown = {
        Status.OK: "[green]ok[/]",
        Status.FAIL: "[bold red]FAIL[/]",
        Status.WARN: "[yellow]warning[/]",
        Status.SKIP: "[dim]skipped[/]",
    }
    table = Table(title=Text(printable(f"Model server {url}, model {name!r}")))
    for column in ("check", "result", "detail"):
        table.add_column(column)
    for item in items:
        # Text, not markup, controls shown: details quote what the server sent.
        table.add_row(item.name, shown[item.status], Text(printable(item.detail)))
    out = _console()
    out.print(table)
    err = _console(stderr=True)
    for item in items:
        if item.fix is not None and item.status in (Status.FAIL, Status.WARN):
            label = "error" if item.status is Status.FAIL else "warning"
            err.print(
                printable(f"{label}: {item.name}: {item.detail}. Fix: {item.fix}"),
                highlight=False,
                soft_wrap=True,
                markup=False,
                emoji=False,
            )
    if not required_passed(items):
        failed = sum(1 for item in items if item.status is Status.FAIL)
        _fail(f"the model server is not ready for FrogNano ({failed} check(s) failed)", 1)
    out.print("The model server is ready for FrogNano.")
