"""The agent loop: its logic against the in-process ScriptedModel (fast, no server), and end
to end against the scripted model server over HTTP, with the real tools in a real sandbox."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from frognano.agent import prompts
from frognano.agent.loop import AgentLimits, AgentLoop, AgentResult, StopReason
from frognano.agent.loop_types import ChatModel, ToolRunner
from frognano.agent.model import ModelClient, RetryPolicy
from frognano.agent.scripted import ScriptedModel, ScriptedTurn
from frognano.agent.tools.box import ToolBox
from frognano.agent.tools.schema import TOOL_DEFINITIONS, TOOLS_JSON
from frognano.agent.trajectory import TrajectoryWriter, read_events
from frognano.agent.turns import ToolCall, ToolResult
from frognano.sandbox.local import LocalSandbox
from tests.agent.chat_template import render
from tests.fakes.model_server import ScriptedModelServer, Turn

CALC = b"def mean(xs):\n    return sum(xs) / len(xs)\n"
TEST = b"import pytest\nfrom calc import mean\n\ndef test_empty():\n    with pytest.raises(ValueError):\n        mean([])\n"  # noqa: E501
FAST_RETRY = RetryPolicy(attempts=2, initial_delay=0.01, max_delay=0.01, budget_seconds=2)


@pytest.fixture
async def box(default_sandbox: LocalSandbox) -> LocalSandbox:
    await default_sandbox.write_file("/workspace/calc.py", CALC)
    await default_sandbox.write_file("/workspace/test_calc.py", TEST)
    return default_sandbox


def client(server: ScriptedModelServer, **kwargs: Any) -> ModelClient:
    return ModelClient(
        base_url=server.base_url,
        model="frognano",
        api_key=None,
        tools_json=TOOLS_JSON,
        tool_definitions=TOOL_DEFINITIONS,
        retry=kwargs.pop("retry", FAST_RETRY),
        **kwargs,
    )


async def run_loop(
    model: ChatModel, tools: ToolRunner, tmp_path: Path, limits: AgentLimits | None = None
) -> tuple[AgentResult, list[dict[str, Any]]]:
    path = tmp_path / "trajectory.jsonl"
    with TrajectoryWriter(path) as trajectory:
        loop = AgentLoop(
            model,
            tools,
            title="mean([]) crashes",
            body="mean([]) raises ZeroDivisionError; it should raise ValueError.",
            limits=limits,
            trajectory=trajectory,
            marker="m4rk3r",
        )
        result = await loop.run()
    return result, read_events(path).events


async def run(
    server: ScriptedModelServer,
    box: LocalSandbox,
    tmp_path: Path,
    limits: AgentLimits | None = None,
) -> tuple[AgentResult, list[dict[str, Any]]]:
    async with client(server) as model:
        return await run_loop(model, ToolBox(box), tmp_path, limits)


class Tools:
    """A ToolRunner that records each call and answers it with its name and arguments: the
    loop's own logic needs no sandbox."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []

    async def call(self, call: ToolCall) -> ToolResult:
        self.calls.append(call)
        return ToolResult(f"ran {call.name} {call.arguments}")


def sent(model: ScriptedModel) -> list[list[dict[str, Any]]]:
    """The messages of each request the loop made."""
    return [request.messages for request in model.requests]


