"""The in-process scripted model, and the docs' example of swapping the model and the tools."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from frognano.agent.scripted import ScriptedModel, ScriptedTurn
from frognano.agent.turns import Conversation, Usage
from frognano.errors import ContextOverflow, ModelResponseError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "agent.md"


def conversation(*contents: str) -> Conversation:
    history = Conversation()
    history.append({"role": "system", "content": "sys"})
    for content in contents:
        history.append({"role": "user", "content": content})
    return history


async def test_turns_come_back_in_order_then_the_script_runs_out() -> None:
    model = ScriptedModel([ScriptedTurn("one"), ScriptedTurn("  two\n")])
    history = conversation("task")
    assert (await model.complete(history)).content == "one"
    assert model.remaining == 1
    second = await model.complete(history, extra=[{"role": "user", "content": "sum up"}])
    assert second.content == "two"
    assert second.message == {"role": "assistant", "content": "  two\n"}  # echoed as written
    with pytest.raises(ModelResponseError, match="the script has only 2 turns"):
        await model.complete(history)
    assert [len(request.messages) for request in model.requests] == [2, 3]
    assert model.requests[1].messages[-1] == {"role": "user", "content": "sum up"}


async def test_calls_are_numbered_and_echoed_as_the_template_prints_them() -> None:
    turn = ScriptedTurn(
        reasoning="Edit, then look. ",
        calls=[("Edit", {"replace_all": False, "n": None}), ("Read", '{"file_path": oops')],
    )
    reply = await ScriptedModel([turn]).complete(conversation("task"))
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_1_1", "Edit", '{"replace_all": false, "n": null}'),
        ("call_1_2", "Read", '{"file_path": oops'),  # kept raw, for validation to report
    ]
    assert reply.finish_reason == "tool_calls"
    assert reply.reasoning == "Edit, then look."
    assert reply.message["reasoning_content"] == "Edit, then look. "
    echoed = [call["function"]["arguments"] for call in reply.message["tool_calls"]]
    assert echoed == ['{"replace_all":"false","n":"null"}', "{}"]


async def test_usage_is_deterministic_and_counts_a_shared_prefix_as_cached() -> None:
    async def run() -> list[Usage]:
        model = ScriptedModel([ScriptedTurn("a"), ScriptedTurn("b"), ScriptedTurn("c")])
        history = conversation("task")
        replies = [await model.complete(history)]
        history.append({"role": "user", "content": "more"})
        replies.append(await model.complete(history))
        replies.append(await model.complete(conversation("other")))
        return [reply.usage for reply in replies if reply.usage is not None]

    first, second, third = await run()
    assert await run() == [first, second, third]
    assert first.cached_tokens == 0
    assert second.prompt_tokens > first.prompt_tokens
    assert second.cached_tokens == first.prompt_tokens  # the history only grew
    assert third.cached_tokens == 0  # a different history shares no cached prefix
    assert first.completion_tokens == 1


async def test_a_turn_can_fail_or_set_the_prompt_size() -> None:
    model = ScriptedModel(
        [ScriptedTurn(raises=ContextOverflow("too long")), ScriptedTurn("ok", prompt_tokens=9)]
    )
    with pytest.raises(ContextOverflow):
        await model.complete(conversation("task"))
    reply = await model.complete(conversation("task"))
    assert reply.usage == Usage(prompt_tokens=9, completion_tokens=1, cached_tokens=0)
    assert len(model.requests) == 2  # a failed request is still recorded


def docs_example() -> str:
    text = DOCS.read_text(encoding="utf-8")
    found = re.search(
        r"<!-- test: tests/agent/test_scripted.py -->\n```python\n(.*?)\n```", text, re.DOTALL
    )
    assert found is not None, "docs/agent.md lost its runnable example"
    return found.group(1)


def test_the_docs_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(docs_example(), str(DOCS), "exec"), {"__name__": "__main__"})  # noqa: S102
    assert capsys.readouterr().out.startswith("2 steps; the model last saw: {'role': 'tool'")
