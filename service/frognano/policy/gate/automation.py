"""Which repository files the base's GitHub Actions workflows run: a patch may not change them."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

MAX_NODES = 100_000
"""Steps read per workflow file, and files followed in all: a bound on odd inputs."""
_WORKFLOW = re.compile(r"\.github/workflows/[^/]+\.ya?ml")
_ACTION = re.compile(r"(?:.*/)?action\.ya?ml")
_SCRIPT_FILE = re.compile(r"(?:.*/)?[^/]+\.(?:sh|bash|zsh|ksh)")
_EXPRESSION = re.compile(r"\$\{\{.*?\}\}", re.DOTALL)
_UNRESOLVED = "\0"  # stands for a `${{ }}` expression: a word holding it names no known path
_SHELLS = re.compile(r"(?:ba|da|k|z|c|tc|fi)?sh")
_INTERPRETERS = re.compile(
    r"(?:python|pypy)[0-9.]*|node|nodejs|deno|bun|ruby|perl|php|pwsh|powershell|Rscript|lua"
    r"|tclsh|tsx|ts-node|groovy"
)
_WRAPPERS = frozenset({"sudo", "env", "time", "exec", "nohup", "command", "builtin", "nice",
                       "stdbuf", "xvfb-run", "npx", "bunx", "timeout", "then", "do", "else",
                       "elif", "if", "while", "until", "!", "{", "}"})  # fmt: skip
_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye", "conda", "pixi", "bundle",
                      "pnpm", "yarn", "npm"})  # fmt: skip
_RUNNER_VERBS = frozenset({"run", "exec"})
_SEPARATORS = frozenset({";", "&", "&&", "|", "||", "|&", ";;", "(", ")", "\n"})
_REDIRECTS = re.compile(r"[0-9]*(?:>|>>|<|<<|<<<|>&|<&|&>|&>>)")
_OPTION_ARGS = {"python": frozenset({"-W", "-X", "-Q"}), "shell": frozenset({"-o", "-O"})}


def workflow_scripts(workflows: Mapping[str, bytes]) -> frozenset[str]:
    """Repository paths the workflows run (an entry ending in `/` stands for a whole folder).

    `workflows` maps base paths to their bytes: every `.github/workflows/*.yml|yaml` is read,
    and so is every `action.yml` and shell script it holds once a workflow names it (so a
    caller may pass local actions and scripts too, and get what they run in turn). Files that
    are not valid YAML are skipped.
    """
    return frozenset(workflow_runners(workflows))


def workflow_runners(workflows: Mapping[str, bytes]) -> dict[str, tuple[str, ...]]:
    """Each path of `workflow_scripts`, with the workflow files that run it (sorted)."""
    runners: dict[str, set[str]] = {}
    # (file, the workflow that runs it, the directory it runs in)
    pending = [(path, path, "") for path in sorted(workflows) if _WORKFLOW.fullmatch(path)]
    done: set[tuple[str, str, str]] = set()
    while pending:
        item = pending.pop()
        if item in done or len(done) > MAX_NODES:
            continue
        done.add(item)
        path, workflow, cwd = item
        for found, workdir in _paths_of(path, workflows[path], cwd):
            runners.setdefault(found, set()).add(workflow)
            pending.extend((followed, workflow, workdir) for followed in _follow(found, workflows))
    return {path: tuple(sorted(names)) for path, names in sorted(runners.items())}


def runs(path: str, runners: Mapping[str, tuple[str, ...]] | frozenset[str]) -> str | None:
    """The entry of `runners` (workflow_scripts or workflow_runners) that covers `path`, if any.

    Compared case-insensitively: on a runner with a case-insensitive file system (macOS,
    Windows), `Scripts/CI.sh` is `scripts/ci.sh`.
    """
    lowered = path.lower()
    for entry in sorted(runners):
        wanted = entry.lower()
        if lowered == wanted or (wanted.endswith("/") and lowered.startswith(wanted)):
            return entry
    return None


def _follow(found: str, files: Mapping[str, bytes]) -> Iterator[str]:
    """Files of `files` that `found` brings in: a local action's action.yml, a shell script."""
    if found.endswith("/"):
        for name in ("action.yml", "action.yaml"):
            if found + name in files:
                yield found + name
    elif found in files and (_SCRIPT_FILE.fullmatch(found) or files[found].startswith(b"#!")):
        yield found


