"""Test-weakening Python, found on the syntax tree of a patched file and reported on added lines."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from frognano.policy.gate.python import rules
from frognano.policy.gate.python import source as pysource
from frognano.policy.gate.python.const import Const, Folder, nodes_by_type, pieces
from frognano.policy.gate.python.resolve import Resolver
from frognano.policy.gate.python.source import header_span, leaves, touches, with_decorators
from frognano.policy.gate.textcode import OPTIONS, option_label

# Expressions that may fold to a string (a bare name only stands for one defined elsewhere).
_STRINGS = frozenset({ast.Constant, ast.JoinedStr, ast.BinOp, ast.Subscript, ast.Call})
_REFERENCES = frozenset({ast.Name, ast.Attribute, ast.Subscript, ast.Call})
_BODY_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


@dataclass(frozen=True)
class PyHit:
    """One test-weakening construct."""

    line: int
    """1-based line of the new file: the first added line the construct touches."""
    label: str


@dataclass(frozen=True)
class PyString:
    """A string value built on added lines that the text of no single line shows as such."""

    line: int
    value: str
    pieces: tuple[str, ...]


@dataclass(frozen=True)
class PyAnalysis:
    """What the syntax tree of one file shows."""

    hits: tuple[PyHit, ...] = ()
    strings: tuple[PyString, ...] = ()
    error: str | None = None
    """Why the file could not be analysed (it does not parse), or None."""


def analyse(source: str, added: Sequence[int]) -> PyAnalysis:
    """The test-weakening constructs of `source` that touch the `added` lines (1-based, counted
    as git counts them: a lone carriage return ends a line for Python, not for git)."""
    tree = pysource.parse(source)
    if isinstance(tree, str):
        return PyAnalysis(error=tree)
    lines = pysource.split_lines(source)
    to_git = pysource.git_lines(source) if "\r" in source else None
    wanted = set(added)
    python_added = (
        sorted(added) if to_git is None
        else [number for number, git in enumerate(to_git) if git in wanted and number]
    )  # fmt: skip
    try:
        found = _Analysis(tree, lines, python_added).run()
    except RecursionError:
        return PyAnalysis(error="nested too deeply to analyse")
    hits = list(found.hits)
    cookie = pysource.odd_encoding(lines)
    if cookie is not None and cookie[0] in python_added:
        hits.append(PyHit(cookie[0], rules.ENCODING.format(cookie[1])))
    if to_git is None:
        return PyAnalysis(tuple(hits), found.strings)
    return PyAnalysis(
        tuple(PyHit(to_git[hit.line], hit.label) for hit in hits),
        tuple(PyString(to_git[s.line], s.value, s.pieces) for s in found.strings),
    )


def analyse_added(lines: Sequence[str], numbers: Sequence[int]) -> PyAnalysis:
    """What the added lines alone show, for a file whose new text is unknown: each run of
    consecutive lines, else each line, that parses on its own is analysed."""
    hits: list[PyHit] = []
    strings: list[PyString] = []
    for source, added in pysource.fragments(lines, numbers):
        found = analyse(source, added)
        hits += found.hits
        strings += found.strings
    return PyAnalysis(tuple(dict.fromkeys(hits)), tuple(strings))


class _Analysis:
    """One file's analysis: its nodes, what its names stand for, and what it found so far."""

    def __init__(self, tree: ast.Module, lines: list[str], added: list[int]) -> None:
        self.nodes = nodes_by_type(tree)
        self.lines = lines
        self.added = added
        self.folder = Folder(self.nodes)
        self.resolver = Resolver(self.nodes, self.folder, rules.inherited)
        self.hits: set[PyHit] = set()
        self.sensed = self.pytest_named = False
        self.strings: dict[tuple[int, str], PyString] = {}

    def run(self) -> PyAnalysis:
        for kind, nodes in self.nodes.items():
            if issubclass(kind, ast.stmt | ast.ExceptHandler | ast.match_case):
                for node in nodes:
                    self._statement(node)
        hits = tuple(sorted(self.hits, key=lambda hit: (hit.line, hit.label)))
        return PyAnalysis(hits, tuple(self.strings.values()))

    def hit(self, node: ast.AST, label: str | None, span: ast.AST | None = None) -> None:
        if label is None:
            return
        line = touches(span or node, self.added)
        if line is not None:
            self.hits.add(PyHit(line, label))

    def _statement(self, node: ast.AST) -> None:
        """A statement's own checks, then every expression of its header (not its body)."""
        if touches(with_decorators(node), self.added) is None:
            return  # every check below reports within the statement's lines
        self._definition(node)
        self._simple(node)
        self.sensed = self.pytest_named = False
        for field in node._fields:
            if field in _BODY_FIELDS:
                continue
            value = getattr(node, field, None)
            if isinstance(value, ast.AST):
                self._expressions(value)
            elif isinstance(value, list):
                for child in value:
                    if isinstance(child, ast.AST):
                        self._expressions(child)
        if self.sensed and self.pytest_named:
            self.hit(node, rules.UNDER_TEST, header_span(node))

    def _simple(self, node: ast.AST) -> None:
        """Raises, assignments and imports."""
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            raised = {name.removesuffix("()") for name in self.resolver.resolve(exc)}
            self.hit(node, rules.RAISE if raised & rules.RAISED else None)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            value = None if isinstance(node, ast.Delete) else node.value
            for target in targets:
                for leaf in leaves(target):
                    self._target(leaf, value)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            self._import(node)

    def _definition(self, node: ast.AST) -> None:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return
        if node.name.startswith("pytest_"):
            self.hit(node, rules.PLUGIN, with_decorators(node))
        if node.name in ("__eq__", "__ne__"):
            value = _constant_return(node.body, self.folder)
            if value is not None and bool(value.value) == (node.name == "__eq__"):
                self.hit(node, rules.ALWAYS_EQUAL)

    def _target(self, target: ast.expr, value: ast.expr | None) -> None:
        """Assignments that patch the runner, its streams or its results."""
        if isinstance(target, ast.Name):
            self.hit(target, rules.NAMES.get(target.id))
            if target.id in ("__eq__", "__ne__") and isinstance(value, ast.Lambda):
                self._lambda_equality(target.id, value)
        elif isinstance(target, ast.Attribute):
            owners = self.resolver.resolve(target.value)
            if any(rules.patched(owner) for owner in owners):
                self.hit(target, rules.PATCH)
            if "sys" in owners and target.attr in rules.STREAM_NAMES:
                self.hit(target, rules.STREAMS)
            elif "sys" in owners and target.attr in rules.SYS_PATCHED:
                self.hit(target, rules.PATCH)
            receiver = target.value
            if target.attr in rules.RESULT_ATTRIBUTES and not (
                isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")
            ):
                self.hit(target, rules.RESULTS)
            self.hit(target, rules.ATTRIBUTES.get(target.attr))
            if target.attr in ("__eq__", "__ne__") and isinstance(value, ast.Lambda):
                self._lambda_equality(target.attr, value)
        elif isinstance(target, ast.Subscript):
            key = self.folder.text(target.slice)
            if "sys.modules" in self.resolver.resolve(target.value):  # a module swapped
                self.hit(target, rules.PATCH if key and rules.patched(key) else rules.IMPORTS)

    def _lambda_equality(self, name: str, value: ast.Lambda) -> None:
        folded = self.folder.fold(value.body)
        if folded is not None and bool(folded.value) == (name == "__eq__"):
            self.hit(value, rules.ALWAYS_EQUAL)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            names = []
        for name in names:
            self.hit(node, rules.danger(name))

    def _expressions(self, root: ast.AST) -> None:
        """Check every node under `root` that touches an added line; note in `sensed` and
        `pytest_named` what may tell whether the code runs under the tests."""
        stack = [root]
        added = self.added
        while stack:
            node = stack.pop()
            kind = type(node)
            if getattr(node, "lineno", None) is not None and touches(node, added) is None:
                continue
            if kind in _STRINGS:
                text = self.folder.text(node)
                if text is not None:
                    self._string(node, text)  # type: ignore[arg-type]
                    continue
            if kind in _REFERENCES:
                self._reference(node)  # type: ignore[arg-type]
            for field in node._fields:
                value = getattr(node, field, None)
                if isinstance(value, ast.AST):
                    stack.append(value)
                elif isinstance(value, list):
                    stack.extend(child for child in value if isinstance(child, ast.AST))

    def _reference(self, node: ast.Name | ast.Attribute | ast.Subscript | ast.Call) -> None:
        if isinstance(node, ast.Name | ast.Attribute | ast.Subscript) and not isinstance(
            node.ctx, ast.Load
        ):
            return
        names = self.resolver.resolve(node)
        for name in names:
            self.hit(node, rules.danger(name))
            if rules.within(name, rules.SENSORS):
                self.sensed = True
        if isinstance(node, ast.Attribute):
            self.hit(node, rules.ATTRIBUTES.get(node.attr))
        elif isinstance(node, ast.Subscript):
            self._dynamic_lookup(node)
        elif isinstance(node, ast.Call):
            self._call(node)

    def _call(self, node: ast.Call) -> None:
        funcs = self.resolver.resolve(node.func)
        args = node.args
        if funcs & rules.KILL and args and self._own_pid(args[0]):
            self.hit(node, rules.SIGNAL)
        if isinstance(node.func, ast.Attribute):
            self._method_call(node, node.func)
        if funcs & rules.GETATTR and len(args) >= 2:
            self._getattr(node, funcs)
        if funcs & rules.IMPORT and args and self.folder.text(args[0]) is None:
            self.hit(node, rules.DYNAMIC_IMPORT)
        if funcs & rules.OPEN and args and self._descriptor(args[0]):
            self.hit(node, rules.RAW_FD)

    def _method_call(self, node: ast.Call, func: ast.Attribute) -> None:
        """`self.skipTest()`, `collect_ignore.append()`, `monkeypatch.setattr("pytest.x", ...)`."""
        if func.attr == "skipTest":
            self.hit(node, rules.UNITTEST_SKIP)
        if isinstance(func.value, ast.Name) and func.value.id in rules.NAMES:
            self.hit(node, rules.NAMES[func.value.id])
        target = self.folder.text(node.args[0]) if node.args else None
        if func.attr in ("setattr", "delattr", "patch") and target not in (None, "builtins"):
            self.hit(node, rules.PATCH if target and rules.patched(target) else None)
        if func.attr in ("setitem", "delitem") and node.args:  # monkeypatch.setitem(sys.modules)
            swapped = "sys.modules" in self.resolver.resolve(node.args[0])
            self.hit(node, rules.IMPORTS if swapped else None)

    def _getattr(self, node: ast.Call, funcs: frozenset[str]) -> None:
        """`getattr(os, name)` and its kin: what they fetch or patch, and computed names."""
        args = node.args
        attribute = self.folder.text(args[1])
        for owner in sorted(self.resolver.resolve(args[0])):
            if attribute is None and rules.within(owner, rules.WATCHED):
                self.hit(node, rules.DYNAMIC_ATTRIBUTE.format(owner))
            elif attribute is not None and "builtins.hasattr" not in funcs:
                self.hit(node, rules.danger(f"{owner}.{attribute}"))
                if funcs & {"builtins.setattr", "builtins.delattr"} and rules.patched(owner):
                    self.hit(node, rules.PATCH)
        lambda_value = args[2] if len(args) > 2 and isinstance(args[2], ast.Lambda) else None
        if "builtins.setattr" in funcs and attribute in ("__eq__", "__ne__") and lambda_value:
            self._lambda_equality(attribute, lambda_value)

    def _dynamic_lookup(self, node: ast.Subscript) -> None:
        """`sys.modules[name]`, `vars(os)[name]` with a name the gate cannot fold."""
        if self.folder.text(node.slice) is not None:
            return
        if isinstance(node.slice, ast.Name) and node.slice.id == "__name__":
            return  # sys.modules[__name__]: the module itself
        for owner in sorted(self.resolver.resolve(node.value)):
            module = owner.removesuffix(".__dict__")
            if owner == "sys.modules" or (module != owner and rules.within(module, rules.WATCHED)):
                self.hit(node, rules.DYNAMIC_ATTRIBUTE.format(module))

    def _own_pid(self, node: ast.expr) -> bool:
        folded = self.folder.fold(node)
        return bool(self.resolver.resolve(node) & rules.OWN_PID) or (
            folded is not None and folded.value in (0, -1)
        )

    def _descriptor(self, node: ast.expr) -> bool:
        """Whether `node` is a raw file descriptor: an int constant or a `.fileno()` call."""
        folded = self.folder.fold(node)
        if folded is not None and type(folded.value) is int:
            return True
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and (node.func.attr == "fileno")
        )

    def _string(self, node: ast.expr, text: str) -> None:
        if rules.UNDER_TEST_STRING.fullmatch(text):
            self.hit(node, rules.UNDER_TEST)
        if rules.RAW_PATH.search(text):
            self.hit(node, rules.RAW_FD)
        if rules.SHELL_KILL.search(text):
            self.hit(node, rules.SIGNAL)
        if rules.JUNIT_PATTERN.search(text):
            self.hit(node, rules.JUNIT)
        if OPTIONS.search(text):
            self.hit(node, option_label())
        lowered = text.lower()
        if "pytest" in lowered or "py.test" in lowered or text == "unittest":
            self.pytest_named = True
        line = touches(node, self.added)
        if line is not None and not self._literal(node, text):
            self.strings.setdefault((line, text), PyString(line, text, tuple(pieces(node))))

    def _literal(self, node: ast.expr, text: str) -> bool:
        """Whether `text` shows verbatim in the source of `node` (the line scan sees it)."""
        if not isinstance(node, ast.Constant):
            return False
        end = node.end_lineno or node.lineno
        return text in "\n".join(self.lines[node.lineno - 1 : end])


def _constant_return(body: Sequence[ast.stmt], folder: Folder) -> Const | None:
    """The constant a function body returns when that is all it does (after its docstring;
    `pass` returns None), else None."""
    statements = list(body)
    if (
        statements
        and isinstance(statements[0], ast.Expr)
        and isinstance(statements[0].value, ast.Constant)
    ):
        statements = statements[1:]  # the docstring
    if not statements or all(isinstance(s, ast.Pass) for s in statements):
        return Const(None)
    if len(statements) != 1 or not isinstance(statements[0], ast.Return):
        return None
    if statements[0].value is None:
        return Const(None)
    return folder.fold(statements[0].value)
