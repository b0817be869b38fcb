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

from frognano.cli.style import typer_app
from frognano.errors import ConfigError
from frognano.policy.fileformat import file_schema_text
from frognano.policy.issues import PolicyError, PolicyIssue
from frognano.policy.loader import PolicySet, load_policies
from frognano.policy.merge import Origin, check_repo_name
from frognano.policy.models import EffectivePolicy
from frognano.policy.order import name_warnings
from frognano.settings import Settings
from frognano.terminal import printable

__all__ = ["policy_app"]

policy_app = typer_app(
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


def _print_warnings(warnings: list[PolicyIssue], names: list[PolicyIssue]) -> None:
    """Each warning as one plain `FILE:LINE: warning: key: message` line (file names first:
    the order they break explains the rest), then a summary of each kind."""
    if not warnings and not names:
        return
    found = [*names, *warnings]
    sys.stdout.write("".join(f"{printable(str(warning))}\n" for warning in found))
    sys.stdout.flush()
    err = _console(stderr=True)
    if names:
        count = len(names)
        err.print(
            Text.assemble(
                ("warning:", "bold yellow"),
                f" {count} policy file{'s' if count != 1 else ''} "
                f"{'do' if count != 1 else 'does'} not follow the NN-name.yaml naming, so "
                "the order they apply in is easy to misjudge (see above)",
            ),
            highlight=False,
            soft_wrap=True,
        )
    if warnings:
        count = len(warnings)
        err.print(
            Text.assemble(
                ("warning:", "bold yellow"),
                f" {count} list{'s' if count != 1 else ''} of the policy files "
                f"{'drop' if count != 1 else 'drops'} entries that "
                "protect something (see above)",
            ),
            highlight=False,
            soft_wrap=True,
        )


PolicyDirArgument = Annotated[
    Path | None,
    typer.Argument(
        metavar="DIR",
        help="Directory of policy *.yaml files (default: FROGNANO_POLICY_DIR).",
        show_default=False,
    ),
]


PolicyDirOption = Annotated[
    Path | None,
    typer.Option(
        "--policy-dir",
        metavar="DIR",
        help="Directory of policy *.yaml files (default: FROGNANO_POLICY_DIR).",
        show_default=False,
    ),
]


@policy_app.command("validate")
def validate_command(
    ctx: typer.Context, directory: PolicyDirArgument = None, policy_dir: PolicyDirOption = None
) -> None:
    """Check every *.yaml directly in the policy directory, as the service would load them.

    Prints each problem as FILE:LINE: key: message and exits 1, or says how many files are
    valid and exits 0. A missing or empty directory exits 2. A list that replaces one of the
    protective lists and drops entries, and a file whose name does not start with NN- (its
    place in the order is easy to misjudge), are warnings (FILE:LINE: warning: ...), exit 0.
    """
    if directory is not None and policy_dir is not None and directory != policy_dir:
        _fail("give the policy directory once: as DIR or as --policy-dir", 2)
    where = directory or policy_dir or _settings(ctx).policy_dir
    policies = _load(where)
    _print_warnings(policies.warnings(), name_warnings(policies.files))
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
    policy_dir: PolicyDirOption = None,
    changed: Annotated[
        bool,
        typer.Option(
            "--changed", help="Only what the policy files change from the built-in defaults."
        ),
    ] = False,
) -> None:
    """Show the policy in force for OWNER/REPO and where each key comes from.

    For each key: its value, and the file, line and rule that set it (or the built-in
    default); entries added to a list by a KEY_extra are shown with their own file and line.
    Says so first when the repository is disabled, and warns about lists that drop entries.
    """
    try:
        check_repo_name(repo)
    except ValueError as exc:
        _fail(str(exc), 2)
    directory = policy_dir if policy_dir is not None else _settings(ctx).policy_dir
    policies = _load(directory)
    try:
        origins = policies.explain(repo)
        warnings = policies.warnings(repo)
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
    _print_warnings(warnings, name_warnings(policies.files))
    if changed:
        files = ["(" + str(len(policies.files)), "file(s)", "in", f"{directory})"]
        _print_changed(origins, files, out.width)
        return
    table = Table(title=f"Policy of {repo} ({len(policies.files)} file(s) in {directory})")
    for column in ("key", "value", "from"):
        table.add_column(column, overflow="fold")
    for origin in origins:
        table.add_row(
            Text(origin.path),
            Text(_shown(origin.value if not origin.additions else _base(origin))),
            Text(origin.source, style="dim" if origin.file is None else ""),
        )
        for addition in origin.additions:
            table.add_row(
                Text(f"{origin.path}_extra"), Text(_shown(list(addition.entries))), addition.source
            )
    out.print(table)


def _base(origin: Origin) -> list[Any]:
    """A list's entries before its additions."""
    added = {entry for addition in origin.additions for entry in addition.entries}
    return [entry for entry in origin.value if entry not in added]


def _source_atoms(source: str, file: Path | None, line: int | None) -> list[str]:
    """`source` in words that wrapping may separate; FILE:LINE stays one of them."""
    if file is None or line is None:
        return source.split()
    where = f"{file}:{line}"
    return [where, *source.removeprefix(where).split()]


def _wrapped(atoms: list[str], width: int, indent: str = "  ") -> str:
    """`atoms` joined by spaces in lines of at most `width` (an atom longer than that gets a
    line of its own, never broken); continuation lines start with `indent`."""
    lines: list[str] = []
    current = ""
    for atom in atoms:
        if current and len(current) + 1 + len(atom) > width:
            lines.append(current)
            current = indent + atom
        else:
            current = f"{current} {atom}" if current else atom
    lines.append(current)
    return "".join(f"{printable(text)}\n" for text in lines)


def _print_changed(origins: list[Origin], files: list[str], width: int) -> None:
    """The keys whose value differs from the built-in default, with where each change is."""
    dumped = EffectivePolicy().model_dump()
    head = ["What", "the", "policy", "files", *files, "change", "from", "the", "built-in"]
    out = [_wrapped([*head, "defaults:"], width)]
    for origin in origins:
        section, dot, key = origin.path.partition(".")
        default = dumped[section][key] if dot else dumped[origin.path]
        if origin.value == default:
            continue
        base = _source_atoms(origin.source, origin.file, origin.line)
        if not isinstance(default, list):
            was = f"(built-in: {_shown(default)})".split(" ")
            head = [f"{origin.path}:", *_shown(origin.value).split(" "), *was]
            out.append(_wrapped(head, width, "    "))
            out.append(_wrapped(["  from", *base], width, "    "))
            continue
        out.append(_wrapped([f"{origin.path}:"], width))
        kept = _base(origin)
        new = [json.dumps(entry) for entry in kept if entry not in default]
        gone = [json.dumps(entry) for entry in default if entry not in origin.value]
        if new:
            out.append(_wrapped(["  +", *new, "set", "by", *base], width, "    "))
        if gone:
            out.append(_wrapped(["  -", *gone, "dropped", "by", *base], width, "    "))
        for addition in origin.additions:
            atoms = _source_atoms(addition.source, addition.file, addition.line)
            added = [json.dumps(entry) for entry in addition.entries if entry not in default]
            if added:
                out.append(_wrapped(["  +", *added, "added", "by", *atoms], width, "    "))
        if not new and not gone and not origin.additions:
            out.append(_wrapped(["  reordered", "by", *base], width, "    "))
    if len(out) == 1:
        out.append("Nothing: every key has its built-in default.\n")
    sys.stdout.write("".join(out))
    sys.stdout.flush()
