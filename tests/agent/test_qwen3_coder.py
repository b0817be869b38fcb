"""The qwen3_coder tool-call parser and the qwen3 reasoning split, as SGLang 0.5.23 does them."""

from __future__ import annotations

from typing import Any

import pytest

from frognano.agent.qwen3_coder import parse_tool_calls, split_reasoning
from tests.fakes.model_server import EXAMPLE_TOOLS, call_xml

# Extra schema types the five tools do not use.
TYPED_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "Tune",
        "parameters": {
            "type": "object",
            "properties": {
                "ratio": {"type": "number"},
                "opts": {"type": "object"},
                "items": {"type": "array"},
                "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "level": {"enum": [1, 2, 3]},
                "label": {"type": "string"},
            },
        },
    },
}
TOOLS = [*EXAMPLE_TOOLS, TYPED_TOOL]


def call(name: str, **params: str) -> str:
    """A call as the model writes it: every value raw text."""
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


def test_no_marker_is_all_content() -> None:
    text = "The fix is done. See <function=Read> mentioned in prose."
    assert parse_tool_calls(text, TOOLS) == (text, [])


def test_multiple_calls_in_order_with_text_before_kept() -> None:
    text = (
        "I will read both files.\n\n"
        + call("Read", file_path="/repo/a.py")
        + "\n"
        + call("Read", file_path="/repo/b.py", offset="10", limit="5")
    )
    content, calls = parse_tool_calls(text, TOOLS)
    assert content == "I will read both files.\n\n"  # SGLang does not strip it
    assert calls == [
        ("Read", {"file_path": "/repo/a.py"}),
        ("Read", {"file_path": "/repo/b.py", "offset": 10, "limit": 5}),
    ]


def test_calls_only_give_empty_content() -> None:
    assert parse_tool_calls(call("Bash", command="ls"), TOOLS) == (
        "",
        [("Bash", {"command": "ls"})],
    )


def test_multiline_values_lose_one_newline_each_side() -> None:
    old = "def f():\n    return 1\n"
    text = call("Edit", file_path="/a.py", old_string=old, new_string="\n\nx = 2\n\n")
    _, [(_, args)] = parse_tool_calls(text, TOOLS)
    assert args["old_string"] == old  # its own trailing newline survives
    assert args["new_string"] == "\n\nx = 2\n\n"


@pytest.mark.parametrize(
    ("param", "written", "expected"),
    [
        ("offset", "12", 12),
        ("offset", "-3", -3),
        ("offset", "twelve", "twelve"),  # failed conversion keeps the string
        ("offset", "1.5", "1.5"),
        ("offset", "null", None),
        ("offset", "NULL", None),
        ("file_path", "null", None),  # null wins over the string type too
        ("file_path", "42", "42"),
    ],
)
def test_read_parameter_conversion(param: str, written: str, expected: Any) -> None:
    _, [(_, args)] = parse_tool_calls(call("Read", **{param: written}), TOOLS)
    assert args[param] == expected
    assert type(args[param]) is type(expected)


@pytest.mark.parametrize(
    ("written", "expected"),
    [("true", True), ("True", True), ("false", False), ("yes", False), ("1", False)],
)
def test_boolean_is_lowercase_true(written: str, expected: bool) -> None:
    _, [(_, args)] = parse_tool_calls(
        call("Edit", file_path="/a", old_string="a", new_string="b", replace_all=written), TOOLS
    )
    assert args["replace_all"] is expected


@pytest.mark.parametrize(
    ("param", "written", "expected"),
    [
        ("ratio", "2", 2),  # whole and written without "." or "e": int
        ("ratio", "2.0", 2.0),
        ("ratio", "1e3", 1000.0),
        ("ratio", "0.25", 0.25),
        ("ratio", "a lot", "a lot"),
        ("opts", '{"a": [1, true, null]}', {"a": [1, True, None]}),
        ("opts", "{'a': 1}", {"a": 1}),  # json fails, literal_eval succeeds
        ("opts", "{broken", "{broken"),
        ("items", "[1, 2]", [1, 2]),
        ("maybe", "7", 7),  # anyOf integer|null is an integer
        ("level", "2", 2),  # an integer enum
        ("label", "[1]", "[1]"),
    ],
)
def test_schema_types(param: str, written: str, expected: Any) -> None:
    _, [(_, args)] = parse_tool_calls(call("Tune", **{param: written}), TOOLS)
    assert args[param] == expected
    assert type(args[param]) is type(expected)


