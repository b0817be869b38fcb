"""The constant folder: the exact value each supported expression folds to, and where it stops."""

from __future__ import annotations

import ast

import pytest

from frognano.policy.gate.python.const import (
    MAX_DEPTH,
    MAX_LENGTH,
    Const,
    ConstValue,
    Folder,
    nodes_by_type,
    of_type,
    pieces,
)

UNKNOWN = "<not a constant>"
"""Expected result of an expression that does not fold."""


def _last(tree: ast.Module) -> ast.expr:
    statement = tree.body[-1]
    assert isinstance(statement, ast.Expr | ast.Assign)
    return statement.value


def fold(source: str, depth: int = 0) -> Const | None:
    """The last statement's expression of `source` folded, with the module's names."""
    tree = ast.parse(source)
    return Folder(nodes_by_type(tree)).fold(_last(tree), depth)


def typed(result: Const | None) -> object:
    """`result` with its value's type, so that `True` is not `1` and `b"a"` is not `"a"`."""
    if result is None:
        return UNKNOWN
    return (type(result.value).__name__, result.value)


def expect(value: ConstValue | str) -> object:
    return UNKNOWN if value == UNKNOWN else (type(value).__name__, value)


def literal(text: str) -> str:
    return repr(text)


CASES: list[tuple[str, ConstValue | str]] = [
    # constants
    ("'a'", "a"),
    ("b'a'", b"a"),
    ("1", 1),
    ("1.5", 1.5),
    ("None", None),
    ("True", True),
    ("...", ...),
    ("[1]", UNKNOWN),
    ("x", UNKNOWN),
    # unary
    ("-1", -1),
    ("--1", 1),
    ("-1.5", UNKNOWN),
    ("-True", UNKNOWN),
    ("+1", UNKNOWN),
    ("~1", UNKNOWN),
    ("not 1", False),
    ("not ''", True),
    ("not None", True),
    ("-x", UNKNOWN),
    ("not x", UNKNOWN),
    # addition
    ("'a' + 'b'", "ab"),
    ("b'a' + b'b'", b"ab"),
    ("1 + 2", 3),
    ("-5 + 2", -3),
    ("'a' + 1", UNKNOWN),
    ("1 + 'a'", UNKNOWN),
    ("'a' + b'b'", UNKNOWN),
    ("b'a' + 'b'", UNKNOWN),
    ("b'a' + 1", UNKNOWN),
    ("1 + 1.5", UNKNOWN),
    ("1.5 + 1", UNKNOWN),
    ("True + 1", UNKNOWN),
    ("1 + True", UNKNOWN),
    ("x + 1", UNKNOWN),
    ("1 + x", UNKNOWN),
    ("'a' + x", UNKNOWN),
    # subtraction
    ("5 - 3", 2),
    ("3 - 5", -2),
    ("1.5 - 1", UNKNOWN),
    ("1 - 1.5", UNKNOWN),
    ("'a' - 'b'", UNKNOWN),
    ("'a' - 1", UNKNOWN),
    ("True - 1", UNKNOWN),
    # multiplication
    ("'ab' * 3", "ababab"),
    ("3 * 'ab'", "ababab"),
    ("b'ab' * 2", b"abab"),
    ("2 * b'ab'", b"abab"),
    ("'ab' * 0", ""),
    ("'ab' * -2", ""),
    ("'ab' * 'c'", UNKNOWN),
    ("'ab' * 1.5", UNKNOWN),
    ("1.5 * 'ab'", UNKNOWN),
    ("'ab' * True", UNKNOWN),
    ("True * 'ab'", UNKNOWN),
    ("2 * 3", 6),
    ("-2 * 3", -6),
    ("2 * 1.5", UNKNOWN),
    ("1.5 * 2", UNKNOWN),
    ("True * 2", UNKNOWN),
    ("100 * 100", 10_000),
    ("4294967295 * 4294967295", 4294967295 * 4294967295),
    ("4294967296 * 2", UNKNOWN),
    ("2 * 4294967296", UNKNOWN),
    ("-4294967296 * 2", UNKNOWN),
    ("2 * -4294967296", UNKNOWN),
    ("-4294967295 * 2", -8589934590),
    # other operators are not folded
    ("7 // 2", UNKNOWN),
    ("7 % 2", UNKNOWN),
    ("'%s' % 'a'", UNKNOWN),
    ("2 ** 3", UNKNOWN),
    ("6 / 2", UNKNOWN),
    ("1 | 2", UNKNOWN),
    ("1 << 2", UNKNOWN),
    # boolean operators: the operand Python would return
    ("1 and 2", 2),
    ("0 and 2", 0),
    ("1 or 2", 1),
    ("0 or 2", 2),
    ("'' or 'b'", "b"),
    ("'a' and ''", ""),
    ("1 or x", 1),
    ("0 and x", 0),
    ("1 and 0 and x", 0),
    ("0 or '' or 3", 3),
    ("0 or x", UNKNOWN),
    ("1 and x", UNKNOWN),
    ("x or 1", UNKNOWN),
    ("x and 0", UNKNOWN),
    # comparisons, chained
    ("1 == 1", True),
    ("1 == 2", False),
    ("1 != 2", True),
    ("1 != 1", False),
    ("1 < 2", True),
    ("2 < 1", False),
    ("1 <= 1", True),
    ("2 <= 1", False),
    ("2 > 1", True),
    ("1 > 1", False),
    ("1 >= 1", True),
    ("1 >= 2", False),
    ("None is None", True),
    ("None is 1", False),
    ("None is not 1", True),
    ("None is not None", False),
    ("'a' == 'a'", True),
    ("1 < 2 < 3", True),
    ("1 < 3 < 2", False),
    ("3 < 2 < x", False),
    ("1 < 2 < x", UNKNOWN),
    ("1 == x", UNKNOWN),
    ("x == 1", UNKNOWN),
    ("'a' in 'abc'", UNKNOWN),
    ("'a' not in 'abc'", UNKNOWN),
    ("1 < 'a'", UNKNOWN),
    # conditional expressions
    ("'a' if True else 'b'", "a"),
    ("'a' if False else 'b'", "b"),
    ("'a' if 1 else 'b'", "a"),
    ("'a' if '' else 'b'", "b"),
    ("'a' if x else 'a'", "a"),
    ("'a' if x else 'b'", UNKNOWN),
    ("x if y else x", UNKNOWN),
    ("x if True else 'b'", UNKNOWN),
    ("'a' if False else x", UNKNOWN),
    ("'a' if True else x", "a"),
    # f-strings
    ("f'a{1}b'", "a1b"),
    ("f'{\"x\"}{2}'", "x2"),
    ("f'{True}'", "True"),
    ("f'{\"x\"!r}'", UNKNOWN),
    ("f'{\"x\"!s}'", UNKNOWN),
    ("f'{1:>3}'", UNKNOWN),
    ("f'{b\"a\"}'", UNKNOWN),
    ("f'{1.5}'", UNKNOWN),
    ("f'{None}'", UNKNOWN),
    ("f'{x}'", UNKNOWN),
    ("f''", ""),
    # subscripts and slices
    ("'abc'[1]", "b"),
    ("'abc'[0]", "a"),
    ("'abc'[2]", "c"),
    ("'abc'[-1]", "c"),
    ("'abc'[-3]", "a"),
    ("'abc'[3]", UNKNOWN),
    ("'abc'[-4]", UNKNOWN),
    ("b'abc'[0]", 97),
    ("'abc'[True]", UNKNOWN),
    ("'abc'[1.0]", UNKNOWN),
    ("'abc'[x]", UNKNOWN),
    ("x[0]", UNKNOWN),
    ("(1, 2)[0]", UNKNOWN),
    ("'abcdef'[1:3]", "bc"),
    ("'abcdef'[::2]", "ace"),
    ("'abcdef'[::1]", "abcdef"),
    ("'abcdef'[::-1]", "fedcba"),
    ("'abcdef'[4:]", "ef"),
    ("'abcdef'[:-4]", "ab"),
    ("b'abcdef'[1:3]", b"bc"),
    ("'abcdef'[::0]", UNKNOWN),
    ("'abcdef'[x:]", UNKNOWN),
    ("'abcdef'[:x]", UNKNOWN),
    ("'abcdef'[::x]", UNKNOWN),
    ("'abcdef'[1.5:]", UNKNOWN),
    ("'abcdef'[:'a']", UNKNOWN),
    # chr and str
    ("chr(97)", "a"),
    ("chr(0)", "\x00"),
    ("chr(1114111)", "\U0010ffff"),
    ("chr(1114112)", UNKNOWN),
    ("chr(-1)", UNKNOWN),
    ("chr(True)", UNKNOWN),
    ("chr('a')", UNKNOWN),
    ("chr(x)", UNKNOWN),
    ("chr(97, 1)", UNKNOWN),
    ("chr(*[97])", UNKNOWN),
    ("str(1)", "1"),
    ("str(-12)", "-12"),
    ("str('a')", "a"),
    ("str(b'a')", UNKNOWN),
    ("str(1.5)", UNKNOWN),
    ("str(x)", UNKNOWN),
    ("len('a')", UNKNOWN),
    ("f(1, 2)", UNKNOWN),
    ("(lambda: 1)()", UNKNOWN),
    # bytes.fromhex
    ("bytes.fromhex('6869')", b"hi"),
    ("bytes.fromhex('68 69')", b"hi"),
    ("bytes.fromhex('')", b""),
    ("bytes.fromhex('6')", UNKNOWN),
    ("bytes.fromhex('zz')", UNKNOWN),
    ("bytes.fromhex(1)", UNKNOWN),
    ("bytes.fromhex(b'68')", UNKNOWN),
    ("bytes.fromhex(x)", UNKNOWN),
    ("bytes.fromhex()", UNKNOWN),
    ("bytes.fromhex('68', '69')", UNKNOWN),
    ("bytes.fromhex(s='68')", UNKNOWN),
    ("x.fromhex('68')", UNKNOWN),
    ("b''.fromhex('68')", UNKNOWN),
    # str and bytes methods
    ("'Ab'.lower()", "ab"),
    ("'Ab'.upper()", "AB"),
    ("'Straße'.casefold()", "strasse"),
    ("'Ab'.swapcase()", "aB"),
    ("'ab cd'.title()", "Ab Cd"),
    ("'ab'.capitalize()", "Ab"),
    ("' a '.strip()", "a"),
    ("'xax'.strip('x')", "a"),
    ("' a '.lstrip()", "a "),
    ("' a '.rstrip()", " a"),
    ("'xay'.removeprefix('x')", "ay"),
    ("'xay'.removesuffix('y')", "xa"),
    ("'é'.encode()", b"\xc3\xa9"),
    ("'é'.encode('latin-1')", b"\xe9"),
    ("b'\\xc3\\xa9'.decode()", "é"),
    ("b'A'.lower()", b"a"),
    ("b'\\xff'.decode()", UNKNOWN),
    ("'é'.encode('ascii')", UNKNOWN),
    ("'a'.encode('no-such-codec')", UNKNOWN),
    ("'a'.strip(1)", UNKNOWN),
    ("'a'.strip(x)", UNKNOWN),
    ("'a'.upper(1)", UNKNOWN),
    ("b'a'.casefold()", UNKNOWN),
    ("b'a'.encode()", UNKNOWN),
    ("'a'.decode()", UNKNOWN),
    ("'a'.replace('a', 'b')", UNKNOWN),
    ("'{}'.format(1)", UNKNOWN),
    ("'a'.upper(*x)", UNKNOWN),
    ("'a'.encode(encoding='ascii')", UNKNOWN),
    ("(1).upper()", UNKNOWN),
    ("x.upper()", UNKNOWN),
    # joins
    ("','.join(['a', 'b'])", "a,b"),
    ("','.join(('a', 'b'))", "a,b"),
    ("','.join(['a'])", "a"),
    ("','.join([])", ""),
    ("','.join('abc')", "a,b,c"),
    ("b','.join([b'a', b'b'])", b"a,b"),
    ("','.join([b'a'])", UNKNOWN),
    ("b','.join(['a'])", UNKNOWN),
    ("','.join(['a', b'b'])", UNKNOWN),
    ("','.join([1])", UNKNOWN),
    ("','.join([x])", UNKNOWN),
    ("','.join(x)", UNKNOWN),
    ("','.join(1)", UNKNOWN),
    ("b','.join(b'ab')", UNKNOWN),
    ("','.join()", UNKNOWN),
    ("','.join(['a'], ['b'])", UNKNOWN),
    ("x.join(['a'])", UNKNOWN),
    ("''.join(map(chr, [104, 105]))", "hi"),
    ("''.join(map(chr, (104, 105)))", "hi"),
    ("'-'.join(map(chr, [0, 1114111]))", "\x00-\U0010ffff"),
    ("''.join(map(chr, [1114112]))", UNKNOWN),
    ("''.join(map(chr, [-1]))", UNKNOWN),
    ("''.join(map(chr, [True]))", UNKNOWN),
    ("''.join(map(chr, [1.5]))", UNKNOWN),
    ("''.join(map(chr, [x]))", UNKNOWN),
    ("''.join(map(chr, 104))", UNKNOWN),
    ("''.join(map(str, [104]))", UNKNOWN),
    ("''.join(filter(chr, [104]))", UNKNOWN),
    ("''.join(map(chr, [104], [105]))", UNKNOWN),
    ("''.join(map(chr))", UNKNOWN),
    ("''.join(m.map(chr, [104]))", UNKNOWN),
    ("''.join(map(m.chr, [104]))", UNKNOWN),
    ("b''.join(map(chr, [104]))", UNKNOWN),
    # names bound once
    ("a = 'x'\na", "x"),
    ("a = 'x'\nb = a + 'y'\nb", "xy"),
    ("a: str = 'x'\na", "x"),
    ("a: str\na = 'x'\na", UNKNOWN),
    ("a = 'x'\na = 'y'\na", UNKNOWN),
    ("a = b = 'x'\na", "x"),
    ("a = b = 'x'\nb", UNKNOWN),
    ("a, b = 'x', 'y'\na", UNKNOWN),
    ("a = 'x'\na += 'y'\na", UNKNOWN),
    ("a = 'x'\nfor a in y: pass\na", UNKNOWN),
    ("a = 'x'\ndel a\na", UNKNOWN),
    ("a = 'x'\ndef f(a): pass\na", UNKNOWN),
    ("a = 'x'\ndef f(*, a): pass\na", UNKNOWN),
    ("a = 'x'\ndef a(): pass\na", UNKNOWN),
    ("a = 'x'\nasync def a(): pass\na", UNKNOWN),
    ("a = 'x'\nclass a: pass\na", UNKNOWN),
    ("a = 'x'\nimport a\na", UNKNOWN),
    ("a = 'x'\nimport a.b\na", UNKNOWN),
    ("a = 'x'\nimport b as a\na", UNKNOWN),
    ("a = 'x'\nimport a as b\na", "x"),
    ("a = 'x'\nfrom m import a\na", UNKNOWN),
    ("b = 'x'\nimport a.b\nb", "x"),
    ("a = a\na", UNKNOWN),
    ("a = b\nb = a\na", UNKNOWN),
    ("a = 'x' if a else 'x'\na", "x"),
    ("a = 'x' if a else 'x' + ''\na", "x"),
    ("a = 'x'\na + a", "xx"),
    ("x.y: str = 'a'\n'b'", "b"),
    ("a = 'x'\n(a, a)", UNKNOWN),
]