def as_request(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A chat-completions body for the template, as ModelClient would send these messages."""
    return {
        "messages": messages,
        "tools": TOOL_DEFINITIONS,
        "chat_template_kwargs": {"enable_thinking": True},
    }


FIX_SCRIPT = [
    Turn(reasoning="Find the code.", calls=[("Glob", {"pattern": "**/*.py"})]),
    Turn(reasoning="Read it.", content="Reading calc.py.",
         calls=[("Read", {"file_path": "/workspace/calc.py"})]),
    Turn(reasoning="Guard the empty case.", calls=[("Edit", {
        "file_path": "/workspace/calc.py",
        "old_string": "    return sum(xs) / len(xs)",
        "new_string": "    if not xs:\n        raise ValueError(\"mean() of an empty list\")\n"
                      "    return sum(xs) / len(xs)",
        "replace_all": False,
    })]),
    Turn(reasoning="Run the tests.", calls=[("Bash", {
        "command": "python -m pytest -q -p no:cacheprovider", "timeout": 60000,
        "description": "run tests",
    })]),
    Turn(reasoning="Done.", content="mean() now raises ValueError on an empty list; tests pass."),
]  # fmt: skip


# -- end to end: the scripted model server over HTTP, the real tools in a sandbox ------------


async def test_a_scripted_fix_completes(box: LocalSandbox, tmp_path: Path) -> None:
    with ScriptedModelServer(FIX_SCRIPT) as server:
        result, events = await run(server, box, tmp_path)
        requests = server.requests
    assert result.stop_reason is StopReason.COMPLETED
    assert result.summary == "mean() now raises ValueError on an empty list; tests pass."
    assert result.stats.steps == 5
    assert result.stats.tool_calls == 4
    assert result.stats.tool_errors == 0
    assert result.stats.tools_used == {"Glob": 1, "Read": 1, "Edit": 1, "Bash": 1}
    assert result.stats.cache_reported
    assert result.stats.cached_tokens > 0
    assert (await box.read_file("/workspace/calc.py")).startswith(b"def mean(xs):\n    if not xs:")
    # The system prompt is fixed and first; the task is the only user message.
    first = requests[0]["messages"]
    assert first[0] == {"role": "system", "content": prompts.SYSTEM_PROMPT}
    assert [m["role"] for m in first] == ["system", "user"]
    assert "<<<ISSUE m4rk3r>>>\nTitle: mean([]) crashes\n\nmean([]) raises" in first[1]["content"]
    tool_results = [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_results[0].splitlines() == ["/workspace/calc.py", "/workspace/test_calc.py"] or (
        sorted(tool_results[0].splitlines()) == ["/workspace/calc.py", "/workspace/test_calc.py"]
    )
    assert tool_results[1].startswith("     1\tdef mean(xs):")
    assert "1 passed" in tool_results[3]
    kinds = [event["event"] for event in events]
    assert kinds[0] == "run_start"
    assert kinds[-1] == "run_end"
    assert kinds.count("assistant") == 5
    assert kinds.count("tool") == 4
    assert events[-1]["stop_reason"] == "completed"


async def test_requests_only_ever_append(box: LocalSandbox, tmp_path: Path) -> None:
    """Each request's messages and tools are an exact prefix of the next one's, byte for byte,
    and every sampling value is sent each time."""
    with ScriptedModelServer(FIX_SCRIPT) as server:
        await run(server, box, tmp_path)
        raw = server.raw_requests
        requests = server.requests
    assert len(raw) == 5
    for earlier, later in itertools.pairwise(raw):
        early_messages = _messages_bytes(earlier)
        assert _messages_bytes(later).startswith(early_messages[:-1])  # drop the closing "]"
        assert _tools_bytes(earlier) == _tools_bytes(later) == TOOLS_JSON
    for request in requests:
        assert request["max_tokens"] == 8192
        assert (request["temperature"], request["top_p"], request["top_k"]) == (0.6, 0.95, 20)
        assert request["chat_template_kwargs"] == {"enable_thinking": True}


async def test_the_template_shows_each_turn_as_generated(box: LocalSandbox, tmp_path: Path) -> None:
    """Rendered with the Qwen3.5 template, every assistant turn reads exactly as the model
    generated it (reasoning, content and calls, `false` in lower case), and no earlier part of
    the prompt changes as the run grows."""
    with ScriptedModelServer(FIX_SCRIPT) as server:
        await run(server, box, tmp_path)
        requests = server.requests
        generated = [server.generated_text(index) for index in range(5)]
    prompts_seen = [render(request, add_generation_prompt=False) for request in requests]
    for earlier, later in itertools.pairwise(prompts_seen):
        assert later.startswith(earlier)
    final = prompts_seen[-1]
    for text in generated[:-1]:
        assert f"<|im_start|>assistant\n<think>\n{text}<|im_end|>" in final
    assert "<parameter=replace_all>\nfalse\n</parameter>" in final
    assert final.count("<|im_start|>user") == 5  # the task, then one per turn of results


async def test_calls_left_in_content_are_run(box: LocalSandbox, tmp_path: Path) -> None:
    script = [
        Turn(reasoning="Look.", calls=[("Bash", {"command": "echo hi from xml"})],
             xml_in_content=True),
        Turn(content="Done."),
    ]  # fmt: skip
    with ScriptedModelServer(script) as server:
        result, events = await run(server, box, tmp_path)
        requests = server.requests
        generated = server.generated_text(0)
    assert result.stop_reason is StopReason.COMPLETED
    assert [e["result"] for e in events if e["event"] == "tool"] == ["hi from xml"]
    assert f"<|im_start|>assistant\n<think>\n{generated}<|im_end|>" in render(requests[-1])


async def test_server_context_overflow_compacts(box: LocalSandbox, tmp_path: Path) -> None:
    overflow = Turn(
        status=400,
        body=json.dumps({"object": "error", "message": "The input (140000 tokens) is longer "
                         "than the model's context length (131072 tokens).", "type":
                         "BadRequestError", "code": 400}).encode(),
    )  # fmt: skip
    script = [
        Turn(calls=[("Bash", {"command": "echo one"})]),
        overflow,
        Turn(content="I ran echo one."),  # summary
        Turn(content="Finished."),
    ]
    with ScriptedModelServer(script) as server:
        result, _ = await run(server, box, tmp_path)
    assert result.stop_reason is StopReason.COMPLETED
    assert result.stats.compactions == 1
    assert result.summary == "Finished."


async def test_model_down_is_a_model_error(box: LocalSandbox, tmp_path: Path) -> None:
    with ScriptedModelServer([Turn(status=503), Turn(status=503)]) as server:
        result, _ = await run(server, box, tmp_path)
    assert result.stop_reason is StopReason.MODEL_ERROR
    assert "503" in result.detail


async def test_calls_of_a_reply_the_server_aborted_are_never_run(
    box: LocalSandbox, tmp_path: Path
) -> None:
    """SGLang aborted the reply in the middle of a Write: the parsed call carries a cut-off
    content. Running it would overwrite the file with half of it."""
    cut = Turn(
        reasoning="Rewrite it.",
        calls=[("Write", {"file_path": "/workspace/calc.py", "content": "def mean(xs):\n    if"})],
        finish_reason="abort",
    )
    read = Turn(reasoning="Read it.", calls=[("Read", {"file_path": "/workspace/calc.py"})])
    with ScriptedModelServer([read, cut, Turn(content="Stopping here.")]) as server:
        result, events = await run(server, box, tmp_path)
        requests = server.requests
    assert await box.read_file("/workspace/calc.py") == CALC
    assert result.stop_reason is StopReason.COMPLETED
    assert result.stats.tools_used == {"Read": 1}
    refused = [m for m in requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert refused["content"] == prompts.ABORTED_TURN
    assert "aborted" in refused["content"]
    assert [e["executed"] for e in events if e["event"] == "tool"] == [True, False]


# -- the loop's own logic: the in-process ScriptedModel ----------------------------------------


async def test_a_truncated_turn_is_never_executed(tmp_path: Path) -> None:
    cut = ScriptedTurn(
        reasoning="Write it all.",
        calls=[("Write", {"file_path": "/workspace/new.py", "content": "x = (1,\n"})],
        finish_reason="length",
    )
    stop = ScriptedTurn(reasoning="Too long, so stop.", finish_reason="length")
    model = ScriptedModel([cut, stop, ScriptedTurn("ok")])
    tools = Tools()
    result, events = await run_loop(model, tools, tmp_path)
    assert result.stop_reason is StopReason.COMPLETED
    assert result.stats.truncated_turns == 2
    assert result.stats.tool_calls == 0
    assert tools.calls == []
    results = [m for m in sent(model)[-1] if m["role"] == "tool"]
    assert len(results) == 2
    assert all("cut off at the limit of 8192 tokens" in m["content"] for m in results)
    assert [e["executed"] for e in events if e["event"] == "tool"] == [False, False]
    # Still one user query: the reasoning of every turn stays in the rendered prompt.
    assert "Too long, so stop." in render(as_request(sent(model)[-1]))


async def test_three_truncated_turns_end_the_run(tmp_path: Path) -> None:
    model = ScriptedModel([ScriptedTurn(reasoning="...", finish_reason="length")] * 3)
    result, _ = await run_loop(model, Tools(), tmp_path)
    assert result.stop_reason is StopReason.MODEL_ERROR
    assert result.detail == "3 replies in a row were cut off at 8192 tokens"


async def test_three_aborted_calls_end_the_run_none_of_them_run(tmp_path: Path) -> None:
    write = ("Write", {"file_path": "/workspace/calc.py", "content": "def"})
    model = ScriptedModel([ScriptedTurn(calls=[write], finish_reason="abort")] * 3)
    tools = Tools()
    result, _ = await run_loop(model, tools, tmp_path)
    assert tools.calls == []
    assert result.stop_reason is StopReason.MODEL_ERROR
    assert result.detail == (
        "3 replies in a row were cut off at 8192 tokens or aborted by the server"
    )
    assert (result.stats.truncated_turns, result.stats.format_reminders) == (0, 0)


async def test_an_empty_reply_gets_a_format_reminder_not_completion(tmp_path: Path) -> None:
    """What real SGLang answers for a call it cannot parse (a Hermes-style JSON call): the
    marker and everything after it dropped, content "\n\n", finish `stop`. That is not an
    answer: the model is told, in a user turn, and the run goes on."""
    model = ScriptedModel(
        [
            ScriptedTurn("\n\n", reasoning="Call it."),
            ScriptedTurn("partial", reasoning="Server trouble.", finish_reason="abort"),
            ScriptedTurn(calls=[("Read", {"file_path": "/workspace/calc.py"})]),
            ScriptedTurn("Read it; nothing to change."),
        ]
    )
    result, events = await run_loop(model, Tools(), tmp_path)
    requests = sent(model)
    assert result.stop_reason is StopReason.COMPLETED
    assert result.summary == "Read it; nothing to change."
    assert result.stats.format_reminders == 2
    assert result.stats.tool_calls == 1
    users = [m["content"] for m in requests[-1] if m["role"] == "user"]
    assert users[1:] == [prompts.FORMAT_REMINDER, prompts.FORMAT_REMINDER]
    # Append-only: each request's history is a prefix of the next one's.
    for earlier, later in itertools.pairwise(requests):
        assert later[: len(earlier)] == earlier
    assert [e["finish_reason"] for e in events if e["event"] == "assistant"][:2] == [
        "stop",
        "abort",
    ]


async def test_replies_that_keep_failing_end_as_no_answer(tmp_path: Path) -> None:
    model = ScriptedModel(
        [ScriptedTurn("  "), ScriptedTurn(""), ScriptedTurn("\n", finish_reason="abort")]
    )
    result, _ = await run_loop(model, Tools(), tmp_path)
    assert result.stop_reason is StopReason.NO_ANSWER
    assert result.detail == (
        "3 replies in a row had neither a tool call the server could parse nor an answer "
        "(the server aborted them)"
    )
    assert result.stats.format_reminders == 2  # the third reply ended the run: no reminder
    assert len(model.requests) == 3


async def test_calls_run_in_order_with_one_result_each(tmp_path: Path) -> None:
    """The template pairs results with calls by position, so each call gets its result, in
    the order of the calls; the budget note rides only on the last."""
    calls = [("Glob", {"pattern": "*.py"}), ("Read", {"file_path": "/workspace/a.py"}),
             ("Bash", {"command": "true"})]  # fmt: skip
    model = ScriptedModel([ScriptedTurn(calls=calls), ScriptedTurn("Done.")])
    tools = Tools()
    result, events = await run_loop(model, tools, tmp_path, AgentLimits(max_steps=3))
    assert result.stop_reason is StopReason.COMPLETED
    assert [call.name for call in tools.calls] == ["Glob", "Read", "Bash"]
    history = sent(model)[-1]
    ids = [call["id"] for call in history[2]["tool_calls"]]
    results = history[3:]
    assert [m["tool_call_id"] for m in results] == ids == ["call_1_1", "call_1_2", "call_1_3"]
    for message, (name, _) in zip(results, calls, strict=True):
        assert message["content"].startswith(f"ran {name} ")
    assert ["[FrogNano:" in m["content"] for m in results] == [False, False, True]
    assert [e["call_id"] for e in events if e["event"] == "tool"] == ids


async def test_bad_calls_become_error_results(box: LocalSandbox, tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ScriptedTurn(calls=[("Delete", {"file_path": "/workspace/calc.py"}),
                                ("Read", {"path": "/workspace/calc.py"}),
                                ("Read", {"file_path": "calc.py"})]),
            ScriptedTurn("Giving up."),
        ]
    )  # fmt: skip
    result, _ = await run_loop(model, ToolBox(box), tmp_path)
    assert result.stop_reason is StopReason.COMPLETED
    assert result.stats.tool_errors == 3
    results = [m["content"] for m in sent(model)[-1] if m["role"] == "tool"]
    assert results[0].startswith("<tool_use_error>Error: No such tool available: Delete")
    assert results[1].startswith("<tool_use_error>InputValidationError: ")
    assert "file_path" in results[1]
    assert results[2].startswith("<tool_use_error>")
    assert await box.read_file("/workspace/calc.py") == CALC


async def test_step_limit_and_budget_notes(tmp_path: Path) -> None:
    # Exactly three turns: a fourth request would end the run as model_error instead.
    model = ScriptedModel([ScriptedTurn(calls=[("Bash", {"command": "true"})])] * 3)
    result, _ = await run_loop(model, Tools(), tmp_path, AgentLimits(max_steps=3))
    assert result.stop_reason is StopReason.STEP_LIMIT
    assert result.detail == "the limit of 3 steps was reached"
    assert result.stats.steps == 3
    assert len(model.requests) == 3
    last_result = sent(model)[-1][-1]["content"]
    assert "[FrogNano: 1 tool-using steps left" in last_result


async def test_time_limit(tmp_path: Path) -> None:
    model = ScriptedModel([ScriptedTurn("late", delay=3.0)])
    result, events = await run_loop(model, Tools(), tmp_path, AgentLimits(time_limit_seconds=0.5))
    assert result.stop_reason is StopReason.TIME_LIMIT
    assert events[-1]["stop_reason"] == "time_limit"


async def test_compaction_once_then_context_limit(tmp_path: Path) -> None:
    limits = AgentLimits(context_tokens=4000, max_tokens_per_turn=1000, keep_turns=1)
    big = 3000  # over the threshold of 4000 - 1000 - 125
    model = ScriptedModel(
        [
            ScriptedTurn(calls=[("Bash", {"command": "echo one"})], prompt_tokens=big),
            ScriptedTurn("Summary: ran echo one. Next: run echo two."),  # the summary request
            ScriptedTurn(calls=[("Bash", {"command": "echo two"})], prompt_tokens=500),
            ScriptedTurn(calls=[("Bash", {"command": "echo three"})], prompt_tokens=big),
        ]
    )
    result, events = await run_loop(model, Tools(), tmp_path, limits)
    requests = sent(model)
    assert result.stop_reason is StopReason.CONTEXT_LIMIT
    assert result.detail.endswith("after compacting once")
    assert result.stats.compactions == 1
    summary_request = requests[1]
    assert summary_request[-1] == {"role": "user", "content": prompts.SUMMARY_REQUEST}
    after = requests[2]
    assert [m["role"] for m in after] == ["system", "user", "assistant", "tool"]
    assert "Summary: ran echo one." in after[1]["content"]
    assert after[1]["content"].startswith(requests[0][1]["content"])
    assert after[3]["content"] == 'ran Bash {"command": "echo one"}'
    compaction = next(e for e in events if e["event"] == "compaction")
    assert compaction["kept_messages"] == 2


async def test_a_dead_sandbox_ends_the_run(box: LocalSandbox, tmp_path: Path) -> None:
    await box.close()
    model = ScriptedModel([ScriptedTurn(calls=[("Bash", {"command": "true"})])])
    result, _ = await run_loop(model, ToolBox(box), tmp_path)
    assert result.stop_reason is StopReason.SANDBOX_ERROR
    assert result.detail.startswith("the sandbox failed: ")


async def test_cancellation_is_recorded(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    model = ScriptedModel([ScriptedTurn("slow", delay=5.0)])
    with TrajectoryWriter(path) as trajectory:
        loop = AgentLoop(model, Tools(), title="t", body="b", trajectory=trajectory)
        task = asyncio.create_task(loop.run())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert loop.result is not None
    assert loop.result.stop_reason is StopReason.CANCELLED
    assert read_events(path).events[-1]["stop_reason"] == "cancelled"


def _messages_bytes(body: bytes) -> bytes:
    start = body.index(b'"messages":') + len(b'"messages":')
    end = body.index(b',"tools":')
    return body[start:end]


def _tools_bytes(body: bytes) -> bytes:
    start = body.index(b'"tools":') + len(b'"tools":')
    return body[start : start + len(TOOLS_JSON)]
