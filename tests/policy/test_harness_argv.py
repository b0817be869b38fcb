"""The option scanner behind rule 3: short clusters, long options, operands, where options end."""

from __future__ import annotations

import pytest

from frognano.policy.gate.harness import argv
from frognano.policy.gate.harness.argv import OptionSpec, parse_options

SPEC = OptionSpec(short_values="cp", long_values=frozenset({"--conf"}))
WRAPPER = OptionSpec(short_values="s", stop_at_operand=True)


@pytest.mark.parametrize(
    ("args", "spec", "options", "operands", "rest"),
    [
        (["-c", "a.ini", "x"], SPEC, [("-c", "a.ini")], ["x"], []),
        (["-ca.ini"], SPEC, [("-c", "a.ini")], [], []),
        (["-qc", "a.ini"], SPEC, [("-q", None), ("-c", "a.ini")], [], []),
        (["-qca.ini"], SPEC, [("-q", None), ("-c", "a.ini")], [], []),
        (["--conf", "a.ini"], SPEC, [("--conf", "a.ini")], [], []),
        (["--conf=a.ini"], SPEC, [("--conf", "a.ini")], [], []),
        (["--other", "x"], SPEC, [("--other", None)], ["x"], []),  # unknown: a flag
        (["-c"], SPEC, [("-c", None)], [], []),  # a value missing at the end
        (["--conf"], SPEC, [("--conf", None)], [], []),
        (["x", "--", "-c", "y"], SPEC, [], ["x", "-c", "y"], []),
        (["-", "x"], SPEC, [], ["-", "x"], []),
        (["-s", "9", "cmd", "-c", "x"], WRAPPER, [("-s", "9")], [], ["cmd", "-c", "x"]),
        (["--", "cmd"], WRAPPER, [], [], ["cmd"]),
        (["+o", "x", "s.sh"], argv.SHELL, [("+o", "x")], [], ["s.sh"]),
        (["-Bm", "pkg", "-q"], argv.PYTHON, [("-B", None), ("-m", "pkg")], [], ["-q"]),
        (
            ["-W", "error", "-c", "code", "x"],
            argv.PYTHON,
            [("-W", "error"), ("-c", "code")],
            [],
            ["x"],
        ),
    ],
)
def test_parse_options(
    args: list[str],
    spec: OptionSpec,
    options: list[tuple[str, str | None]],
    operands: list[str],
    rest: list[str],
) -> None:
    parsed = parse_options(args, spec)
    assert parsed.options == tuple(options)
    assert parsed.operands == tuple(operands)
    assert parsed.rest == tuple(rest)


@pytest.mark.parametrize(
    ("args", "module", "script", "rest"),
    [
        (["-m", "pytest", "-q"], "pytest", None, ["-q"]),
        (["-u", "run.py", "-m", "x"], None, "run.py", ["-m", "x"]),
        (["-c", "print(1)", "run.py"], None, None, ["run.py"]),
        (["-"], None, None, []),
        ([], None, None, []),
    ],
)
def test_python_run(
    args: list[str], module: str | None, script: str | None, rest: list[str]
) -> None:
    assert argv.python_run(args) == argv.PythonRun(module, script, tuple(rest))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "-m", "pytest", "-x"], argv.PythonRun("pytest", None, ("-x",))),
        (["run", "--source", "src", "-p", "t.py"], argv.PythonRun(None, "t.py", ())),
        (["run"], argv.PythonRun(None, None, ())),
        (["report", "-m"], None),
        ([], None),
    ],
)
def test_coverage_run(args: list[str], expected: argv.PythonRun | None) -> None:
    assert argv.coverage_run(args) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-c", "make test"], argv.ShellRun("make test", None)),
        (["-ec", "make test", "arg0"], argv.ShellRun("make test", None)),
        (["-o", "pipefail", "-c", "x"], argv.ShellRun("x", None)),
        (["-x", "run.sh", "-c"], argv.ShellRun(None, "run.sh")),
        (["-s"], argv.ShellRun(None, None)),
    ],
)
def test_shell_run(args: list[str], expected: argv.ShellRun) -> None:
    assert argv.shell_run(args) == expected


@pytest.mark.parametrize(
    ("program", "args", "expected"),
    [
        ("env", ["-i", "A=1", "cmd"], argv.Wrapped(("A=1", "cmd"))),
        ("env", ["-C", "sub", "cmd"], argv.Wrapped(("cmd",), "sub")),
        ("env", ["--chdir=sub", "-S", "a 'b c'", "d"], argv.Wrapped(("a", "b c", "d"), "sub")),
        ("timeout", ["-k", "5", "60", "cmd", "x"], argv.Wrapped(("cmd", "x"))),
        ("xvfb-run", ["-a", "-s", "-screen 0", "cmd"], argv.Wrapped(("cmd",))),
        ("exec", ["-a", "name", "cmd"], argv.Wrapped(("cmd",))),
        ("uv", ["run", "--with", "x", "cmd"], argv.Wrapped(("cmd",))),
        ("uv", ["--directory", "a", "run", "--directory", "b", "cmd"], argv.Wrapped(("cmd",), "b")),
        ("uv", ["run", "-C", "key=v", "cmd"], argv.Wrapped(("cmd",))),  # uv's -C: config-setting
        ("uv", ["pip", "install", "x"], argv.Wrapped(())),
        ("poetry", ["-C", "sub", "run", "cmd"], argv.Wrapped(("cmd",), "sub")),
        ("pipenv", ["run", "cmd"], argv.Wrapped(("cmd",))),
        ("pipenv", ["install"], argv.Wrapped(())),
        ("pdm", ["run", "-p", ".", "cmd"], argv.Wrapped(("cmd",), tool="pdm")),
        ("pdm", ["test"], argv.Wrapped((), tool="pdm")),
        ("hatch", ["run", "test:cov", "x"], argv.Wrapped(("cov", "x"), tool="hatch")),
        ("hatch", ["-e", "ci", "run", "./run.sh"], argv.Wrapped(("./run.sh",), tool="hatch")),
        ("hatch", ["test"], argv.Wrapped((), tool="hatch")),
        ("make", ["test"], None),
    ],
)
def test_unwrap(program: str, args: list[str], expected: argv.Wrapped | None) -> None:
    assert argv.unwrap(program, args) == expected


def test_split_falls_back_to_white_space_on_unbalanced_quotes() -> None:
    assert argv.split("a 'b c'") == ["a", "b c"]
    assert argv.split("a 'b c") == ["a", "'b", "c"]