@pytest.mark.parametrize(("source", "value"), CASES)
def test_an_expression_folds_to_exactly_its_value(source: str, value: ConstValue | str) -> None:
    assert typed(fold(source)) == expect(value)


LONG = MAX_LENGTH // 2


@pytest.mark.parametrize(
    ("source", "length"),
    [
        (literal("a" * MAX_LENGTH), MAX_LENGTH),
        (literal("a" * (MAX_LENGTH + 1)), None),
        (f"{literal('a' * LONG)} + {literal('b' * LONG)}", MAX_LENGTH),
        (f"{literal('a' * LONG)} + {literal('b' * (LONG + 1))}", None),
        (f"b'{'a' * LONG}' + b'{'b' * LONG}'", MAX_LENGTH),
        (f"b'{'a' * LONG}' + b'{'b' * (LONG + 1)}'", None),
        (f"'ab' * {LONG}", MAX_LENGTH),
        (f"'ab' * {LONG + 1}", None),
        (f"{LONG} * 'ab'", MAX_LENGTH),
        (f"b'ab' * {LONG + 1}", None),
        (f"'ab' * {2**63}", None),
        (f"{literal('a' * MAX_LENGTH)} * 0", 0),
        (f"{literal('a' * MAX_LENGTH)} * -1", 0),
        (f"','.join([{literal('a' * (LONG - 1))}, {literal('b' * LONG)}])", MAX_LENGTH),
        (f"','.join([{literal('a' * LONG)}, {literal('b' * LONG)}])", None),
        (f"''.join([{literal('a' * LONG)}, {literal('b' * LONG)}])", MAX_LENGTH),
        (f"','.join([{literal('a' * MAX_LENGTH)}])", MAX_LENGTH),
        (f"''.join([{literal('a' * LONG)}, {literal('b' * (LONG + 1))}])", None),
        (f"'ab'.join([{literal('a' * (MAX_LENGTH - 2))}, ''])", MAX_LENGTH),
        (f"'ab'.join([{literal('a' * (MAX_LENGTH - 1))}, ''])", None),
        ("f'{\"" + "a" * LONG + '"}{"' + "b" * LONG + "\"}'", MAX_LENGTH),
        ("f'{\"" + "a" * LONG + '"}{"' + "b" * (LONG + 1) + "\"}'", None),
    ],
    ids=lambda value: str(value)[:40],
)
def test_values_longer_than_the_limit_are_not_folded(source: str, length: int | None) -> None:
    result = fold(source)
    if length is None:
        assert result is None
    else:
        assert result is not None
        assert isinstance(result.value, str | bytes)
        assert len(result.value) == length


