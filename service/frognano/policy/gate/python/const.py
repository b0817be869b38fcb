"""Constant folding of Python expressions: the value an expression spells, without running it."""

from __future__ import annotations

import ast
import operator
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import EllipsisType
from typing import Any, TypeAlias, TypeGuard, TypeVar

MAX_LENGTH = 100_000
"""Longest string or bytes value folded; longer ones are unknown (no memory blow-up from
`"x" * 10**9`)."""
MAX_DEPTH = 100
"""Deepest expression folded; deeper ones are unknown (no recursion error)."""

ConstValue: TypeAlias = str | bytes | int | float | complex | bool | EllipsisType | None

# str methods whose result is no longer than their input plus their arguments, and that
# cannot fail on any input: safe to run on the patch's constants.
_STR_METHODS = frozenset({
    "lower", "upper", "casefold", "swapcase", "title", "capitalize", "strip", "lstrip",
    "rstrip", "removeprefix", "removesuffix", "encode", "decode",
})  # fmt: skip


_Node = TypeVar("_Node", bound=ast.AST)
_FOLDABLE = frozenset({ast.Constant, ast.JoinedStr, ast.BinOp, ast.UnaryOp, ast.BoolOp,
                       ast.Subscript, ast.Call, ast.Name, ast.Compare, ast.IfExp})  # fmt: skip
_COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
}  # fmt: skip


@dataclass(frozen=True)
class Const:
    """A folded value (None is a value here, so it is wrapped)."""

    value: ConstValue