def test_unknown_tool_and_parameter_pass_through_as_strings() -> None:
    text = call("Delete", path="/x", force="true") + call("Read", file_path="/a", mode="7")
    _, calls = parse_tool_calls(text, TOOLS)
    assert calls == [
        ("Delete", {"path": "/x", "force": "true"}),
        ("Read", {"file_path": "/a", "mode": "7"}),
    ]


def test_without_definitions_everything_is_a_string() -> None:
    _, calls = parse_tool_calls(call("Read", file_path="/a", offset="3"), None)
    assert calls == [("Read", {"file_path": "/a", "offset": "3"})]


def test_text_after_the_calls_is_dropped() -> None:
    text = "Before.\n" + call("Bash", command="pytest") + "\nAnd some words after."
    assert parse_tool_calls(text, TOOLS) == ("Before.\n", [("Bash", {"command": "pytest"})])


def test_truncated_call_parses_with_a_cut_value() -> None:
    """A turn cut off by max_tokens: no </tool_call>, so the whole text is searched."""
    text = (
        "Writing it.\n<tool_call>\n<function=Write>\n<parameter=file_path>\n/a.py\n</parameter>\n"
    )
    text += "<parameter=content>\nimport os\ndef ma"
    content, calls = parse_tool_calls(text, TOOLS)
    assert content == "Writing it.\n"
    assert calls == [("Write", {"file_path": "/a.py", "content": "import os\ndef ma"})]


def test_parameter_ends_at_next_parameter_or_function_end() -> None:
    text = (
        "<tool_call>\n<function=Read>\n<parameter=file_path>\n/a\n"
        "<parameter=offset>\n5\n</function>\n</tool_call>"
    )
    assert parse_tool_calls(text, TOOLS)[1] == [("Read", {"file_path": "/a", "offset": 5})]


def test_closed_blocks_win_over_a_trailing_truncated_one() -> None:
    text = call("Bash", command="ls") + "\n<tool_call>\n<function=Bash>\n<parameter=command>\nrm"
    assert parse_tool_calls(text, TOOLS)[1] == [("Bash", {"command": "ls"})]


def test_function_without_tool_call_tag_is_not_parsed() -> None:
    """SGLang only looks for calls when `<tool_call>` is in the text."""
    text = "<function=Bash>\n<parameter=command>\nls\n</parameter>\n</function>"
    assert parse_tool_calls(text, TOOLS) == (text, [])


def test_marker_without_function_gives_no_call() -> None:
    text = "Thinking about <tool_call> syntax."
    assert parse_tool_calls(text, TOOLS) == ("Thinking about ", [])


def test_two_functions_in_one_block() -> None:
    text = (
        "<tool_call>\n<function=Bash>\n<parameter=command>\nls\n</parameter>\n</function>\n"
        "<function=Glob>\n<parameter=pattern>\n*.py\n</parameter>\n</function>\n</tool_call>"
    )
    assert parse_tool_calls(text, TOOLS)[1] == [
        ("Bash", {"command": "ls"}),
        ("Glob", {"pattern": "*.py"}),
    ]


def test_round_trip_of_the_scripted_servers_xml() -> None:
    args = {"file_path": "/a", "old_string": "a\nb", "new_string": "ü", "replace_all": False}
    assert parse_tool_calls(call_xml("Edit", args), TOOLS)[1] == [("Edit", args)]


# -- split_reasoning -------------------------------------------------------------------------


def test_split_at_the_first_think_end() -> None:
    text = "Plan it.\n</think>\n\nDone. Literal </think> later."
    assert split_reasoning(text) == ("Plan it.\n", "\n\nDone. Literal </think> later.")


def test_leading_think_tags_are_removed() -> None:
    assert split_reasoning("<think><think>\nhm\n</think>\n\nok") == ("\nhm\n", "\n\nok")


def test_tool_call_closes_reasoning_implicitly() -> None:
    text = "I should list files.\n<tool_call>\n<function=Bash>"
    assert split_reasoning(text) == ("I should list files.\n", "<tool_call>\n<function=Bash>")
    assert split_reasoning(text, implicit_close=False) == (None, text)


def test_opened_but_unclosed_thought_is_all_reasoning() -> None:
    assert split_reasoning("<think>\nstill thinking ab") == ("\nstill thinking ab", "")


def test_no_markers_is_content() -> None:
    assert split_reasoning("Just an answer.") == (None, "Just an answer.")
