"""Option parsing of the programs a test command runs, as far as the files they read go."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class OptionSpec:
    """How one program reads its options (getopt and argparse alike, as far as file names go).

    An option the spec does not list is taken for a flag: at worst its value is then read as an
    operand, which only ever adds a candidate file, never hides one.
    """

    short_values: str = ""
    """Short options that take a value, attached (`-cFILE`) or as the next word."""
    long_values: frozenset[str] = frozenset()
    """Long options that take a value, as `--opt=VALUE` or `--opt VALUE`."""
    stop_at_operand: bool = False
    """Options end at the first operand (a wrapper's command, python's script)."""
    stop_after: frozenset[str] = frozenset()
    """Options whose value ends the options (`python -m MOD ...`, `python -c CODE ...`)."""
    plus_flags: bool = False
    """Shells also read options that start with `+` (`+e`, `+o pipefail`)."""


@dataclass(frozen=True)
class Parsed:
    """A program's words, sorted."""

    options: tuple[tuple[str, str | None], ...]
    """Each option as written (`-c`, `--rootdir`) with its value; None for a flag."""
    operands: tuple[str, ...]
    """Operands, when options do not end at the first one."""
    rest: tuple[str, ...]
    """The words after the options ended (`stop_at_operand`, `stop_after`), operand first."""

    def values(self, *names: str) -> list[str]:
        """The values given to any of the options `names`, in order."""
        return [value for name, value in self.options if name in names and value is not None]

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)


def parse_options(args: Sequence[str], spec: OptionSpec) -> Parsed:
    """`args` read the way `spec` says."""
    options: list[tuple[str, str | None]] = []
    operands: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        following = args[index + 1] if index + 1 < len(args) else None
        if word == "--":
            if spec.stop_at_operand:
                return Parsed(tuple(options), tuple(operands), tuple(args[index + 1 :]))
            operands.extend(args[index + 1 :])
            break
        if word.startswith("--"):
            name, equals, value = word.partition("=")
            consumed = 0
            if equals:
                options.append((name, value))
            elif name in spec.long_values and following is not None:
                options.append((name, following))
                consumed = 1
            else:
                options.append((name, None))
            index += 1 + consumed
            if name in spec.stop_after:
                return Parsed(tuple(options), tuple(operands), tuple(args[index:]))
            continue
        if len(word) > 1 and (word[0] == "-" or (spec.plus_flags and word[0] == "+")):
            consumed, stop = _short_cluster(word, following, spec, options)
            index += 1 + consumed
            if stop:
                return Parsed(tuple(options), tuple(operands), tuple(args[index:]))
            continue
        if spec.stop_at_operand:
            return Parsed(tuple(options), tuple(operands), tuple(args[index:]))
        operands.append(word)
        index += 1
    return Parsed(tuple(options), tuple(operands), ())


def _short_cluster(
    word: str, following: str | None, spec: OptionSpec, options: list[tuple[str, str | None]]
) -> tuple[int, bool]:
    """Reads `-abc` (flags, the last one possibly with a value) into `options`: how many
    following words the value took (0 or 1), and whether the options end here."""
    for position in range(1, len(word)):
        name = word[0] + word[position]
        if word[position] not in spec.short_values:
            options.append((name, None))
            continue
        attached = word[position + 1 :]
        if attached:
            options.append((name, attached))
            return 0, name in spec.stop_after
        options.append((name, following))
        return (0 if following is None else 1), name in spec.stop_after
    return 0, False


def _specs(long_values: str) -> frozenset[str]:
    return frozenset(long_values.split())