class Folder:
    """Folds the expressions of one module, following names that are bound exactly once.

    Results are memoised per node, so folding every node of a tree is linear in its size.
    """

    def __init__(self, nodes: Nodes) -> None:
        """`nodes`: the module's nodes by type (`nodes_by_type`)."""
        self._memo: dict[int, Const | None] = {}
        self._names = _single_assignments(nodes)
        self._following: set[str] = set()

    def fold(self, node: ast.AST, depth: int = 0) -> Const | None:
        """The constant `node` evaluates to, or None when it is not a constant."""
        if type(node) not in _FOLDABLE:
            return None
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        result = None if depth > MAX_DEPTH else self._fold(node, depth + 1)
        if (
            result is not None
            and isinstance(result.value, str | bytes)
            and len(result.value) > MAX_LENGTH
        ):
            result = None
        self._memo[key] = result
        return result

    def text(self, node: ast.AST) -> str | None:
        """`node` folded to a str (bytes decoded as UTF-8, errors replaced), or None."""
        folded = self.fold(node)
        if folded is None:
            return None
        if isinstance(folded.value, str):
            return folded.value
        if isinstance(folded.value, bytes):
            return folded.value.decode("utf-8", "replace")
        return None

    def _fold(self, node: ast.AST, depth: int) -> Const | None:  # noqa: PLR0911 - one per kind
        if isinstance(node, ast.Constant):
            return Const(node.value)
        if isinstance(node, ast.JoinedStr):
            return self._joined(node, depth)
        if isinstance(node, ast.BinOp):
            return self._binop(node, depth)
        if isinstance(node, ast.UnaryOp):
            operand = self.fold(node.operand, depth)
            if operand is None:
                return None
            return _unary(node.op, operand.value)
        if isinstance(node, ast.BoolOp):
            return self._boolop(node, depth)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, depth)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.Name):
            return self._name(node.id, depth)
        if isinstance(node, ast.Compare):
            return self._compare(node, depth)
        if isinstance(node, ast.IfExp):
            return self._ifexp(node, depth)
        return None

    def _compare(self, node: ast.Compare, depth: int) -> Const | None:
        """`1 == 1`: comparisons of constants, whose results are cheap to compute."""
        left = self.fold(node.left, depth)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.fold(right_node, depth)
            compare = _COMPARISONS.get(type(op))
            if left is None or right is None or compare is None:
                return None
            try:
                if not compare(left.value, right.value):
                    return Const(False)
            except TypeError:
                return None
            left = right
        return Const(True)

    def _ifexp(self, node: ast.IfExp, depth: int) -> Const | None:
        """`a if test else b`: the branch the test picks, or the value both branches share."""
        test = self.fold(node.test, depth)
        body, orelse = self.fold(node.body, depth), self.fold(node.orelse, depth)
        if test is not None:
            return body if test.value else orelse
        return body if body is not None and body == orelse else None

    def _joined(self, node: ast.JoinedStr, depth: int) -> Const | None:
        parts: list[str] = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                if part.conversion != -1 or part.format_spec is not None:
                    return None
                inner = self.fold(part.value, depth)
                if inner is None or not isinstance(inner.value, str | int):
                    return None
                parts.append(str(inner.value))
            else:
                value = self.fold(part, depth)
                if value is None or not isinstance(value.value, str):
                    return None
                parts.append(value.value)
        return Const("".join(parts))

    def _binop(self, node: ast.BinOp, depth: int) -> Const | None:  # noqa: PLR0911
        left, right = self.fold(node.left, depth), self.fold(node.right, depth)
        if left is None or right is None:
            return None
        a, b = left.value, right.value
        if isinstance(node.op, ast.Add):
            if isinstance(a, str) and isinstance(b, str):
                return Const(a + b) if len(a) + len(b) <= MAX_LENGTH else None
            if isinstance(a, bytes) and isinstance(b, bytes):
                return Const(a + b) if len(a) + len(b) <= MAX_LENGTH else None
            if _is_int(a) and _is_int(b):
                return Const(a + b)
        if isinstance(node.op, ast.Sub) and _is_int(a) and _is_int(b):
            return Const(a - b)
        if isinstance(node.op, ast.Mult):
            if isinstance(b, str | bytes) and _is_int(a):
                a, b = b, a
            if isinstance(a, str | bytes) and _is_int(b):
                return Const(a * b) if len(a) * max(b, 0) <= MAX_LENGTH else None
            if _is_int(a) and _is_int(b) and abs(a) < 2**32 and abs(b) < 2**32:
                return Const(a * b)
        return None

    def _boolop(self, node: ast.BoolOp, depth: int) -> Const | None:
        result: Const | None = None
        for operand in node.values:
            result = self.fold(operand, depth)
            if result is None:
                return None
            if bool(result.value) == isinstance(node.op, ast.Or):
                return result
        return result

    def _subscript(self, node: ast.Subscript, depth: int) -> Const | None:
        container = self.fold(node.value, depth)
        if container is None or not isinstance(container.value, str | bytes):
            return None
        sequence = container.value
        if isinstance(node.slice, ast.Slice):
            bounds: list[int | None] = []
            for part in (node.slice.lower, node.slice.upper, node.slice.step):
                if part is None:
                    bounds.append(None)
                    continue
                folded = self.fold(part, depth)
                if folded is None or not _is_int(folded.value):
                    return None
                bounds.append(folded.value)
            if bounds[2] == 0:
                return None
            return Const(sequence[slice(*bounds)])
        index = self.fold(node.slice, depth)
        if (
            index is None
            or not _is_int(index.value)
            or not -len(sequence) <= index.value < len(sequence)
        ):
            return None
        return Const(sequence[index.value])

    def _call(self, node: ast.Call, depth: int) -> Const | None:  # noqa: PLR0911 - one per form
        if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
            return None
        func = node.func
        if isinstance(func, ast.Name) and len(node.args) == 1:
            return self._builtin(func.id, node.args[0], depth)
        if not isinstance(func, ast.Attribute):
            return None
        if func.attr == "fromhex" and isinstance(func.value, ast.Name) and func.value.id == "bytes":
            return self._fromhex(node, depth)
        receiver = self.fold(func.value, depth)
        if receiver is None or not isinstance(receiver.value, str | bytes):
            return None
        if func.attr == "join" and len(node.args) == 1:
            return self._join(receiver.value, node.args[0], depth)
        if func.attr not in _STR_METHODS:
            return None
        args = [self.fold(arg, depth) for arg in node.args]
        if any(arg is None for arg in args):
            return None
        method = getattr(receiver.value, func.attr, None)
        if method is None:
            return None
        try:
            return Const(method(*(arg.value for arg in args if arg is not None)))
        except (TypeError, ValueError, LookupError):
            return None

    def _builtin(self, name: str, node: ast.expr, depth: int) -> Const | None:
        """`chr(95)`, `str(1)`."""
        arg = self.fold(node, depth)
        if arg is None:
            return None
        if name == "chr" and _is_int(arg.value) and 0 <= arg.value < 0x110000:
            return Const(chr(arg.value))
        if name == "str" and isinstance(arg.value, str | int):
            return Const(str(arg.value))
        return None

    def _fromhex(self, node: ast.Call, depth: int) -> Const | None:
        arg = self.fold(node.args[0], depth) if len(node.args) == 1 else None
        if arg is None or not isinstance(arg.value, str):
            return None
        try:
            return Const(bytes.fromhex(arg.value))
        except ValueError:
            return None

    def _join(self, separator: str | bytes, arg: ast.expr, depth: int) -> Const | None:
        items = self._items(arg, depth)
        if items is None:
            return None
        kind = type(separator)
        if not all(isinstance(item, kind) for item in items):
            return None
        total = sum(len(item) for item in items) + len(separator) * max(len(items) - 1, 0)
        if total > MAX_LENGTH:
            return None
        return Const(separator.join(items))  # type: ignore[arg-type]

    def _items(self, arg: ast.expr, depth: int) -> Sequence[str | bytes] | None:
        """The pieces of `"".join(arg)`: a literal list or tuple, `map(chr, [...])` or a string."""
        if isinstance(arg, ast.List | ast.Tuple):
            values = [self.fold(element, depth) for element in arg.elts]
        elif (
            isinstance(arg, ast.Call)
            and isinstance(arg.func, ast.Name)
            and arg.func.id == "map"
            and len(arg.args) == 2
            and isinstance(arg.args[0], ast.Name)
            and arg.args[0].id == "chr"
            and isinstance(arg.args[1], ast.List | ast.Tuple)
        ):
            chars: list[str | bytes] = []
            for element in arg.args[1].elts:
                code = self.fold(element, depth)
                if code is None or not _is_int(code.value) or not 0 <= code.value < 0x110000:
                    return None
                chars.append(chr(code.value))
            return chars
        else:
            whole = self.fold(arg, depth)
            return list(whole.value) if whole and isinstance(whole.value, str) else None
        out: list[str | bytes] = []
        for value in values:
            if value is None or not isinstance(value.value, str | bytes):
                return None
            out.append(value.value)
        return out

    def _name(self, name: str, depth: int) -> Const | None:
        bound = self._names.get(name)
        if bound is None or name in self._following:
            return None
        self._following.add(name)
        try:
            return self.fold(bound, depth)
        finally:
            self._following.discard(name)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _unary(op: ast.unaryop, value: ConstValue) -> Const | None:
    if isinstance(op, ast.Not):
        return Const(not value)
    if isinstance(op, ast.USub) and _is_int(value):
        return Const(-value)
    return None


