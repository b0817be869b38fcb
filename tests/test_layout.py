"""The package's shape: which package may import which, no cycles, small modules."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "service" / "frognano"
SUBPACKAGES = (
    "cli", "app", "eval", "run", "agent", "sandbox", "policy", "github", "modelserver",
)  # fmt: skip

# What each package must never import (docs/architecture.md draws the same arrows). The
# loop, the sandboxes and the policy know nothing of GitHub, so `solve` and the App share them.
FORBIDDEN = {
    "agent": {"app", "cli", "eval", "github", "modelserver", "policy", "run"},
    "sandbox": {"agent", "app", "cli", "eval", "github", "modelserver", "policy", "run"},
    "policy": {"agent", "app", "cli", "eval", "github", "modelserver", "run", "sandbox"},
    "github": {"agent", "app", "cli", "eval", "modelserver", "policy", "run", "sandbox"},
    "run": {"app", "cli", "eval", "github", "modelserver"},
    "modelserver": {"app", "cli", "eval", "github", "policy", "run", "sandbox"},
    # The eval harness runs what `solve` runs; the App never needs it, nor it the App.
    "eval": {"app", "cli", "github", "modelserver"},
    "app": {"cli", "eval"},
    "cli": set(),
}
# Third-party clients kept behind one package each, so the rest imports without them.
THIRD_PARTY_OWNERS = {"kubernetes": "sandbox.kubernetes", "github": "github"}
# Sandbox backends stay behind the sandbox seam (base.py's protocol, options.py's values):
# outside the backend's own package only these modules import it, the registry lazily by
# name and for clean-up, cli/kube.py for the Kubernetes-only commands (reap, the probe pod,
# the seccomp profile).
BACKEND_PACKAGES = ("frognano.sandbox.kubernetes",)
BACKEND_IMPORTERS = {"frognano.sandbox.registry", "frognano.cli.kube"}
TOP_LEVEL_MAX = 8
MODULE_LINES_MAX = 400


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["frognano", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """Every module name an import statement names, at any depth (functions and
    TYPE_CHECKING blocks included: a lazy import is still an import)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: use absolute imports"
            assert node.module is not None
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def _internal_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for _, target in _imports(path):
            if target in MODULES and target != name:
                edges[name].add(target)
    return edges


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in SUBPACKAGES) else None


def test_the_rules_cover_every_subpackage() -> None:
    on_disk = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert on_disk == set(SUBPACKAGES) == set(FORBIDDEN)


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_imports_follow_the_layers(package: str) -> None:
    wrong = []
    for name, path in MODULES.items():
        if _package(name) != package:
            continue
        for line, target in _imports(path):
            if target in MODULES and _package(target) in FORBIDDEN[package]:
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports {target}")
    assert not wrong, f"{package} must not import {sorted(FORBIDDEN[package])}:\n" + "\n".join(
        wrong
    )


def test_top_level_modules_import_no_subpackage() -> None:
    wrong = [
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if name.count(".") == 1 and _package(name) is None and name != "frognano.__main__"
        for _, target in _imports(path)
        if target in MODULES and _package(target) is not None
    ]
    assert not wrong


@pytest.mark.parametrize("client", sorted(THIRD_PARTY_OWNERS))
def test_third_party_clients_stay_behind_their_package(client: str) -> None:
    owner = "frognano." + THIRD_PARTY_OWNERS[client]
    wrong = [
        f"{path.relative_to(PACKAGE)}:{line} imports {target}"
        for name, path in MODULES.items()
        if not (name == owner or name.startswith(owner + "."))
        for line, target in _imports(path)
        if target == client or target.startswith(client + ".")
    ]
    assert not wrong


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _backend_imports(modules: dict[str, Path]) -> list[tuple[str, int, str]]:
    """(module, line, target) for each import statement of a backend's package from outside
    it, naming the module it imports from."""
    found: dict[tuple[str, int], str] = {}
    for name, path in modules.items():
        for backend in BACKEND_PACKAGES:
            if _inside(name, backend):
                continue
            for line, target in _imports(path):
                if _inside(target, backend):
                    found.setdefault((name, line), target)
    return [(name, line, target) for (name, line), target in found.items()]


def _backend_leaks(modules: dict[str, Path]) -> list[str]:
    return [
        f"{name}:{line} imports {target}"
        for name, line, target in _backend_imports(modules)
        if name not in BACKEND_IMPORTERS
    ]


def test_backends_stay_behind_the_sandbox_seam() -> None:
    assert not _backend_leaks(MODULES), "go through frognano.sandbox (base, options, registry)"
    # Each exemption is still needed; one that is not should go from the list.
    assert {name for name, _, _ in _backend_imports(MODULES)} == BACKEND_IMPORTERS


