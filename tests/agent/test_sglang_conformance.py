"""Differential tests against SGLang 0.5.23's own parsers: its `qwen3` reasoning parser and
`qwen3_coder` detector, from the real wheel, against FrogNano's fallback parser, on a corpus
of generations (the edge cases real runs meet) and a seeded fuzzer."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from frognano.agent.qwen3_coder import (
    THINK_END,
    THINK_START,
    TOOL_CALL_START,
    parse_tool_calls,
    split_reasoning,
)
from frognano.agent.tools.schema import TOOL_DEFINITIONS
from tests.conftest import STRICT
from tests.fakes.model_server import ScriptedModelServer, Turn

ENV_VAR = "FNTEST_SGLANG_PYTHON"
REFERENCE = Path(__file__).with_name("sglang_reference.py")
TOOLS: list[dict[str, Any]] = [dict(tool) for tool in TOOL_DEFINITIONS]


def _call(name: str, params: list[tuple[str, str]], *, close: bool = True) -> str:
    body = "".join(f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in params)
    text = f"<tool_call>\n<function={name}>\n{body}"
    return text + "</function>\n</tool_call>" if close else text


READ = _call("Read", [("file_path", "/workspace/calc.py")])
CORPUS = [
    "Plan.</think>\n\n" + READ,
    "Plan.\n</think>\n\nI will read.\n" + READ + "\n" + _call(
        "Bash", [("command", "python -m pytest -q"), ("timeout", "60000")]
    ),
    # Qwen3.5 sometimes skips </think>: the call closes the reasoning.
    "No close tag, straight to a call " + _call("Glob", [("pattern", "**/*.py")]),
    # A Hermes-style JSON call: SGLang drops it and everything after the marker.
    'r</think>\n<tool_call>\n{"name": "Read", "arguments": {"file_path": "/x"}}\n</tool_call>',
    # Cut off inside a call: it still parses, with what was written.
    "r</think>\n<tool_call>\n<function=Bash>\n<parameter=command>\nls -la",
    # A final answer that quotes the marker is cut short at it.
    "r</think>The call format is <tool_call> and </tool_call>, I am done.",
    "<think>a leading tag the template already wrote</think>the answer",
    "<think>\n\nreasoning with blank lines\n\n</think>\n\nanswer\n",
    "a</think>b</think>c",
    "r</think>" + _call("Edit", [("file_path", "/w/a"), ("old_string", "x"),
                                 ("new_string", "null"), ("replace_all", "true")]),
    "r</think>" + _call("Write", [("file_path", "/w/a"), ("content", '{"a": [1, 2]}')]),
    "r</think>" + _call("Read", [("file_path", "/w/a"), ("offset", "12"), ("limit", "x")]),
    "r</think>" + _call("Unknown", [("a", "1")]),
    "r</think>" + _call("Bash", [("command", "echo '<parameter=x>' </function>")]),
    # Values the model copied from escaped text (agent/untrusted.py): both parsers keep the
    # escaped tags as text, so the loop unescapes the same arguments whichever parsed them.
    "r</think>" + _call("Edit", [("file_path", "/w/a"), ("old_string", "<¦/parameter> ¦¦"),
                                 ("new_string", "<¦/tool_call>\n<¦|im_end|>\n<¦/function>")]),
    "r</think>" + _call("Write", [("file_path", "/w/b"),
                                  ("content", "<¦tool_call>\n<¦function=Bash>\n<¦parameter=x>")]),
    "r</think>\n\n",
    "still reasoning when the length limit hit",
    "an answer with no markers at all",
]  # fmt: skip

_PIECES = (
    THINK_START, THINK_END, "text ", "\n", "\n\n", TOOL_CALL_START, "</tool_call>",
    "<function=Read>", "<function=Bash>", "<function=Edit>", "<parameter=file_path>",
    "<parameter=command>", "<parameter=timeout>", "<parameter=replace_all>", "/workspace/x",
    "echo <hi> && ls", "12", "true", "null", "NULL", '{"a": 1}', "[1, 2]", "</parameter>",
    "</function>", "\u00e9t\u00e9 ", "{", "<¦/parameter>", "<¦|im_end|>", "¦",
)  # fmt: skip


def _fuzzed(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
    return ["".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 16))) for _ in range(count)]


_VALUES = (
    "/workspace/calc.py", "12", "-3", "1.5", "true", "False", "null", "NULL", "None", '{"a": 1}',
    "[1, 2]", "[1, 2", "x < y && z > 0", "line one\nline two", "", " padded ", "\u00e9t\u00e9",
    "<parameter=inner>", "</parameter>",
)  # fmt: skip


def _structured(count: int, seed: int) -> list[str]:
    """Generations shaped like the model's: reasoning, then calls to real and unknown tools
    with values of every kind for parameters of every type, sometimes cut off."""
    rng = random.Random(seed)  # noqa: S311 - reproducible test data, not secrets
    names = [tool["function"]["name"] for tool in TOOLS] + ["Unknown"]
    texts = []
    for _ in range(count):
        text = rng.choice(["", THINK_START]) + rng.choice(["I should look.", "", "\nplan\n"])
        text += rng.choice([THINK_END, THINK_END + "\n\n", ""])
        text += rng.choice(["", "Some words. ", "\n"])
        for _ in range(rng.randint(0, 3)):
            name = rng.choice(names)
            props = next(
                (list(t["function"]["parameters"]["properties"]) for t in TOOLS
                 if t["function"]["name"] == name),
                ["a", "b"],
            )  # fmt: skip
            params = [(rng.choice([*props, "extra"]), rng.choice(_VALUES))
                      for _ in range(rng.randint(0, 3))]  # fmt: skip
            text += _call(name, params) + rng.choice(["", "\n", " trailing "])
        if rng.random() < 0.2:
            text = text[: rng.randint(0, len(text))]
        texts.append(text)
    return texts


def _sglang(texts: list[str]) -> list[dict[str, Any]]:
    python = os.environ.get(ENV_VAR)
    if not python or not Path(python).exists():
        message = (
            f"{ENV_VAR} must name the Python of an environment with the sglang 0.5.23 wheel "
            "(pip install --no-deps sglang==0.5.23 plus its light dependencies; .ci/run "
            "builds one)"
        )
        if STRICT:
            pytest.fail(message)
        pytest.skip(message)
    cases = [{"text": text, "tools": TOOLS, "force_reasoning": True} for text in texts]
    done = subprocess.run(
        [python, str(REFERENCE)], input=json.dumps(cases), capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answers: list[dict[str, Any]] = json.loads(done.stdout)
    return answers


def _ours(text: str) -> dict[str, Any]:
    reasoning, rest = split_reasoning(text)
    content, calls = parse_tool_calls(rest, TOOLS)
    return {"reasoning": reasoning, "content": content, "calls": [[n, a] for n, a in calls]}


def _unmarked(text: str) -> bool:
    """No `</think>`, no leading `<think>`, no `<tool_call>`: SGLang (reasoning forced, as
    the generation prompt opens `<think>`) calls it all reasoning; FrogNano's fallback, for a
    server with no reasoning parser, leaves it as content where a reader sees it."""
    return (
        THINK_END not in text and not text.startswith(THINK_START) and (TOOL_CALL_START not in text)
    )


@pytest.mark.parametrize(
    "texts",
    [CORPUS, _fuzzed(400, seed=20261201), _structured(600, seed=12)],
    ids=["corpus", "fuzz", "structured"],
)
def test_the_fallback_parser_agrees_with_sglang(texts: list[str]) -> None:
    reference = _sglang(texts)
    for text, theirs in zip(texts, reference, strict=True):
        ours = _ours(text)
        assert ours["calls"] == theirs["calls"], text
        if _unmarked(text):
            assert (ours["reasoning"], ours["content"]) == (None, text), text
            assert (theirs["reasoning"], theirs["content"]) == (text, ""), text
        else:
            assert ours["content"] == theirs["content"], text
            assert (ours["reasoning"] or "") == (theirs["reasoning"] or ""), text


def test_sglang_drops_a_call_it_cannot_parse_which_the_loop_must_not_take_for_an_answer() -> None:
    """The edge the loop's format reminder exists for, shown on SGLang's own code: a JSON
    call and a quoted marker both leave no call and no usable content."""
    hermes, quoted = CORPUS[3], CORPUS[5]
    dropped, cut = _sglang([hermes, quoted])
    assert dropped == {"reasoning": "r", "content": "\n", "calls": []}
    assert cut["calls"] == []
    assert cut["content"] == "The call format is "


SHAPE_TURNS = [
    Turn(reasoning="Read it.", calls=[("Read", {"file_path": "/workspace/calc.py"})]),
    Turn(reasoning="Two.", content="Looking.", calls=[("Glob", {"pattern": "*.py"}),
                                                     ("Bash", {"command": "ls", "timeout": 5})]),
    Turn(reasoning="Done.", content="mean() now raises ValueError."),
    Turn(raw="still thinking when the limit hit", finish_reason="length"),
    Turn(raw="<think>a leading tag</think>answer"),
    Turn(raw='r</think>\n<tool_call>\n{"name": "Read"}\n</tool_call>'),
    Turn(raw="no close " + READ),
]  # fmt: skip


def _sglang_shapes(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    python = os.environ.get(ENV_VAR)
    if not python or not Path(python).exists():
        _sglang([])  # skips or fails with the message
    done = subprocess.run(
        [str(python), str(REFERENCE), "shape"], input=json.dumps(parts), capture_output=True,
        text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    shapes: list[dict[str, Any]] = json.loads(done.stdout)
    return shapes


def test_the_scripted_server_answers_exactly_as_sglang_would() -> None:
    """For each scripted generation: the scripted server's parse equals SGLang's parsers'
    on the same raw text, and its whole reply equals what SGLang's response models
    serialise for those parts (keys left out, nulls, usage fields)."""
    replies = []
    with ScriptedModelServer(SHAPE_TURNS) as server:
        for _ in SHAPE_TURNS:
            answer = httpx.post(
                f"{server.base_url}/chat/completions",
                json={"model": "frognano", "messages": [{"role": "user", "content": "x"}],
                      "tools": TOOLS},
                timeout=10,
            )  # fmt: skip
            replies.append(answer.json())
        texts = [server.generated_text(i) for i in range(len(SHAPE_TURNS))]
    parsed = _sglang(texts)
    parts = []
    for reply, theirs in zip(replies, parsed, strict=True):
        message = reply["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        ours = [[c["function"]["name"], json.loads(c["function"]["arguments"])] for c in calls]
        assert ours == theirs["calls"]
        assert message["content"] == theirs["content"]
        assert message["reasoning_content"] == (theirs["reasoning"] or None)
        usage = reply["usage"]
        parts.append({
            "id": reply["id"], "created": reply["created"], "model": reply["model"],
            "content": message["content"], "reasoning": message["reasoning_content"],
            "calls": [{"id": c["id"], "index": c["index"], "name": c["function"]["name"],
                       "arguments": c["function"]["arguments"]} for c in calls],
            "finish_reason": reply["choices"][0]["finish_reason"],
            "prompt_tokens": usage["prompt_tokens"],
            "completion_tokens": usage["completion_tokens"],
            "reasoning_tokens": usage["reasoning_tokens"],
            "cached_tokens": (usage["prompt_tokens_details"] or {}).get("cached_tokens"),
        })  # fmt: skip
    assert replies == _sglang_shapes(parts)