def _paths_of(path: str, data: bytes, cwd: str) -> Iterator[tuple[str, str]]:
    """(path, the directory it runs in) of what the file at `path` runs."""
    if _WORKFLOW.fullmatch(path) or _ACTION.fullmatch(path):
        action_dir = posixpath.dirname(path) if _ACTION.fullmatch(path) else ""
        yield from _yaml_paths(data, action_dir)
    else:
        for found in script_paths(data.decode("utf-8", "replace"), cwd):
            yield found, cwd


def _yaml_paths(data: bytes, action_dir: str) -> Iterator[tuple[str, str]]:
    try:
        document = yaml.safe_load(data)
    except (yaml.YAMLError, RecursionError, ValueError):
        return
    if not isinstance(document, dict):
        return
    default_dir = _working_dir(document)
    jobs = document.get("jobs")
    containers: list[tuple[dict[Any, Any], str]] = []
    for job in jobs.values() if isinstance(jobs, dict) else []:
        if isinstance(job, dict):
            containers.append((job, _working_dir(job) or default_dir))
            uses = job.get("uses")  # a reusable workflow
            yield from ((found, "") for found in _uses(uses if isinstance(uses, str) else ""))
    runs_section = document.get("runs")
    if isinstance(runs_section, dict):  # a composite action
        containers.append((runs_section, ""))
        if action_dir:
            yield action_dir + "/", ""
    steps = [
        (step, workdir)
        for container, workdir in containers
        for step in _list(container.get("steps"))
        if isinstance(step, dict)
    ]
    for step, workdir in steps[:MAX_NODES]:
        yield from _step_paths(step, workdir)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _step_paths(step: dict[Any, Any], workdir: str) -> Iterator[tuple[str, str]]:
    uses = step.get("uses")
    if isinstance(uses, str):
        yield from ((found, "") for found in _uses(uses))
    step_dir = step.get("working-directory")
    cwd = _normal(step_dir if isinstance(step_dir, str) else workdir, "") or ""
    shell = step.get("shell")
    if isinstance(shell, str):  # `shell: bash ./ci/wrap.sh {0}`
        yield from ((found, cwd) for found in script_paths(shell, cwd))
    run = step.get("run")
    if isinstance(run, str) and not (isinstance(shell, str) and "python" in shell):
        yield from ((found, cwd) for found in script_paths(run, cwd))


def _working_dir(section: dict[Any, Any]) -> str:
    defaults = section.get("defaults")
    run = defaults.get("run") if isinstance(defaults, dict) else None
    value = run.get("working-directory") if isinstance(run, dict) else None
    return value if isinstance(value, str) else ""


def _uses(uses: str) -> Iterator[str]:
    """`uses: ./path` names a local action or reusable workflow; others live elsewhere."""
    if not uses.startswith("./"):
        return
    target = _normal(uses.partition("@")[0], "")
    if target is None:
        return
    if _WORKFLOW.fullmatch(target):
        yield target
    elif target:
        yield target + "/"
    else:  # `uses: ./`: an action at the repository root
        yield from ("action.yml", "action.yaml")


def script_paths(script: str, workdir: str) -> Iterator[str]:
    """Repository paths a shell script runs: `./x.sh`, `bash ci/run`, `python tools/check.py`,
    `source env.sh`, `make -f ci.mk`, and the same inside `sh -c '...'`; relative to `workdir`.
    """
    script = _EXPRESSION.sub(_UNRESOLVED, script).replace("\\\n", " ")
    for words in _commands(script):
        if words[0] == "cd" and len(words) == 2:  # later commands run there
            workdir = _normal(words[1], workdir) or ""
            continue
        yield from _command_paths(words, workdir)