PYTEST = OptionSpec(
    short_values="cpkmoWrn",
    long_values=_specs(
        "--config-file --rootdir --confcutdir --override-ini --ignore --ignore-glob --deselect "
        "--basetemp --junitxml --junit-xml --junit-prefix --pythonwarnings --tb --durations "
        "--durations-min --maxfail --import-mode --capture --color --code-highlight "
        "--show-capture --log-level --log-format --log-date-format --log-cli-level "
        "--log-cli-format --log-cli-date-format --log-file --log-file-mode --log-file-level "
        "--log-file-format --log-file-date-format --log-auto-indent --doctest-glob "
        "--doctest-report --verbosity --cov --cov-report --cov-config --cov-fail-under "
        "--numprocesses --dist --maxprocesses --timeout --timeout-method --asyncio-mode "
        "--reruns --reruns-delay --random-order-seed"
    ),
)
MAKE = OptionSpec(
    short_values="fCIoWE",
    long_values=_specs(
        "--file --makefile --directory --include-dir --old-file --assume-old --new-file "
        "--assume-new --what-if --eval"
    ),
)
TOX = OptionSpec(
    short_values="cexm",
    long_values=_specs("--conf --root --workdir --override --installpkg --result-json"),
)
NOX = OptionSpec(
    short_values="fsetkp",
    long_values=_specs(
        "--noxfile --envdir --sessions --session --keywords --tags --python --extra-python "
        "--force-python --default-venv-backend --force-venv-backend --report"
    ),
)
PYTHON = OptionSpec(
    short_values="mcWX",
    long_values=_specs("--check-hash-based-pycs"),
    stop_at_operand=True,
    stop_after=frozenset({"-m", "-c"}),
)
COVERAGE_RUN = OptionSpec(
    long_values=_specs(
        "--rcfile --data-file --source --omit --include --context --concurrency --debug "
        "--save-signal"
    ),
    stop_at_operand=True,
)
SHELL = OptionSpec(
    short_values="oO",
    long_values=_specs("--rcfile --init-file"),
    stop_at_operand=True,
    plus_flags=True,
)


@dataclass(frozen=True)
class PythonRun:
    """What `python ARGS` (or `coverage run ARGS`) runs."""

    module: str | None
    """`-m MODULE`."""
    script: str | None
    """The script operand; None for `-m`, `-c` and standard input."""
    rest: tuple[str, ...]
    """The module's or script's own arguments."""


def python_run(args: Sequence[str]) -> PythonRun:
    parsed = parse_options(args, PYTHON)
    if parsed.options and parsed.options[-1][0] in ("-m", "-c"):
        name, value = parsed.options[-1]
        return PythonRun(value if name == "-m" else None, None, parsed.rest)
    if not parsed.rest or parsed.rest[0] == "-":
        return PythonRun(None, None, ())
    return PythonRun(None, parsed.rest[0], parsed.rest[1:])


def coverage_run(args: Sequence[str]) -> PythonRun | None:
    """`coverage run [options] (-m MODULE | SCRIPT) ...`; None for other coverage commands."""
    if not args or args[0] != "run":
        return None
    parsed = parse_options(args[1:], COVERAGE_RUN)
    if not parsed.rest:
        return PythonRun(None, None, ())
    target, rest = parsed.rest[0], parsed.rest[1:]
    # coverage's `-m` is a flag: the first operand is then the module.
    if parsed.has("-m", "--module"):
        return PythonRun(target, None, rest)
    return PythonRun(None, target, rest)


@dataclass(frozen=True)
class ShellRun:
    """What `bash ARGS` runs: a `-c` body or a script file (or neither: standard input)."""

    body: str | None
    script: str | None


def shell_run(args: Sequence[str]) -> ShellRun:
    parsed = parse_options(args, SHELL)
    operand = parsed.rest[0] if parsed.rest else None
    if parsed.has("-c", "+c"):
        return ShellRun(operand, None)
    return ShellRun(None, operand)


@dataclass(frozen=True)
class Wrapped:
    """The command a wrapper program (`env`, `timeout`, `uv run`, ...) runs."""

    words: tuple[str, ...]
    """The wrapped command; it may start with `NAME=VALUE` assignments (`env`)."""
    chdir: str | None = None
    """The folder the wrapped command runs in (`env -C`, `uv run --directory`)."""
    tool: str | None = None
    """A tool whose own configuration decides what runs (`hatch`, `pdm`)."""


