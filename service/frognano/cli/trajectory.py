"""`frognano trajectory show` and `frognano trajectory replay`: reading and auditing runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

import typer

from frognano.agent.trajectory import read_events, render
from frognano.agent.trajectory_view import run_files
from frognano.cli.common import console as _console
from frognano.cli.common import fail as _fail
from frognano.cli.common import say as _say
from frognano.cli.solve import solve_command
from frognano.cli.style import typer_app

trajectory_app = typer_app(help="Read the trajectories that runs record.", no_args_is_help=True)


@trajectory_app.command("replay")
def trajectory_replay(  # noqa: PLR0917 - typer maps each parameter to an argument or option
    ctx: typer.Context,
    trajectory: Annotated[
        Path, typer.Argument(help="A run's trajectory.jsonl.", exists=True, dir_okay=False)
    ],
    repo_dir: Annotated[
        Path,
        typer.Argument(help="The checkout the run started from.", exists=True, file_okay=False),
    ],
    issue_file: Annotated[
        Path,
        typer.Option("--issue-file", help="The run's issue text.", exists=True, dir_okay=False),
    ],
    patch: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="The patch to reproduce (default: patch.diff beside the trajectory).",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="Folder for the replay's results (default: a new run's)."),
    ] = None,
) -> None:
    """Audit a recorded run: check the task, base tree and policy digests it records,
    re-execute its tool calls in a fresh sandbox comparing each call's arguments and result
    with the recorded ones, then verification and the gate, and compare the patch byte for
    byte: "this pull request's patch is what this trajectory produces". The first difference
    is named with both versions. Exit 0 when it reproduces, 1 when not."""
    expected = patch if patch is not None else trajectory.parent / "patch.diff"
    if not expected.is_file():
        _fail(f"no recorded patch at {expected}; pass the one to compare with --patch", 2)
    ctx.invoke(
        solve_command, ctx, repo_dir=repo_dir, issue_file=issue_file, replay=trajectory,
        expect_patch=expected, out=out,
    )  # fmt: skip


@trajectory_app.command("show")
def trajectory_show(
    file: Annotated[
        Path, typer.Argument(help="A trajectory.jsonl file.", exists=True, dir_okay=False)
    ],
    full: Annotated[
        bool, typer.Option("--full", help="Print texts whole instead of cutting them.")
    ] = False,
    output_format: Annotated[
        Literal["text", "html"],
        typer.Option(
            "--format",
            help="html: one self-contained page (reasoning folded), texts whole.",
        ),
    ] = "text",
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Write to this file instead of standard output.", dir_okay=False
        ),
    ] = None,
    _no_full: Annotated[bool, typer.Option("--no-full", hidden=True)] = False,
) -> None:
    """Print a recorded run: the model, sampling and limits, each model turn (Edit calls as
    diffs), tool call and result, and, from report.json and patch.diff beside the file, the
    verdict and the patch. Exits 2 for a file with no readable event (empty, or not a
    trajectory) or an unknown --format."""
    try:
        read = read_events(file)
    except OSError as exc:
        _fail(f"cannot read {file}: {exc.strerror or exc}", 2)
    if not read.events:
        what = (
            "is empty"
            if not read.damaged_lines
            else f"has no readable event ({len(read.damaged_lines)} unreadable line(s))"
        )
        _fail(
            f"{file} {what}: a trajectory is the trajectory.jsonl that `frognano solve` or the "
            "worker writes, one JSON event per line",
            2,
        )
    files = run_files(file)
    if output_format == "html":
        from frognano.agent.trajectory_html import render_html  # noqa: PLC0415

        page = render_html(read.events, source=str(file), files=files)
    else:
        limit = 10**9 if full else 2000
        page = "".join(block + "\n" for block in render(read.events, max_chars=limit, files=files))
    if out is None:
        sys.stdout.write(page)
        sys.stdout.flush()
    else:
        out.write_text(page, encoding="utf-8")
        _say(_console(stderr=True), f"Wrote {out}")
    if read.damaged_lines:
        lines = ", ".join(map(str, read.damaged_lines))
        _console(stderr=True).print(
            f"warning: skipped unreadable line(s) {lines} (a run killed mid-write leaves one)"
        )