def _commands(script: str) -> Iterator[list[str]]:
    """The simple commands of `script`, as words without assignments or redirections."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace = " \t\r"  # a line break ends a command: kept as a token
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote: fall back to plain words
        tokens = re.findall(r"[^\s;&|()<>]+|\n|[;&|()<>]+", script)
    words: list[str] = []
    skip_next = False
    for token in [*_split_newlines(tokens), "\n"]:
        if skip_next:
            skip_next = False
            continue
        if token in _SEPARATORS or (set(token) <= set(";&|()") and token):
            if words:
                yield words
            words = []
        elif _REDIRECTS.fullmatch(token):
            skip_next = True
        elif not words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", token, re.DOTALL):
            continue  # FOO=bar cmd
        else:
            words.append(token)


def _split_newlines(tokens: list[str]) -> Iterator[str]:
    for token in tokens:
        if "\n" in token:
            parts = token.split("\n")
            for index, part in enumerate(parts):
                if index:
                    yield "\n"
                if part:
                    yield part
        else:
            yield token


def _command_paths(words: list[str], workdir: str) -> Iterator[str]:
    while words and (words[0] in _WRAPPERS or words[0].startswith("-")):
        words = words[1:]
        while words and (words[0].startswith("-") or re.fullmatch(r"[0-9.]+[smhd]?", words[0])):
            words = words[1:]  # options of the wrapper, `timeout 60`
    if len(words) >= 2 and words[0] in _RUNNERS and words[1] in _RUNNER_VERBS:
        yield from _command_paths(words[2:], workdir)
        return
    if not words:
        return
    command, args = words[0], words[1:]
    name = posixpath.basename(command)
    if command in ("source", "."):
        yield from _path(args[0] if args else "", workdir)
    elif "/" in command:
        yield from _path(command, workdir)
        if _SHELLS.fullmatch(name) or _INTERPRETERS.fullmatch(name):
            yield from _interpreted(name, args, workdir)
    elif _SHELLS.fullmatch(name) or _INTERPRETERS.fullmatch(name):
        yield from _interpreted(name, args, workdir)
    elif name in ("make", "gmake"):
        yield from _makefiles(args, workdir)


def _interpreted(name: str, args: list[str], workdir: str) -> Iterator[str]:
    """The script an interpreter runs: its first argument that is not an option."""
    shell = bool(_SHELLS.fullmatch(name))
    takes_value = _OPTION_ARGS["shell" if shell else "python"]
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-c" or (shell and re.fullmatch(r"-[a-z]*c[a-z]*", arg)):
            if shell and index + 1 < len(args):
                yield from script_paths(args[index + 1], workdir)
            return
        if arg in ("-m", "-e", "--eval", "-r", "--require") and not shell:
            return  # a module or inline code, not a file of the repository
        if arg in takes_value:
            index += 2
            continue
        if arg.startswith("-") or (arg == "run" and name in ("deno", "bun")):
            index += 1
            continue
        yield from _path(arg, workdir)
        return


def _makefiles(args: list[str], workdir: str) -> Iterator[str]:
    for index, arg in enumerate(args):
        if arg in ("-f", "--file", "--makefile") and index + 1 < len(args):
            yield from _path(args[index + 1], workdir)
        elif arg.startswith(("--file=", "--makefile=")):
            yield from _path(arg.partition("=")[2], workdir)
        elif arg.startswith("-f") and len(arg) > 2:
            yield from _path(arg[2:], workdir)


def _path(word: str, workdir: str) -> Iterator[str]:
    normal = _normal(word, workdir)
    if normal:
        yield normal


def _normal(word: str, workdir: str) -> str | None:
    """`word` as a repository path under `workdir`, or None when it is not one (absolute,
    outside the repository, a variable, a glob, a `${{ }}` expression)."""
    if not word or _UNRESOLVED in word or re.search(r"[$*?\[\]{}`~]", word):
        return None
    if _UNRESOLVED in workdir or re.search(r"[$*?\[\]{}`~]", workdir):
        workdir = ""
    if word.startswith("/") or workdir.startswith("/"):
        return None
    normal = posixpath.normpath(posixpath.join(workdir, word))
    if normal == ".":
        return ""
    if normal.startswith("../") or normal == "..":
        return None
    return normal