_ENV = OptionSpec(
    short_values="uCS", long_values=_specs("--unset --chdir --split-string"), stop_at_operand=True
)
_TIMEOUT = OptionSpec(
    short_values="sk", long_values=_specs("--signal --kill-after"), stop_at_operand=True
)
_XVFB_RUN = OptionSpec(
    short_values="efnpsw",
    long_values=_specs(
        "--error-file --auth-file --server-num --xauth-protocol --server-args --wait"
    ),
    stop_at_operand=True,
)
_PLAIN = OptionSpec(stop_at_operand=True)
_SIMPLE_WRAPPERS = {
    "exec": OptionSpec(short_values="a", stop_at_operand=True),
    "nice": OptionSpec(short_values="n", long_values=_specs("--adjustment"), stop_at_operand=True),
    "command": _PLAIN,
    "builtin": _PLAIN,
    "nohup": _PLAIN,
    "time": _PLAIN,
    "pipenv": _PLAIN,
}
_UV = OptionSpec(
    short_values="pwCfi",
    long_values=_specs(
        "--with --with-editable --with-requirements --python --package --extra --group "
        "--only-group --no-group --env-file --directory --project --index --default-index "
        "--index-url --extra-index-url --find-links --config-file --cache-dir --config-setting "
        "--python-preference --resolution --prerelease --exclude-newer --link-mode --color"
    ),
    stop_at_operand=True,
)
_POETRY = OptionSpec(
    short_values="CP", long_values=_specs("--directory --project"), stop_at_operand=True
)
_PDM = OptionSpec(short_values="p", long_values=_specs("--project --venv"), stop_at_operand=True)
_HATCH = OptionSpec(
    short_values="ep",
    long_values=_specs("--env --project --data-dir --cache-dir --config"),
    stop_at_operand=True,
)


def unwrap(program: str, args: Sequence[str]) -> Wrapped | None:  # noqa: PLR0911 - one per tool
    """The command `program args` runs in its place, or None when `program` is no wrapper."""
    if program == "env":
        parsed = parse_options(args, _ENV)
        # `env -S 'A B'` splits its value into words of the command line.
        words = [word for value in parsed.values("-S", "--split-string") for word in split(value)]
        return Wrapped((*words, *parsed.rest), _last(parsed.values("-C", "--chdir")))
    if program == "timeout":
        rest = parse_options(args, _TIMEOUT).rest
        return Wrapped(rest[1:])  # rest[0] is the duration
    if program == "xvfb-run":
        return Wrapped(parse_options(args, _XVFB_RUN).rest)
    if program in _SIMPLE_WRAPPERS:
        rest = parse_options(args, _SIMPLE_WRAPPERS[program]).rest
        if program == "pipenv":
            return Wrapped(rest[1:] if rest[:1] == ("run",) else ())
        return Wrapped(rest)
    if program in ("uv", "poetry"):
        spec = _UV if program == "uv" else _POETRY
        outer = parse_options(args, spec)
        if outer.rest[:1] != ("run",):
            return Wrapped(())
        inner = parse_options(outer.rest[1:], spec)
        # Both change the working folder with --directory; uv's -C is --config-setting.
        names = ("--directory",) if program == "uv" else ("--directory", "-C")
        return Wrapped(inner.rest, _last([*outer.values(*names), *inner.values(*names)]))
    if program == "pdm":
        # `pdm NAME` runs the script NAME from [tool.pdm.scripts] unless NAME is a pdm command.
        outer = parse_options(args, _PDM)
        if outer.rest[:1] != ("run",):
            return Wrapped((), tool="pdm")
        return Wrapped(parse_options(outer.rest[1:], _PDM).rest, tool="pdm")
    if program == "hatch":
        outer = parse_options(args, _HATCH)
        if outer.rest[:1] != ("run",) or len(outer.rest) < 2:
            return Wrapped((), tool="hatch")
        first, *others = outer.rest[1:]
        # `hatch run ENV:SCRIPT`: the part after the colon is the script or command.
        if ":" in first and "/" not in first:
            first = first.split(":", 1)[1]
        return Wrapped((first, *others), tool="hatch")
    return None


def split(text: str) -> list[str]:
    """`text` split into words the way a shell would, or at white space when its quotes do not
    balance (the shell would refuse it, but its words still name files)."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _last(values: list[str]) -> str | None:
    return values[-1] if values else None
