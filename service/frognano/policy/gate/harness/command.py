"""Which repository files a test command runs or reads, from the command line alone."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from frognano.policy.gate.harness import argv
from frognano.policy.paths import check_glob

WORKSPACE = "/workspace"
"""Where the sandbox puts the repository: absolute paths under it name repository files."""
MAX_DEPTH = 8
"""Nesting of `bash -c`, wrappers and PYTEST_ADDOPTS followed; deeper bodies are not read."""

_OPERATOR_CHARS = "();<>|&\n"
_SEPARATOR_CHARS = frozenset(";|()\n")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"(?:python|pypy)(?:\d+(?:\.\d+)*)?")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
# Words that open or close a compound command; the command proper follows them.
_RESERVED = frozenset("! { } if then else elif fi do done while until esac".split())
_PYTEST_CONFIGS = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "tox.ini")
# `python -m pytest` puts the repository first on sys.path, so a top-level module of these
# names would be imported in place of pytest's own.
_PYTEST_IMPORTS = ("_pytest", "pluggy", "iniconfig")
_INSTALLED = frozenset({"pytest", *_PYTEST_IMPORTS, "coverage", "tox", "nox"})


@dataclass(frozen=True)
class CommandFile:
    """A repository file the test command runs or reads."""

    path: str
    """Repository-relative, `/`-separated; a glob in `CommandTargets.globs`."""
    role: str
    """What the command does with it, to follow "the test command `...`": "runs it with bash"."""


@dataclass(frozen=True)
class CommandTargets:
    """Everything a test command line names, for `harness_changes`."""

    files: tuple[CommandFile, ...]
    """One per path, sorted by path."""
    globs: tuple[CommandFile, ...]
    """Words the shell expands as patterns (`tests/test_*.py`), sorted."""
    tools: frozenset[str]
    """Tools the command runs whose sections of shared config files count: tox, hatch, pdm."""


@lru_cache(maxsize=64)
def command_targets(command: str) -> CommandTargets:
    """The files `command` runs or reads, by the rules in `harness_changes`."""
    collector = _Collector()
    collector.run_line(command, depth=0, cwd="")
    return collector.result()


def simple_commands(line: str) -> list[tuple[list[str], list[str]]]:
    """The simple commands of a shell command line, split at `&&`, `||`, `;`, `|`, `&`, new
    lines and parentheses: each one's words, and the targets of its redirections."""
    commands: list[tuple[list[str], list[str]]] = []
    words: list[str] = []
    targets: list[str] = []
    redirect = comment = False
    for token in _tokens(line):
        if token and all(char in _OPERATOR_CHARS for char in token):
            comment = comment and "\n" not in token
            if comment:
                continue
            if ("<" in token or ">" in token) and not _SEPARATOR_CHARS.intersection(token):
                redirect = True  # `>`, `2>&1`, `&>`, `<`: the next word is a file
                continue
            if words or targets:
                commands.append((words, targets))
            words, targets, redirect = [], [], False
        elif comment:
            continue
        elif redirect:
            targets.append(token)
            redirect = False
        elif token.startswith("#"):
            comment = True
        else:
            words.append(token)
    if words or targets:
        commands.append((words, targets))
    return commands


