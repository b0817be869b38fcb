"""Name resolution: the exact qualified names an expression stands for, and its depth limit."""

from __future__ import annotations

import ast

import pytest

from frognano.policy.gate.python import rules as pyrules
from frognano.policy.gate.python.const import Folder, nodes_by_type
from frognano.policy.gate.python.resolve import MAX_DEPTH, MAX_TARGETS, Resolver


def resolve(source: str, depth: int | None = None) -> set[str]:
    """What the last statement's expression of `source` stands for (from `depth`, if given)."""
    tree = ast.parse(source)
    nodes = nodes_by_type(tree)
    resolver = Resolver(nodes, Folder(nodes), pyrules.inherited)
    statement = tree.body[-1]
    assert isinstance(statement, ast.Expr)
    if depth is None:
        return set(resolver.resolve(statement.value))
    return set(resolver.resolve(statement.value, depth))


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("import os\nos", {"os"}),
        ("import os.path\nos", {"os"}),
        ("import os.path\nos.path.join", {"os.path.join"}),
        ("import a.b.c\na", {"a"}),
        ("import a.b.c as d\nd", {"a.b.c"}),
        ("from os import _exit as e\ne", {"os._exit"}),
        ("from . import x\nx", {"..x"}),
        ("from .m import x\nx", {".m.x"}),
        ("from ..m import x\nx", {"..m.x"}),
        ("from os import *\n_exit", {"builtins._exit", "_exit", "os._exit"}),
        ("from os import *\nfrom sys import *\nx", {"builtins.x", "x", "os.x", "sys.x"}),
        ("__builtins__", {"builtins"}),
        ("__builtins__.exit", {"builtins.exit"}),
        ("exit", {"builtins.exit", "exit"}),
        ("def f(exit): pass\nexit", set()),
        ("for exit in x: pass\nexit", set()),
        ("try: pass\nexcept E as exit: pass\nexit", set()),
        ("match x:\n    case exit: pass\nexit", set()),
        ("match x:\n    case [*exit]: pass\nexit", set()),
        ("match x:\n    case {**exit}: pass\nexit", {"builtins.exit", "exit"}),
        ("async def exit(): pass\nexit", {"<local>.exit"}),
        ("class exit: pass\nexit", set()),
        ("import os\nm: object = os\nm._exit", {"os._exit"}),
        ("import os\nm: object\nm._exit", set()),
        ("import os\n(m := os)\nm._exit", {"os._exit"}),
        ("import os\nasync def f():\n    return os\nf()._exit", {"<local>.f()._exit", "os._exit"}),
        ("import os\ndef f():\n    def g():\n        return os\nf()", {"<local>.f()"}),
        ("import os\nc = b\nb = a\na = os\nc._exit", {"os._exit"}),
        ("import os\na = os\nb = a\nc = b\nc._exit", {"os._exit"}),
        ("import os\nm = os\nm._exit", {"os._exit"}),
        ("import os\nx.y = os\nx.y._exit", {"builtins.x.y._exit", "x.y._exit", "os._exit"}),
        ("import os, m\nm.y = os\nm.y", {"m.y", "os"}),
        ("import os, sys\nos if c else sys", {"os", "sys"}),
        ("import os, sys\nc and os or sys", {"builtins.c", "c", "os", "sys"}),
        ("import os\n(m := os)", {"os"}),
        ("import os\nawait os", {"os"}),
        ("import os\n(os)", {"os"}),
        ("import os\nf = lambda: os\nf()._exit", {"<local>.f()._exit", "os._exit"}),
        ("import os\nd.k = lambda: os\nd.k()", {"<local>.d.k()", "builtins.d.k()", "d.k()", "os"}),
        ("import os\ndef f():\n    return os\nf()._exit", {"<local>.f()._exit", "os._exit"}),
        ("import os\nos.getpid()", {"os.getpid()"}),
        ("import sys\nsys.modules['os']._exit", {"os._exit"}),
        ("import sys\nsys.modules[k]", set()),
        ("import os\nvars(os)['_exit']", {"os._exit"}),
        ("import os\nos.__dict__['_exit']", {"os._exit"}),
        ("globals()['exit']", {"builtins.exit", "exit"}),
        ("locals()['exit']", {"builtins.exit", "exit"}),
        ("__import__('a.b.c')", {"__import__()", "a", "a.b.c"}),
        ("d['exit']", set()),
        ("import os\ngetattr(os, '_exit')", {"getattr()", "os._exit"}),
        ("import os\ngetattr(os, name)", {"getattr()"}),
        ("__import__('os.path')", {"__import__()", "os", "os.path"}),
        ("import importlib\nimportlib.import_module('os')", {"os"}),
        ("import importlib\nimportlib.import_module('.os')", {"importlib.import_module()"}),
        ("import sys\nsys.modules.get('os')", {"os", "sys.modules.get()"}),
        ("import os\nos.__getattribute__('_exit')", {"os._exit"}),
        ("import operator, os\noperator.attrgetter('_exit')(os)", {"os._exit"}),
        ("class Stop(SystemExit): pass\nStop", {"builtins.SystemExit"}),
        ("class Fine(ValueError): pass\nFine", set()),
        ("1", set()),
    ],
)
def test_an_expression_stands_for_exactly_these_names(source: str, names: set[str]) -> None:
    assert resolve(source) == names