def test_the_backend_rule_catches_a_planted_import(tmp_path: Path) -> None:
    # The control: the rule above would pass vacuously if it read no import.
    planted = {
        "frognano.run.pipeline": "from frognano.sandbox.kubernetes.pod import PodOptions\n",
        "frognano.app.worker": "def f() -> None:\n    import frognano.sandbox.kubernetes.reaper\n",
        "frognano.sandbox.options": "from frognano.sandbox import kubernetes\n",
        "frognano.sandbox.kubernetes.backend": "from frognano.sandbox.kubernetes import pod\n",
        "frognano.sandbox.registry": "from frognano.sandbox.kubernetes import reaper\n",
        "frognano.sandbox.local": "from frognano.sandbox.kubernetes_notes import x\n",
    }
    modules = {}
    for name, text in planted.items():
        modules[name] = tmp_path / f"{name}.py"
        modules[name].write_text(text, encoding="utf-8")
    assert _backend_leaks(modules) == [
        "frognano.run.pipeline:1 imports frognano.sandbox.kubernetes.pod",
        "frognano.app.worker:2 imports frognano.sandbox.kubernetes.reaper",
        "frognano.sandbox.options:1 imports frognano.sandbox.kubernetes",
    ]


# Packages that must not reach what others own, beyond the package rules above. The gate reads
# the policy's models and paths, never the configuration's files (loading, merging, reloading).
INNER_FORBIDDEN = {
    "frognano.policy.gate": (
        "frognano.policy.loader",
        "frognano.policy.store",
        "frognano.policy.merge",
        "frognano.policy.fileformat",
        "frognano.policy.issues",
    ),
    # The webhook decision code is sans-I/O: it decides from a delivery's bytes alone, so it
    # reaches no client, queue, server or sandbox (GitHub's plain values are allowed).
    "frognano.app.events": (
        *(
            f"frognano.github.{m}"
            for m in (
                "client",
                "core",
                "auth",
                "retry",
                "archive",
                "issues",
                "gitdata",
                "pulls",
                "checks",
            )
        ),
        "frognano.app.intake",
        "frognano.app.worker",
        "frognano.app.web",
        "frognano.run",
        "frognano.sandbox",
        "frognano.agent",
        "redis",
        "arq",
        "httpx",
        "github",
        "fastapi",
        "kubernetes",
        "openai",
        "socket",
        "asyncio",
        "subprocess",
    ),
}


def _inner_leaks(modules: dict[str, Path]) -> list[str]:
    found: dict[tuple[str, int], str] = {}  # one per statement: the module it imports from
    for name, path in modules.items():
        for package, forbidden in INNER_FORBIDDEN.items():
            if not _inside(name, package):
                continue
            for line, target in _imports(path):
                if any(_inside(target, f) for f in forbidden):
                    found.setdefault((name, line), target)
    return [f"{name}:{line} imports {target}" for (name, line), target in found.items()]


def test_inner_packages_keep_to_their_side() -> None:
    assert not _inner_leaks(MODULES)


def test_the_inner_rules_catch_a_planted_import(tmp_path: Path) -> None:
    planted = {
        "frognano.policy.gate.check": "from frognano.policy.loader import load_policies\n",
        "frognano.policy.gate.python.code": "def f() -> None:\n    import frognano.policy.store\n",
        "frognano.policy.gate.scan": "from frognano.policy.models import GatePolicy\n",
        "frognano.run.pipeline": "from frognano.policy.loader import load_policies\n",
        "frognano.app.events.triggers": "from frognano.github.client import RepoClient\n",
        "frognano.app.events.fields": "from frognano.github.models import is_bot\nimport redis\n",
    }
    modules = {}
    for name, text in planted.items():
        modules[name] = tmp_path / f"{name}.py"
        modules[name].write_text(text, encoding="utf-8")
    assert _inner_leaks(modules) == [
        "frognano.policy.gate.check:1 imports frognano.policy.loader",
        "frognano.policy.gate.python.code:2 imports frognano.policy.store",
        "frognano.app.events.triggers:1 imports frognano.github.client",
        "frognano.app.events.fields:2 imports redis",
    ]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    # The control: the check below would pass vacuously if this found nothing.
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    assert _cycles(_internal_edges()) == []


def test_subpackages_are_found() -> None:
    edges = _internal_edges()
    # The control: a layering test that reads no edge would pass; these edges exist.
    assert "frognano.run.pipeline" in edges["frognano.app.run_issue"]
    assert "frognano.agent.loop" in edges["frognano.run.pipeline"]


def test_at_most_eight_modules_at_the_top_level() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= TOP_LEVEL_MAX, top


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE)): count
        for path in MODULES.values()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES_MAX
    }
    assert not long


def test_every_module_opens_with_a_one_line_docstring() -> None:
    wrong = []
    for path in MODULES.values():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        doc = ast.get_docstring(tree, clean=False)
        if doc is None or "\n" in doc.strip():
            wrong.append(str(path.relative_to(PACKAGE)))
    assert not wrong


_LOG_METHODS = {"debug", "info", "warning", "error", "exception", "critical"}
_EVENT = re.compile(r"[a-z][a-z_]*(\.[a-z][a-z_]*)+")


def _log_events(path: Path) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _LOG_METHODS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value


def test_log_events_are_dotted_names() -> None:
    events = [(path, line, event) for path in MODULES.values() for line, event in _log_events(path)]
    assert len(events) > 30  # the control: the walk finds the log calls
    wrong = [
        f"{path.relative_to(PACKAGE)}:{line}: {event!r}"
        for path, line, event in events
        if not _EVENT.fullmatch(event)
    ]
    assert not wrong, "log events are `area.what_happened`:\n" + "\n".join(wrong)