@pytest.mark.parametrize(
    ("source", "limit", "value"),
    [
        ("'a'", MAX_DEPTH, "a"),
        ("-1", MAX_DEPTH - 1, -1),
        ("not 1", MAX_DEPTH - 1, False),
        ("1 + 2", MAX_DEPTH - 1, 3),
        ("5 - 2", MAX_DEPTH - 1, 3),
        ("'a' * 2", MAX_DEPTH - 1, "aa"),
        ("0 or 2", MAX_DEPTH - 1, 2),
        ("1 and 2", MAX_DEPTH - 1, 2),
        ("1 < 2", MAX_DEPTH - 1, True),
        ("1 < 1 + 1", MAX_DEPTH - 2, True),
        ("1 + 1 > 1", MAX_DEPTH - 2, True),
        ("1 if 1 + 1 else 2", MAX_DEPTH - 2, 1),
        ("1 + 1 if 1 else 2", MAX_DEPTH - 2, 2),
        ("1 if 0 else 1 + 1", MAX_DEPTH - 2, 2),
        ("1 + 1 if x else 2", MAX_DEPTH - 2, 2),
        ("f'a{1}'", MAX_DEPTH - 1, "a1"),
        ("f'a'", MAX_DEPTH - 1, "a"),
        ("f'a{1 + 1}'", MAX_DEPTH - 2, "a2"),
        ("'ab'[1]", MAX_DEPTH - 1, "b"),
        ("('a' + 'b')[1]", MAX_DEPTH - 2, "b"),
        ("'ab'[0 + 1]", MAX_DEPTH - 2, "b"),
        ("'ab'[0 + 1:]", MAX_DEPTH - 2, "b"),
        ("'ab'[:0 + 1]", MAX_DEPTH - 2, "a"),
        ("'ab'[::0 + 1]", MAX_DEPTH - 2, "ab"),
        ("chr(96 + 1)", MAX_DEPTH - 2, "a"),
        ("str(1 + 1)", MAX_DEPTH - 2, "2"),
        ("bytes.fromhex('6' + '8')", MAX_DEPTH - 2, b"h"),
        ("('a' + 'B').lower()", MAX_DEPTH - 2, "ab"),
        ("'a'.strip('b' + 'c')", MAX_DEPTH - 2, "a"),
        ("','.join(['a' + 'b'])", MAX_DEPTH - 2, "ab"),
        ("','.join('a' + 'b')", MAX_DEPTH - 2, "a,b"),
        ("''.join(map(chr, [96 + 1]))", MAX_DEPTH - 2, "a"),
        ("a = 'x'\na", MAX_DEPTH - 1, "x"),
        ("a = 'x' + 'y'\na", MAX_DEPTH - 2, "xy"),
    ],
)
def test_expressions_deeper_than_the_limit_are_not_folded(
    source: str, limit: int, value: ConstValue | str
) -> None:
    assert typed(fold(source, limit)) == expect(value)
    assert fold(source, limit + 1) is None