def test_a_union_of_more_than_the_limit_is_cut_to_the_first_names_sorted() -> None:
    names = [f"n{index:02}" for index in range(9)]
    every = sorted({f"builtins.{name}" for name in names} | set(names))
    assert len(every) > MAX_TARGETS
    assert resolve(" or ".join(names)) == set(every[:MAX_TARGETS])


@pytest.mark.parametrize(
    ("source", "limit", "names"),
    [
        ("import os\nos" + ".a" * MAX_DEPTH, 0, {"os" + ".a" * MAX_DEPTH}),
        ("import os\nos.a", MAX_DEPTH - 1, {"os.a"}),
        ("import os\nos.a()", MAX_DEPTH - 2, {"os.a()"}),
        ("import sys\nsys.modules['os']", MAX_DEPTH - 2, {"os"}),
        ("import os\n(x := os)", MAX_DEPTH - 1, {"os"}),
        ("import os\nawait os", MAX_DEPTH - 1, {"os"}),
        ("import os\nos if c else 1", MAX_DEPTH - 1, {"os"}),
        ("import os\n1 if c else os", MAX_DEPTH - 1, {"os"}),
        ("import os\nc or os", MAX_DEPTH - 1, {"builtins.c", "c", "os"}),
        ("import os\ngetattr(os, 'a')", MAX_DEPTH - 1, {"getattr()", "os.a"}),
        ("import os\nvars(os)", MAX_DEPTH - 1, {"os.__dict__", "vars()"}),
    ],
)
def test_expressions_deeper_than_the_limit_stand_for_nothing(
    source: str, limit: int, names: set[str]
) -> None:
    assert resolve(source, limit) == names
    assert resolve(source, limit + 1) == set()


def test_an_attribute_chain_at_the_depth_limit_resolves_and_one_past_stands_for_nothing() -> None:
    assert resolve("import os\nos" + ".a" * MAX_DEPTH) == {"os" + ".a" * MAX_DEPTH}
    assert resolve("import os\nos" + ".a" * (MAX_DEPTH + 1)) == set()


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("import os\ngetattr(os, 'a')", {"getattr()"}),  # `os` too deep: no `os.a`
        ("import os\nvars(os)", {"vars()"}),
        ("import operator, os\noperator.attrgetter('a')(os)", set()),
    ],
)
def test_a_call_argument_counts_towards_the_depth_limit(source: str, names: set[str]) -> None:
    tree = ast.parse(source)
    nodes = nodes_by_type(tree)
    resolver = Resolver(nodes, Folder(nodes), pyrules.inherited)
    statement = tree.body[-1]
    assert isinstance(statement, ast.Expr)
    call = statement.value
    assert isinstance(call, ast.Call)
    resolver.resolve(call.func)  # remembered, so not too deep below
    assert resolver.resolve(call, MAX_DEPTH) == names
