"""Python test modules that load or define pytest plugins, found by parsing them with `ast`."""

from __future__ import annotations

import ast
from collections.abc import Iterator


def plugin_name(source: bytes) -> str | None:
    """The first module-level name in `source` that makes it a pytest plugin, or None.

    That is `pytest_plugins` (pytest imports the plugins it lists, even from a test module) or
    any other `pytest_*` name: a function (not a `@fixture`: pytest takes no fixture object for a
    hook), a name imported from a module (`from helpers import pytest_configure`; `import
    pytest_asyncio` binds a module, no hook), an assignment, or a `global` declaration in a
    function, which binds the name at module level when the function runs.
    Source that does not parse is no plugin: Python could not import it either. Dynamic
    bindings (`globals()[...]`, `setattr`, `exec`, `from x import *`) are not seen.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for name in _module_bindings(tree.body):
        if _is_plugin_name(name):
            return name
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            for name in node.names:
                if _is_plugin_name(name):
                    return name
    return None


_Comprehension = ast.ListComp | ast.SetComp | ast.DictComp


def _is_plugin_name(name: str) -> bool:
    return name.startswith("pytest_")


def _module_bindings(body: list[ast.stmt]) -> Iterator[str]:
    """Names bound at module level by `body`, in order, looking into `if`, `try`, `with`,
    loops and `match`, which do not open a scope, but not into functions or classes."""
    for statement in body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            if not any(_is_fixture(decorator) for decorator in statement.decorator_list):
                yield statement.name
            continue
        if isinstance(statement, ast.ClassDef):
            continue  # a class is no hook (pytest takes only routines)
        if isinstance(statement, ast.Import):
            continue  # binds modules, which are no hooks: `import pytest_asyncio` is common
        if isinstance(statement, ast.ImportFrom):
            yield from (alias.asname or alias.name for alias in statement.names)
            continue
        yield from _stored_names(statement)  # before the bodies: `for pytest_x in ...:`
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                yield from _module_bindings([each for each in inner if isinstance(each, ast.stmt)])
        for handler in getattr(statement, "handlers", ()):
            yield from _module_bindings(handler.body)
        for case in getattr(statement, "cases", ()):
            yield from _module_bindings(case.body)


def _stored_names(statement: ast.stmt) -> Iterator[str]:
    """Names the statement itself assigns (targets, `for` and `with` targets, `:=`), without
    looking into nested statements, functions, lambdas or comprehensions."""
    pending: list[ast.AST] = [
        child for child in ast.iter_child_nodes(statement) if not isinstance(child, ast.stmt)
    ]
    while pending:
        node = pending.pop(0)
        # Statements inside (a `case` body, an `except` body) are _module_bindings' to read.
        if isinstance(node, ast.stmt | ast.Lambda | ast.GeneratorExp | _Comprehension):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node.id
        elif isinstance(node, ast.MatchAs | ast.MatchStar | ast.ExceptHandler) and node.name:
            yield node.name
        pending.extend(ast.iter_child_nodes(node))


def _is_fixture(decorator: ast.expr) -> bool:
    """`@fixture`, `@pytest.fixture`, `@pytest.fixture(...)`, `@pytest_asyncio.fixture`."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Name):
        return target.id == "fixture"
    return isinstance(target, ast.Attribute) and target.attr == "fixture"