def test_a_chain_exactly_at_the_depth_limit_folds_and_one_deeper_does_not() -> None:
    for count, value in ((MAX_DEPTH, Const(1)), (MAX_DEPTH + 1, None)):
        tree = ast.parse("-" * count + "1")
        assert Folder(nodes_by_type(tree)).fold(_last(tree)) == value


@pytest.mark.parametrize(("source", "side"), [("1 + 2", "left"), ("1 + 2", "right")])
def test_both_operands_count_towards_the_depth_limit(source: str, side: str) -> None:
    tree = ast.parse(source)
    folder = Folder(nodes_by_type(tree))
    node = _last(tree)
    assert isinstance(node, ast.BinOp)
    folder.fold(node.right if side == "left" else node.left)  # remembered, so not too deep
    assert folder.fold(node, MAX_DEPTH) is None


def test_a_fold_is_remembered_per_node() -> None:
    tree = ast.parse("'a' + 'b'")
    folder = Folder(nodes_by_type(tree))
    node = _last(tree)
    assert folder.fold(node) == Const("ab")
    assert folder.fold(node) == Const("ab")
    assert folder.fold(node, MAX_DEPTH + 1) == Const("ab")


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("'a'", "a"),
        ("b'a\\xff'", "a\ufffd"),
        ("'a' + 'b'", "ab"),
        ("1", None),
        ("None", None),
        ("True", None),
        ("x", None),
    ],
)
def test_text_is_the_folded_str_or_bytes_decoded(source: str, text: str | None) -> None:
    tree = ast.parse(source)
    assert Folder(nodes_by_type(tree)).text(_last(tree)) == text