def _tokens(line: str) -> list[str]:
    # A backslash before a new line joins the lines; a new line alone ends a command, so it is
    # an operator here, not white space.
    text = line.replace("\\\n", " ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_OPERATOR_CHARS)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # `#` starts a comment only at the start of a word: see above
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: bash refuses the line, but its words name files
        return text.split()


@dataclass(frozen=True)
class _Module:
    parts: tuple[str, ...]
    cwd: str | None
    role: str
    main: bool
    package: bool
    installed: bool
    """A tool normally installed (pytest, coverage): only a folder that comes before
    site-packages on sys.path (the working folder, PYTHONPATH) can shadow it, not `src`."""


class _Collector:
    """Walks a command line once, gathering what it names (state for one call only)."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.named: dict[str, str] = {}
        self.globs: dict[str, str] = {}
        self.modules: list[_Module] = []
        self.python_path: list[str] = []
        self.tools: set[str] = set()
        self.cwd: str | None = ""
        """The folder commands run in; None after a `cd` that cannot be followed."""

    def result(self) -> CommandTargets:
        for module in self.modules:
            roots = [
                *([module.cwd] if module.cwd else []),
                "",
                *([] if module.installed else ["src"]),
            ]
            for root in dict.fromkeys([*roots, *self.python_path]):
                base = posixpath.join(root, *module.parts)
                names = [base + ".py"]
                names += [posixpath.join(base, "__init__.py")] if module.package else []
                names += [posixpath.join(base, "__main__.py")] if module.main else []
                for name in names:
                    self.add(name, "", module.role)
        files = {**self.named, **self.files}  # a specific role wins over "names it"
        return CommandTargets(
            files=tuple(CommandFile(path, files[path]) for path in sorted(files)),
            globs=tuple(CommandFile(path, self.globs[path]) for path in sorted(self.globs)),
            tools=frozenset(self.tools),
        )

    def run_line(self, line: str, depth: int, cwd: str | None) -> None:
        if depth > MAX_DEPTH:
            return
        saved, self.cwd = self.cwd, cwd  # a `cd` in a `bash -c` body ends with the body
        for words, targets in simple_commands(line):
            for target in targets:
                self.name(target, self.cwd)
            self.run_words(words, depth, self.cwd)
        self.cwd = saved

    def run_words(self, words: Sequence[str], depth: int, cwd: str | None) -> None:
        start = 0
        while start < len(words) and (words[start] in _RESERVED or _ASSIGNMENT.match(words[start])):
            if words[start] not in _RESERVED:
                self.assign(words[start], cwd, depth)
            start += 1
        if start == len(words) or depth > MAX_DEPTH:
            return
        for word in words[start:]:
            self.name(word, cwd)
        program, args = words[start], words[start + 1 :]
        if "/" in program:
            self.add(program, cwd, "runs it")
        self.run_program(posixpath.basename(program), args, depth, cwd)

    def run_program(  # noqa: PLR0912 - one branch per program
        self, name: str, args: Sequence[str], depth: int, cwd: str | None
    ) -> None:
        wrapped = argv.unwrap(name, args)
        if wrapped is not None:
            if wrapped.tool:
                self.tools.add(wrapped.tool)
            inner = cwd if wrapped.chdir is None else self.folder(wrapped.chdir, cwd)
            self.run_words(wrapped.words, depth + 1, inner)
        elif name in ("cd", "pushd"):
            operands = [arg for arg in args if not arg.startswith("-")]
            # `cd` alone goes home, `cd -` back: neither is a folder known here.
            self.cwd = self.folder(operands[0], cwd) if operands else None
        elif name == "export":
            for arg in args:
                if _ASSIGNMENT.match(arg):
                    self.assign(arg, cwd, depth)
        elif name in ("source", ".") and args:
            self.add(args[0], cwd, "sources it into the shell")
        elif name in _SHELLS:
            run = argv.shell_run(args)
            if run.body is not None:
                self.run_line(run.body, depth + 1, cwd)
            elif run.script is not None:
                self.add(run.script, cwd, f"runs it with {name}")
        elif _PYTHON.fullmatch(name):
            self.python(argv.python_run(args), "python", depth, cwd)
        elif name == "coverage":
            self.coverage(args, depth, cwd)
        elif name in ("pytest", "py.test"):
            self.pytest(args, cwd)
        elif name in ("make", "gmake"):
            self.make(args, cwd)
        elif name == "tox":
            self.tox(args, cwd)
        elif name == "nox":
            self.nox(args, cwd)

    def python(self, run: argv.PythonRun, launcher: str, depth: int, cwd: str | None) -> None:
        if run.script is not None:
            self.add(run.script, cwd, f"runs it with {launcher}")
        if run.module is None:
            return
        module = run.module
        self.module(module, cwd, f"runs it as `{launcher} -m {module}`", main=True)
        if module == "pytest":
            for name in _PYTEST_IMPORTS:
                role = f"imports it in place of pytest's own `{name}` (`{launcher} -m pytest`)"
                self.module(name, cwd, role)
            self.pytest(run.rest, cwd)
        elif module == "coverage":
            self.coverage(run.rest, depth, cwd)
        elif module in ("tox", "nox"):
            self.run_program(module, run.rest, depth, cwd)

    def coverage(self, args: Sequence[str], depth: int, cwd: str | None) -> None:
        run = argv.coverage_run(args)
        if run is not None and depth < MAX_DEPTH:
            self.python(run, "coverage run", depth + 1, cwd)

    def pytest(self, args: Sequence[str], cwd: str | None) -> None:
        parsed = argv.parse_options(args, argv.PYTEST)
        for path in parsed.values("-c", "--config-file"):
            self.add(path, cwd, "reads pytest's configuration from it (`-c`)")
        for folder in parsed.values("--rootdir"):
            for name in _PYTEST_CONFIGS:
                role = f"reads pytest's configuration from it (`--rootdir {folder}`)"
                self.add(posixpath.join(folder, name), cwd, role)
        for folder in parsed.values("--confcutdir"):
            role = f"loads it as a conftest (`--confcutdir {folder}`)"
            self.add(posixpath.join(folder, "conftest.py"), cwd, role)
        for plugin in parsed.values("-p"):
            if not plugin.startswith("no:"):
                self.module(plugin, cwd, f"loads it as the pytest plugin `-p {plugin}`")
        if parsed.has("--pyargs"):
            for operand in parsed.operands:
                name = operand.split("::", 1)[0]
                # A package named this way is a folder of tests; its __init__.py is the code
                # under test unless it lies in a test folder (a harness file anyway).
                role = f"collects tests from it (`--pyargs {name}`)"
                self.module(name, cwd, role, package=False)

    def make(self, args: Sequence[str], cwd: str | None) -> None:
        parsed = argv.parse_options(args, argv.MAKE)
        folder = posixpath.join("", *parsed.values("-C", "--directory"))  # -C a -C b is a/b
        # GNU make reads the first of these that exists; the patch could add an earlier one.
        makefiles = parsed.values("-f", "--file", "--makefile")
        for makefile in makefiles or ["GNUmakefile", "makefile", "Makefile"]:
            self.add(posixpath.join(folder, makefile), cwd, "reads its make rules from it")

    def tox(self, args: Sequence[str], cwd: str | None) -> None:
        self.tools.add("tox")
        parsed = argv.parse_options(args, argv.TOX)
        configs = parsed.values("-c", "--conf")
        for config in configs:
            self.add(config, cwd, "reads tox's configuration from it (`-c`)")
        # `-c` may name a folder; pyproject.toml and setup.cfg count by section (see harness).
        for folder in configs or parsed.values("--root") or [""]:
            for name in ("tox.ini", "tox.toml"):
                self.add(posixpath.join(folder, name), cwd, "reads tox's configuration from it")

    def nox(self, args: Sequence[str], cwd: str | None) -> None:
        parsed = argv.parse_options(args, argv.NOX)
        for noxfile in parsed.values("-f", "--noxfile") or ["noxfile.py"]:
            self.add(noxfile, cwd, "reads nox's sessions from it")

    def assign(self, assignment: str, cwd: str | None, depth: int) -> None:
        name, _, value = assignment.partition("=")
        self.name(value, cwd)
        if name == "PYTEST_ADDOPTS" and depth < MAX_DEPTH:
            words = argv.split(value)
            for word in words:
                self.name(word, cwd)
            self.pytest(words, cwd)
        elif name == "PYTEST_PLUGINS":
            for plugin in filter(None, (item.strip() for item in value.split(","))):
                self.module(
                    plugin, cwd, f"loads it as the pytest plugin `{plugin}` (PYTEST_PLUGINS)"
                )
        elif name == "PYTHONPATH":
            folders = (self.folder(entry, cwd) for entry in value.split(":") if entry)
            self.python_path.extend(folder for folder in folders if folder is not None)

    def module(
        self, name: str, cwd: str | None, role: str, *, main: bool = False, package: bool = True
    ) -> None:
        parts = tuple(name.split("."))
        if all(part.isidentifier() for part in parts):
            installed = parts[0] in _INSTALLED
            self.modules.append(_Module(parts, cwd, role, main, package, installed))

    def add(self, token: str, cwd: str | None, role: str) -> None:
        for path in self.resolve(token, cwd):
            self.files.setdefault(path, role)

    def name(self, word: str, cwd: str | None) -> None:
        """Notes any word that may name a file: an operand, an option's or assignment's value,
        a pytest node id's file part, a redirection target."""
        if word.startswith("-") or _ASSIGNMENT.match(word):
            _, equals, word = word.partition("=")
            if not equals:
                return
        word = word.split("::", 1)[0]
        # A word with white space was quoted (a `bash -c` body, a `-k` expression): the shell
        # expands no pattern in it.
        pattern = any(char in word for char in "*?[") or (
            "{" in word and "," in word and "}" in word
        )
        if pattern and not any(char.isspace() for char in word):
            for glob in self.resolve(word, cwd):
                if check_glob(glob) is None:  # a pattern wcmatch refuses matches nothing
                    self.globs.setdefault(glob, "names it (the shell expands the pattern)")
            return
        for path in self.resolve(word, cwd):
            self.named.setdefault(path, "names it")

    def resolve(self, token: str, cwd: str | None) -> list[str]:
        """The repository paths `token` may mean: relative to `cwd` and, since a `cd` is not
        always followed exactly, to the repository root too."""
        if not token or token.startswith("~") or "$" in token or "`" in token:
            return []
        if token.startswith("/"):
            if token != WORKSPACE and not token.startswith(WORKSPACE + "/"):
                return []
            token, bases = token[len(WORKSPACE) :].lstrip("/"), [""]
        else:
            bases = [cwd, ""] if cwd else [""]
        paths: list[str] = []
        for base in bases:
            path = posixpath.normpath(posixpath.join(base, token))
            if path not in (".", "..") and not path.startswith("../") and path not in paths:
                paths.append(path)
        return paths

    def folder(self, token: str, cwd: str | None) -> str | None:
        """The repository folder `token` names from `cwd`, "" for the root, or None when it is
        outside the repository or unknown."""
        if "$" in token or "`" in token or token.startswith("~"):
            return None
        if token.startswith("/"):
            if token != WORKSPACE and not token.startswith(WORKSPACE + "/"):
                return None
            token, cwd = token[len(WORKSPACE) :].lstrip("/"), ""
        if cwd is None:
            return None
        path = posixpath.normpath(posixpath.join(cwd, token)) if token else cwd or "."
        if path == ".." or path.startswith("../"):
            return None
        return "" if path == "." else path
