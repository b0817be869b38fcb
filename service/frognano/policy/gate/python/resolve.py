"""What Python expressions refer to: `o._exit` is `os._exit` after `import os as o`."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from frognano.policy.gate.python.const import Folder, Nodes, of_type

EMPTY: frozenset[str] = frozenset()
MAX_TARGETS = 16
"""Most qualified names one expression may stand for; more are cut (sorted, so deterministic)."""
MAX_DEPTH = 60
_PASSES = 3  # `a = os; b = a; c = b._exit` needs one pass per link
_GETTERS = (".get", ".pop", ".__getitem__")


class Resolver:
    """The qualified names (`os._exit`, `pytest.mark.skip`) each expression of one module may
    stand for.

    Bindings are flow-insensitive and scopes are merged: a name bound anywhere to `os._exit`
    stands for it everywhere, which over-reports rather than misses. A call's result is the
    callee's name with `()` appended (`os.getpid()`); `getattr(m, "x")`, `__import__("m")`,
    `importlib.import_module("m")`, `vars(m)[...]`, `m.__dict__[...]` and `sys.modules[...]`
    with constant (folded) names resolve to what they fetch. Unbound names are builtins
    (`builtins.exit`) or come from a star import.
    """

    def __init__(self, nodes: Nodes, folder: Folder, inherit: Callable[[str], bool]) -> None:
        """`nodes`: the module's nodes by type (`nodes_by_type`); `inherit`: base classes
        (qualified names) whose subclasses stand for the base too."""
        self._folder = folder
        self._bindings: dict[str, set[str]] = {}
        self._stars: list[str] = []
        self._memo: dict[int, frozenset[str]] = {}
        self._bound: set[str] = {
            name.id for name in of_type(nodes, ast.Name) if not isinstance(name.ctx, ast.Load)
        }
        self._bound.update(arg.arg for arg in of_type(nodes, ast.arg))
        self._bound.update(node.name for node in of_type(nodes, ast.FunctionDef))
        self._bound.update(node.name for node in of_type(nodes, ast.AsyncFunctionDef))
        self._bound.update(node.name for node in of_type(nodes, ast.ClassDef))
        self._bound.update(node.name for node in of_type(nodes, ast.ExceptHandler) if node.name)
        self._bound.update(node.name for node in of_type(nodes, ast.MatchAs) if node.name)
        self._bound.update(node.name for node in of_type(nodes, ast.MatchStar) if node.name)
        for imported in of_type(nodes, ast.Import):
            self._imported(imported)
        for imported_from in of_type(nodes, ast.ImportFrom):
            self._imported(imported_from)
        assigns: list[tuple[ast.expr, ast.expr]] = [
            (target, node.value) for node in of_type(nodes, ast.Assign) for target in node.targets
        ]
        assigns += [(n.target, n.value) for n in of_type(nodes, ast.AnnAssign) if n.value]
        assigns += [(n.target, n.value) for n in of_type(nodes, ast.NamedExpr)]
        classes = list(of_type(nodes, ast.ClassDef))
        # What calling a local function gives: `def m(): return os` makes `m()._exit` os._exit.
        functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
            *of_type(nodes, ast.FunctionDef),
            *of_type(nodes, ast.AsyncFunctionDef),
        ]
        returns = [(function.name, value) for function in functions for value in _returns(function)]
        for function in functions:
            self._bind(function.name, {f"<local>.{function.name}"})
        for _ in range(_PASSES):
            before = sum(map(len, self._bindings.values()))
            self._memo.clear()
            for target, value in assigns:
                self._assign(target, self.resolve(value))
                if isinstance(value, ast.Lambda):
                    self._called(target, self.resolve(value.body))
            for name, value in returns:
                self._bind(f"<local>.{name}()", self.resolve(value))
            for cls in classes:
                bases = {name for base in cls.bases for name in self.resolve(base) if inherit(name)}
                self._bind(cls.name, bases)
            if sum(map(len, self._bindings.values())) == before:
                break
        self._memo.clear()

    def resolve(self, node: ast.AST, depth: int = 0) -> frozenset[str]:
        """The qualified names `node` may stand for (empty when unknown)."""
        key = id(node)
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        result = EMPTY if depth > MAX_DEPTH else self._resolve(node, depth + 1)
        if len(result) > MAX_TARGETS:
            result = frozenset(sorted(result)[:MAX_TARGETS])
        self._memo[key] = result
        return result

    def name(self, name: str) -> frozenset[str]:
        """What a bare `name` stands for."""
        if name in self._bindings:
            return frozenset(self._bindings[name])
        if name in self._bound:
            return EMPTY
        if name == "__builtins__":
            return frozenset({"builtins"})
        # An unbound `sys` is a NameError unless something (a conftest, say) put it into
        # builtins: take it for the module of that name too.
        stars = (f"{module}.{name}" for module in self._stars)
        return frozenset({f"builtins.{name}", name, *stars})

    def _imported(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self._bind(alias.asname, {alias.name})
                else:
                    top = alias.name.partition(".")[0]
                    self._bind(top, {top})
            return
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                self._stars.append(module)
            else:
                self._bind(alias.asname or alias.name, {f"{module}.{alias.name}"})

    def _called(self, target: ast.expr, value: frozenset[str]) -> None:
        """`target = lambda: value`: calling `target` gives `value`."""
        dotted = _dotted(target) if isinstance(target, ast.Name | ast.Attribute) else None
        if dotted is not None:
            self._bind(dotted, {f"<local>.{dotted}"})
            self._bind(f"<local>.{dotted}()", value)

    def _bind(self, name: str, targets: Iterable[str]) -> None:
        self._bound.add(name)
        bound = self._bindings.setdefault(name, set())
        for target in targets:
            if len(bound) >= MAX_TARGETS:
                break
            bound.add(target)

    def _assign(self, target: ast.expr, value: frozenset[str]) -> None:
        if isinstance(target, ast.Name):
            self._bind(target.id, value)
        elif isinstance(target, ast.Attribute):
            dotted = _dotted(target)
            if dotted is not None:
                self._bind(dotted, value)

    def _resolve(self, node: ast.AST, depth: int) -> frozenset[str]:  # noqa: PLR0911
        if isinstance(node, ast.Name):
            return self.name(node.id)
        if isinstance(node, ast.Attribute):
            out = {f"{owner}.{node.attr}" for owner in self.resolve(node.value, depth)}
            dotted = _dotted(node)
            if dotted is not None and dotted in self._bindings:
                out |= self._bindings[dotted]
            return frozenset(out)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.Subscript):
            key = self._folder.text(node.slice)
            if key is None:
                return EMPTY
            return frozenset(
                target
                for owner in self.resolve(node.value, depth)
                for target in self._lookup(owner, key)
            )
        if isinstance(node, ast.NamedExpr):
            return self.resolve(node.value, depth)
        if isinstance(node, ast.IfExp):
            return self.resolve(node.body, depth) | self.resolve(node.orelse, depth)
        if isinstance(node, ast.BoolOp):
            return frozenset().union(*(self.resolve(value, depth) for value in node.values))
        if isinstance(node, ast.Starred | ast.Await):
            return self.resolve(node.value, depth)
        return EMPTY

    def _call(self, node: ast.Call, depth: int) -> frozenset[str]:
        args = node.args
        first = self._folder.text(args[0]) if args else None
        out: set[str] = set()
        for func in self.resolve(node.func, depth):
            if func == "operator.attrgetter" and first is not None:
                out.add(f"operator.attrgetter({first})")  # called on an object below
            elif func == "builtins.getattr" and len(args) >= 2:
                attribute = self._folder.text(args[1])
                if attribute is not None:
                    out |= {f"{owner}.{attribute}" for owner in self.resolve(args[0], depth)}
            elif func == "builtins.__import__" and first:
                out |= {first, first.partition(".")[0]}
            elif func == "importlib.import_module" and first and not first.startswith("."):
                out.add(first)
            elif func == "builtins.vars" and args:
                out |= {f"{owner}.__dict__" for owner in self.resolve(args[0], depth)}
            elif func.endswith(_GETTERS) and first is not None:
                out |= self._lookup(func.rpartition(".")[0], first)
                out.add(f"{func}()")
            elif func.endswith(".__getattribute__") and first is not None:
                out.add(f"{func.removesuffix('.__getattribute__')}.{first}")
            elif func.startswith("operator.attrgetter(") and args:
                attribute = func.removeprefix("operator.attrgetter(").removesuffix(")")
                out |= {f"{owner}.{attribute}" for owner in self.resolve(args[0], depth)}
            else:
                out.add(f"{func}()")
                out |= self._bindings.get(f"{func}()", set())
        return frozenset(out)

    def _lookup(self, owner: str, key: str) -> frozenset[str]:
        """What `owner[key]` fetches, for the mappings that hold modules and their members."""
        if owner == "sys.modules":
            return frozenset({key})
        if owner.endswith(".__dict__"):
            return frozenset({f"{owner.removesuffix('.__dict__')}.{key}"})
        if owner in ("builtins.globals()", "builtins.locals()"):
            return self.name(key)
        return EMPTY


def _returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """The values `function` itself returns (not those of functions nested in it)."""
    found: list[ast.expr] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            found.append(node.value)
        elif not isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
        ):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` for an attribute chain on a plain name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