def test_pieces_are_the_string_constants_bytes_decoded_with_replacement() -> None:
    node = _last(ast.parse("'a' + b'\\xffb' + f'{1}c' + str(2)"))
    assert sorted(pieces(node)) == sorted(["a", "\ufffdb", "c"])


def test_nodes_by_type_holds_every_node_once_grouped_by_type() -> None:
    tree = ast.parse("a = f(b, c)\ng = [d]")
    nodes = nodes_by_type(tree)
    assert {kind: len(group) for kind, group in nodes.items()} == {
        kind: len(group)
        for kind, group in _walked(tree).items()  # the same as ast.walk finds
    }
    assert sorted(name.id for name in of_type(nodes, ast.Name)) == ["a", "b", "c", "d", "f", "g"]
    assert [type(node) for node in nodes[ast.Module]] == [ast.Module]
    assert len(of_type(nodes, ast.Load)) == 5  # f, b, c, d and the list
    assert len(of_type(nodes, ast.Store)) == 2
    assert of_type(nodes, ast.ClassDef) == ()


def test_nodes_by_type_takes_a_missing_field_for_none() -> None:
    node = ast.Expr(ast.Constant(1))
    del node.value
    assert dict(nodes_by_type(node)) == {ast.Expr: [node]}


def _walked(tree: ast.AST) -> dict[type[ast.AST], list[ast.AST]]:
    grouped: dict[type[ast.AST], list[ast.AST]] = {}
    for node in ast.walk(tree):
        grouped.setdefault(type(node), []).append(node)
    return grouped