Nodes: TypeAlias = Mapping[type[ast.AST], Sequence[ast.AST]]
"""A module's nodes grouped by their type, each group in a fixed order."""


def nodes_by_type(tree: ast.AST) -> Nodes:
    """Every node of `tree` grouped by type: one walk, shared by all the analyses of a file."""
    grouped: dict[type[ast.AST], list[ast.AST]] = defaultdict(list)
    stack = [tree]
    while stack:  # ast.walk, without its generator per node (a third of the analysis's time)
        node = stack.pop()
        grouped[type(node)].append(node)
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, ast.AST):
                stack.append(value)
            elif type(value) is list:
                stack.extend([child for child in value if isinstance(child, ast.AST)])
    return grouped


def of_type(nodes: Nodes, kind: type[_Node]) -> Sequence[_Node]:
    """The nodes of type `kind`."""
    return nodes.get(kind, ())  # type: ignore[return-value]


def _single_assignments(nodes: Nodes) -> dict[str, ast.expr]:
    """Names bound exactly once in the whole module, by a plain `name = value`, to that value.

    Scopes are not told apart: a name bound twice anywhere is not followed at all, so a fold
    never picks one of two candidate values.
    """
    counts: Counter[str] = Counter()
    counts.update(
        name.id for name in of_type(nodes, ast.Name) if not isinstance(name.ctx, ast.Load)
    )
    counts.update(arg.arg for arg in of_type(nodes, ast.arg))
    counts.update(node.name for node in of_type(nodes, ast.FunctionDef))
    counts.update(node.name for node in of_type(nodes, ast.AsyncFunctionDef))
    counts.update(node.name for node in of_type(nodes, ast.ClassDef))
    counts.update(
        alias.asname or alias.name.partition(".")[0] for alias in of_type(nodes, ast.alias)
    )
    values: dict[str, ast.expr] = {}
    for assign in of_type(nodes, ast.Assign):
        if isinstance(assign.targets[0], ast.Name):
            values[assign.targets[0].id] = assign.value
    for annotated in of_type(nodes, ast.AnnAssign):
        if isinstance(annotated.target, ast.Name) and annotated.value is not None:
            values[annotated.target.id] = annotated.value
    return {name: value for name, value in values.items() if counts[name] == 1}


def pieces(node: ast.AST) -> Iterator[str]:
    """The string constants `node` is built from (for redaction)."""
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, str | bytes):
            value = child.value
            yield value if isinstance(value, str) else value.decode("utf-8", "replace")
