"""The model client against the scripted SGLang-like server, over real HTTP."""

from __future__ import annotations

import email.utils
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from frognano.agent.model import ModelClient, RetryPolicy
from frognano.agent.reply import echo_arguments
from frognano.agent.request import SamplingConfig
from frognano.agent.turns import AssistantTurn, Conversation
from frognano.errors import ContextOverflow, ModelResponseError, ModelUnavailable
from tests.agent.chat_template import GENERATION_PROMPT, last_assistant_turn, render
from tests.fakes.model_server import (
    _EXAMPLE_TOOLS_TEXT,
    EXAMPLE_TOOLS,
    EXAMPLE_TOOLS_JSON,
    MODEL_PATH,
    ScriptedModelServer,
    Turn,
)

# A sixth tool with the schema types the five do not use.
TUNE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "Tune",
        "description": "Tune things.",
        "parameters": {
            "type": "object",
            "properties": {
                "ratio": {"type": "number"},
                "opts": {"type": "object"},
                "items": {"type": "array"},
                "dry_run": {"type": "boolean"},
                "note": {"type": "string"},
            },
        },
    },
}
ALL_TOOLS = [*EXAMPLE_TOOLS, TUNE_TOOL]
ALL_TOOLS_JSON = json.dumps(ALL_TOOLS, ensure_ascii=False).encode()


class Clock:
    """A fake monotonic clock that the fake sleep advances."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make_client(
    srv_or_url: ScriptedModelServer | str,
    clock: Clock | None = None,
    *,
    tools: list[dict[str, Any]] = EXAMPLE_TOOLS,
    tools_json: bytes = EXAMPLE_TOOLS_JSON,
    **kwargs: Any,
) -> ModelClient:
    url = srv_or_url if isinstance(srv_or_url, str) else srv_or_url.base_url
    clock = clock or Clock()
    kwargs.setdefault("retry", RetryPolicy(attempts=4, initial_delay=1.0, max_delay=10.0))
    return ModelClient(
        base_url=url,
        model="frognano",
        api_key=kwargs.pop("api_key", None),
        tools_json=tools_json,
        tool_definitions=tools,
        sleep=clock.sleep,
        clock=clock,
        **kwargs,
    )


@pytest.fixture
async def client(server: ScriptedModelServer, clock: Clock) -> AsyncIterator[ModelClient]:
    async with make_client(server, clock) as model:
        yield model


def task() -> Conversation:
    conversation = Conversation()
    conversation.append({"role": "system", "content": "You are FrogNano."})
    conversation.append({"role": "user", "content": "Fix the failing test in /repo."})
    return conversation


def assert_echo_reproduces(
    model: ModelClient, server: ScriptedModelServer, conversation: Conversation, turn: AssistantTurn
) -> None:
    """The echoed message, rendered by the chat template as SGLang would, is exactly the
    generation prompt plus what the model generated."""
    conversation.append(turn.message)
    request = json.loads(model.request_body(conversation))
    rendered = last_assistant_turn(render(request, add_generation_prompt=False))
    index = (
        len([m for m in conversation.messages if m["role"] == "assistant"]) - 1
    )  # the n-th completed turn of this server
    assert rendered == GENERATION_PROMPT + server.generated_text(index) + "<|im_end|>"


# -- the request -----------------------------------------------------------------------------


async def test_body_carries_every_field_and_tools_byte_for_byte(
    server: ScriptedModelServer, clock: Clock
) -> None:
    """The tools go out as the exact bytes given (here with the spacing of harness.md)."""
    tools_text = _EXAMPLE_TOOLS_TEXT.strip().encode()
    server.push(Turn(content="ok"))
    async with make_client(server, clock, tools_json=tools_text, api_key="sekrit") as model:
        await model.complete(task())
    raw = server.raw_requests[0]
    assert b',"tools":' + tools_text + b',"max_tokens"' in raw
    body = server.requests[0]
    assert body["model"] == "frognano"
    assert body["messages"] == task().messages
    assert body["tools"] == EXAMPLE_TOOLS
    sampled = {k: body[k] for k in SamplingConfig.__dataclass_fields__ if k != "enable_thinking"}
    assert sampled == {
        "max_tokens": 8192,
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
        "min_p": 0.0,
        "presence_penalty": 0.0,
    }
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    assert body["stream"] is False
    assert server.request_headers[0]["authorization"] == "Bearer sekrit"
    assert server.request_headers[0]["content-type"] == "application/json"


async def test_custom_sampling_is_sent(server: ScriptedModelServer, clock: Clock) -> None:
    sampling = SamplingConfig(
        max_tokens=100, temperature=1.0, top_p=0.8, top_k=5, min_p=0.1, presence_penalty=1.5,
        enable_thinking=False,
    )  # fmt: skip
    server.push(Turn(content="ok"))
    async with make_client(server, clock, sampling=sampling) as model:
        await model.complete(task())
    body = server.requests[0]
    assert [body[k] for k in ("max_tokens", "temperature", "top_p", "top_k", "min_p")] == [
        100, 1.0, 0.8, 5, 0.1,
    ]  # fmt: skip
    assert body["presence_penalty"] == 1.5
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert server.request_headers[0]["authorization"] == "Bearer EMPTY"


async def test_same_conversation_same_bytes(
    server: ScriptedModelServer, client: ModelClient
) -> None:
    conversation = task()
    server.push(Turn(content="a"), Turn(content="b"))
    await client.complete(conversation)
    await client.complete(conversation)
    assert server.raw_requests[0] == server.raw_requests[1]
    assert server.raw_requests[0] == client.request_body(conversation)


async def test_extra_messages_are_sent_but_not_stored(
    server: ScriptedModelServer, client: ModelClient
) -> None:
    conversation = task()
    extra = {"role": "user", "content": "Summarise what you did — briefly."}
    server.push(Turn(content="Summary."))
    turn = await client.complete(conversation, extra=[extra], with_tools=False)
    assert turn.content == "Summary."
    assert server.requests[0]["messages"] == [*task().messages, extra]
    assert "tools" not in server.requests[0]
    assert len(conversation) == 2
    assert "Summarise what you did — briefly." in server.raw_requests[0].decode()  # not \u-escaped


# -- the reply -------------------------------------------------------------------------------


async def test_reasoning_content_calls_and_usage(
    server: ScriptedModelServer, client: ModelClient
) -> None:
    conversation = task()
    server.push(
        Turn(
            reasoning="The test imports a helper.",
            content="Let me look.",
            calls=[
                ("Read", {"file_path": "/repo/a.py", "offset": 10}),
                ("Bash", {"command": "ls"}),
            ],
            prompt_tokens=1200,
            cached_tokens=1000,
        )
    )
    turn = await client.complete(conversation)
    assert turn.reasoning == "The test imports a helper."
    assert turn.content == "Let me look."
    assert [(c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
        ("Read", {"file_path": "/repo/a.py", "offset": 10}),
        ("Bash", {"command": "ls"}),
    ]
    assert all(c.id.startswith("call_") for c in turn.tool_calls)
    assert turn.finish_reason == "tool_calls"
    assert not turn.truncated
    assert not turn.calls_from_content
    assert turn.usage is not None
    assert (turn.usage.prompt_tokens, turn.usage.cached_tokens) == (1200, 1000)
    assert turn.usage.completion_tokens > 0
    # The echo keeps the server's unstripped text; the template trims it.
    assert turn.message["content"] == "\n\nLet me look.\n\n"
    assert turn.message["reasoning_content"] == "The test imports a helper.\n"
    assert [c["id"] for c in turn.message["tool_calls"]] == [c.id for c in turn.tool_calls]
    assert_echo_reproduces(client, server, conversation, turn)


async def test_cached_tokens_follow_the_prefix(
    server: ScriptedModelServer, client: ModelClient
) -> None:
    conversation = task()
    server.push(Turn(calls=[("Bash", {"command": "ls"})]), Turn(content="Done."))
    first = await client.complete(conversation)
    conversation.append(first.message)
    conversation.append({"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "a"})
    second = await client.complete(conversation)
    assert first.usage is not None
    assert second.usage is not None
    assert first.usage.cached_tokens == 0
    assert second.usage.cached_tokens == first.usage.prompt_tokens
    assert second.usage.prompt_tokens > first.usage.prompt_tokens


async def test_no_cache_report_gives_none(clock: Clock) -> None:
    with ScriptedModelServer([Turn(content="hi")], cache_report=False) as srv:
        async with make_client(srv, clock) as model:
            turn = await model.complete(task())
    assert turn.usage is not None
    assert turn.usage.cached_tokens is None


async def test_content_only_turn(server: ScriptedModelServer, client: ModelClient) -> None:
    conversation = task()
    server.push(Turn(reasoning="All green.", content="The fix is in place."))
    turn = await client.complete(conversation)
    assert (turn.content, turn.tool_calls, turn.finish_reason) == (
        "The fix is in place.",
        (),
        "stop",
    )
    assert "tool_calls" not in turn.message
    assert_echo_reproduces(client, server, conversation, turn)


async def test_calls_only_turn(server: ScriptedModelServer, client: ModelClient) -> None:
    conversation = task()
    server.push(Turn(reasoning="Look around.", calls=[("Glob", {"pattern": "**/*.py"})]))
    turn = await client.complete(conversation)
    assert turn.content == ""
    assert turn.message["content"] == "\n\n"
    assert_echo_reproduces(client, server, conversation, turn)


async def test_echo_turns_booleans_and_null_into_the_models_text(
    server: ScriptedModelServer, client: ModelClient
) -> None:
    conversation = task()
    edit = {"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": True}
    edit_false = {**edit, "replace_all": False}
    server.push(
        Turn(
            reasoning="Replace.",
            calls=[("Edit", edit), ("Edit", edit_false), ("Glob", {"pattern": "*", "path": None})],
        )
    )
    turn = await client.complete(conversation)
    assert [json.loads(c.arguments) for c in turn.tool_calls] == [
        edit,
        edit_false,
        {"pattern": "*", "path": None},
    ]
    echoed = [json.loads(c["function"]["arguments"]) for c in turn.message["tool_calls"]]
    assert echoed[0]["replace_all"] == "true"
    assert echoed[1]["replace_all"] == "false"
    assert echoed[2]["path"] == "null"
    assert_echo_reproduces(client, server, conversation, turn)


async def test_echo_keeps_numbers_objects_and_arrays(clock: Clock) -> None:
    args = {
        "ratio": 0.25,
        "opts": {"depth": 2, "names": ["a", "ü"], "on": True},
        "items": [1, None, "x"],
        "dry_run": False,
        "note": "multi\nline",
    }
    with ScriptedModelServer(
        [Turn(reasoning="Tune.", content="Tuning.", calls=[("Tune", args)])]
    ) as srv:
        async with make_client(srv, clock, tools=ALL_TOOLS, tools_json=ALL_TOOLS_JSON) as model:
            conversation = task()
            turn = await model.complete(conversation)
            assert json.loads(turn.tool_calls[0].arguments) == args
            echoed = json.loads(turn.message["tool_calls"][0]["function"]["arguments"])
            assert echoed["opts"] == args["opts"]  # nested values stay JSON (tojson)
            assert echoed["dry_run"] == "false"
            assert_echo_reproduces(model, srv, conversation, turn)


async def test_xml_in_content_fallback(server: ScriptedModelServer, client: ModelClient) -> None:
    conversation = task()
    edit = {"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": True}
    server.push(
        Turn(
            reasoning="Edit it.",
            content="Editing.",
            calls=[("Edit", edit), ("Read", {"file_path": "/a", "limit": 5})],
            xml_in_content=True,
        )
    )
    turn = await client.complete(conversation)
    assert turn.calls_from_content
    assert turn.content == "Editing."
    assert turn.reasoning == "Edit it."
    assert [(c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
        ("Edit", edit),
        ("Read", {"file_path": "/a", "limit": 5}),
    ]
    assert all(c.id.startswith("call_") for c in turn.tool_calls)
    assert len({c.id for c in turn.tool_calls}) == 2
    assert "tool_calls" not in turn.message
    assert "<tool_call>" in turn.message["content"]
    assert turn.finish_reason == "stop"  # what a server without a tool parser says
    assert_echo_reproduces(client, server, conversation, turn)


async def test_think_in_content_fallback(server: ScriptedModelServer, client: ModelClient) -> None:
    conversation = task()
    server.push(
        Turn(
            reasoning="Think first.",
            content="Reading.",
            calls=[("Read", {"file_path": "/a"})],
            think_in_content=True,
        )
    )
    turn = await client.complete(conversation)
    assert (turn.reasoning, turn.content) == ("Think first.", "Reading.")
    assert "reasoning_content" not in turn.message
    assert "</think>" in turn.message["content"]
    assert [c.name for c in turn.tool_calls] == ["Read"]
    assert not turn.calls_from_content
    assert_echo_reproduces(client, server, conversation, turn)


async def test_no_parsers_at_all(server: ScriptedModelServer, client: ModelClient) -> None:
    conversation = task()
    server.push(
        Turn(
            reasoning="Plan.",
            content="Running.",
            calls=[("Bash", {"command": "pytest -x", "timeout": 60000})],
            think_in_content=True,
            xml_in_content=True,
        )
    )
    turn = await client.complete(conversation)
    assert (turn.reasoning, turn.content) == ("Plan.", "Running.")
    assert turn.calls_from_content
    assert json.loads(turn.tool_calls[0].arguments) == {"command": "pytest -x", "timeout": 60000}
    assert turn.message == {"role": "assistant", "content": server.generated_text(0)}
    assert_echo_reproduces(client, server, conversation, turn)


@pytest.mark.parametrize("thinking", [True, False])
async def test_tool_call_without_think_end_and_no_parsers(
    server: ScriptedModelServer, clock: Clock, thinking: bool
) -> None:
    """Qwen3.5 sometimes opens `<tool_call>` without closing `</think>`: with thinking on,
    the text before the call is reasoning, as SGLang's qwen3 parser decides."""
    text = "I should list.\n<tool_call>\n<function=Bash>\n<parameter=command>\nls\n</parameter>"
    text += "\n</function>\n</tool_call>"
    server.push(Turn(body=completion({"role": "assistant", "content": text})))
    sampling = SamplingConfig(enable_thinking=thinking)
    async with make_client(server, clock, sampling=sampling) as model:
        turn = await model.complete(task())
    assert [(c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
        ("Bash", {"command": "ls"})
    ]
    assert turn.calls_from_content
    if thinking:
        assert (turn.reasoning, turn.content) == ("I should list.", "")
    else:
        assert (turn.reasoning, turn.content) == (None, "I should list.")
    assert turn.message == {"role": "assistant", "content": text}


async def test_summary_request_does_not_parse_calls(
    server: ScriptedModelServer, client: ModelClient
) -> None:
    server.push(Turn(content="Summary.", calls=[("Bash", {"command": "ls"})], xml_in_content=True))
    turn = await client.complete(task(), with_tools=False)
    assert turn.tool_calls == ()
    assert not turn.calls_from_content


async def test_length_finish_is_truncated_and_keeps_the_calls(
    server: ScriptedModelServer, client: ModelClient
) -> None:
    server.push(
        Turn(
            reasoning="Write.",
            calls=[("Write", {"file_path": "/a", "content": "x"})],
            finish_reason="length",
        )
    )
    turn = await client.complete(task())
    assert turn.finish_reason == "length"
    assert turn.truncated
    assert [c.name for c in turn.tool_calls] == ["Write"]


def completion(message: dict[str, Any], **choice: Any) -> bytes:
    reply = {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls", **choice}],
    }
    return json.dumps(reply).encode()


async def test_arguments_that_are_not_an_object_echo_as_empty(
    server: ScriptedModelServer, client: ModelClient
) -> None:
    broken = '{"file_path": "/a", "content": "unterminated'
    calls = [
        {"id": "call_1", "type": "function", "function": {"name": "Write", "arguments": broken}},
        {"id": "call_2", "type": "function", "function": {"name": "Bash", "arguments": "[1]"}},
    ]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    server.push(Turn(body=completion(message)))
    turn = await client.complete(task())
    assert [c.arguments for c in turn.tool_calls] == [broken, "[1]"]
    assert [c["function"]["arguments"] for c in turn.message["tool_calls"]] == ["{}", "{}"]
    assert turn.message["content"] == ""  # null content echoes as ""
    assert "reasoning_content" not in turn.message
    assert turn.usage is None  # no usage in that reply


def test_echo_arguments_rules() -> None:
    assert echo_arguments('{"a": true, "b": false, "c": null, "d": 1.5, "e": "t"}') == (
        '{"a":"true","b":"false","c":"null","d":1.5,"e":"t"}'
    )
    assert echo_arguments('{"o": {"x": true}}') == '{"o":{"x":true}}'
    assert echo_arguments("not json") == "{}"
    assert echo_arguments('"a string"') == "{}"
    # SGLang parses the history with orjson, which reads integers past 64 bits as floats, so
    # the template would print 1.8446744073709552e+19; their digits print as written.
    big = '{"n": 18446744073709551616, "m": -9223372036854775809, "u": 18446744073709551615}'
    assert echo_arguments(big) == (
        '{"n":"18446744073709551616","m":"-9223372036854775809","u":18446744073709551615}'
    )


# -- errors and retries ----------------------------------------------------------------------


async def test_503_then_success_is_retried(
    server: ScriptedModelServer, client: ModelClient, clock: Clock
) -> None:
    server.push(Turn(status=503), Turn(content="back"))
    turn = await client.complete(task())
    assert turn.content == "back"
    assert len(server.requests) == 2
    assert len(clock.sleeps) == 1
    assert 0.5 <= clock.sleeps[0] <= 1.0  # initial_delay with jitter


async def test_backoff_doubles_up_to_the_cap(server: ScriptedModelServer, clock: Clock) -> None:
    policy = RetryPolicy(attempts=6, initial_delay=1.0, max_delay=5.0, budget_seconds=1000)
    server.push(*[Turn(status=502)] * 5, Turn(content="ok"))
    async with make_client(server, clock, retry=policy) as model:
        await model.complete(task())
    caps = [1.0, 2.0, 4.0, 5.0, 5.0]
    assert len(clock.sleeps) == 5
    for slept, cap in zip(clock.sleeps, caps, strict=True):
        assert cap / 2 <= slept <= cap


async def test_retry_after_seconds_is_honoured(
    server: ScriptedModelServer, client: ModelClient, clock: Clock
) -> None:
    server.push(Turn(status=429, headers={"Retry-After": "7"}), Turn(content="ok"))
    await client.complete(task())
    assert clock.sleeps == [7.0]


async def test_retry_after_date_is_capped(
    server: ScriptedModelServer, client: ModelClient, clock: Clock
) -> None:
    later = email.utils.formatdate(time.time() + 3600, usegmt=True)
    server.push(Turn(status=503, headers={"Retry-After": later}), Turn(content="ok"))
    await client.complete(task())
    assert clock.sleeps == [10.0]  # max_delay


async def test_persistent_5xx_ends_unavailable(
    server: ScriptedModelServer, client: ModelClient, clock: Clock
) -> None:
    """After `attempts` tries the error names the server, the cause and the setting."""
    server.push(*(Turn(status=500) for _ in range(4)))
    with pytest.raises(ModelUnavailable) as caught:
        await client.complete(task())
    assert len(server.requests) == 4
    assert len(clock.sleeps) == 3
    message = str(caught.value)
    assert server.base_url in message
    assert "scripted HTTP 500" in message
    assert "FROGNANO_MODEL_BASE_URL" in message


async def test_an_exhausted_script_fails_at_once(
    server: ScriptedModelServer, client: ModelClient, clock: Clock
) -> None:
    with pytest.raises(ModelResponseError, match="script exhausted"):
        await client.complete(task())
    assert clock.sleeps == []


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_connection_refused_ends_unavailable_within_the_budget(clock: Clock) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    policy = RetryPolicy(attempts=100, initial_delay=1.0, max_delay=30.0, budget_seconds=20.0)
    async with make_client(url, clock, retry=policy) as model:
        with pytest.raises(ModelUnavailable) as caught:
            await model.complete(task())
    assert 3 <= len(clock.sleeps) < 10
    assert sum(clock.sleeps) <= 20.0
    message = str(caught.value)
    assert url in message
    assert "connection" in message.lower()
    assert "FROGNANO_MODEL_BASE_URL" in message


async def test_timeout_is_retried(server: ScriptedModelServer, clock: Clock) -> None:
    server.push(Turn(content="slow", delay=1.0), Turn(content="fast"))
    async with make_client(server, clock, request_timeout=0.2) as model:
        turn = await model.complete(task())
    assert turn.content == "fast"
    assert len(clock.sleeps) == 1


def sglang_error(message: str, code: int) -> bytes:
    error = {"object": "error", "message": message, "type": "BadRequestError", "code": code}
    return json.dumps(error).encode()


@pytest.mark.parametrize(
    "message",
    [
        "The input (140000 tokens) is longer than the model's context length (131072 tokens).",
        "Requested token count exceeds the model's maximum context length of 131072 tokens. "
        "You requested a total of 139000 tokens: 130808 tokens from the input messages and "
        "8192 tokens for the completion.",
        "This model's maximum context length is 131072 tokens. However, you requested 140000 "
        "tokens.",
    ],
)
async def test_context_overflow_is_not_retried(
    server: ScriptedModelServer, client: ModelClient, clock: Clock, message: str
) -> None:
    server.push(Turn(status=400, body=sglang_error(message, 400)))
    with pytest.raises(ContextOverflow) as caught:
        await client.complete(task())
    assert message[:40] in str(caught.value)
    assert len(server.requests) == 1
    assert clock.sleeps == []


async def test_other_400_is_a_response_error(
    server: ScriptedModelServer, client: ModelClient
) -> None:
    server.push(
        Turn(
            status=400, body=sglang_error("Assistant tool call arguments must be valid JSON.", 400)
        )
    )
    with pytest.raises(ModelResponseError) as caught:
        await client.complete(task())
    assert not isinstance(caught.value, ContextOverflow)
    assert "must be valid JSON" in str(caught.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_errors_name_the_api_key_setting(
    server: ScriptedModelServer, client: ModelClient, status: int
) -> None:
    server.push(Turn(status=status, body=b'{"error": {"message": "Invalid API Key"}}'))
    with pytest.raises(ModelResponseError) as caught:
        await client.complete(task())
    assert "FROGNANO_MODEL_API_KEY" in str(caught.value)
    assert "Invalid API Key" in str(caught.value)
    assert len(server.requests) == 1


async def test_404_names_model_and_url_settings(
    server: ScriptedModelServer, client: ModelClient
) -> None:
    server.push(Turn(status=404, body=b'{"detail": "Not Found"}'))
    with pytest.raises(ModelResponseError) as caught:
        await client.complete(task())
    message = str(caught.value)
    assert "FROGNANO_MODEL_NAME" in message
    assert "/v1/models" in message
    assert "FROGNANO_MODEL_BASE_URL" in message


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>Bad gateway page served with 200</body></html>",
        b'{"object": "chat.completion", "choices": []}',
        b'{"choices": [{"message": "not an object"}]}',
        b'{"choices": [{"message": {"content": 5}}]}',
        b'{"choices": [{"message": {"content": "", "tool_calls": [{"function": {}}]}}]}',
        b"[]",
    ],
)
async def test_garbage_200_is_a_response_error(
    server: ScriptedModelServer, client: ModelClient, body: bytes
) -> None:
    server.push(Turn(body=body))
    with pytest.raises(ModelResponseError) as caught:
        await client.complete(task())
    assert "not a chat completion" in str(caught.value)
    assert len(server.requests) == 1


# -- check -----------------------------------------------------------------------------------


async def test_check_reads_the_model_list(client: ModelClient) -> None:
    info = await client.check()
    assert (info.model, info.max_model_len) == ("frognano", 131072)


async def test_check_learns_the_served_model_and_the_completion_names_it(
    server: ScriptedModelServer, client: ModelClient
) -> None:
    """The trajectory's run_info names the model: the `/v1/models` entry and SGLang's
    `/model_info` are asked once, at check; each turn keeps the reply's `model`."""
    info = await client.check()
    assert info.served == {
        "id": "frognano", "root": "frognano", "owned_by": "sglang", "max_model_len": 131072,
    }  # fmt: skip
    assert info.model_info["model_path"] == MODEL_PATH
    assert client.describe() == {"kind": "server", "name": "frognano", **info.to_json()}
    assert "127.0.0.1" not in json.dumps(client.describe())  # the address stays out
    server.push(Turn(content="Done."))
    turn = await client.complete(task())
    assert turn.model == "frognano"
    assert turn.record()["model"] == "frognano"
    assert len(server.requests) == 1  # the completion asked nothing else


async def test_check_without_model_info_still_passes(clock: Clock) -> None:
    with ScriptedModelServer(model_path=None) as srv:
        async with make_client(srv, clock) as model:
            info = await model.check()
    assert info.model_info == {}
    assert info.served["id"] == "frognano"


async def test_a_server_slow_to_say_its_identity_does_not_hold_the_run(clock: Clock) -> None:
    with ScriptedModelServer() as srv:
        srv.model_info_delay = 1.0
        async with make_client(srv, clock) as model:
            model.identity_timeout = 0.1
            started = time.monotonic()
            info = await model.check()
            assert time.monotonic() - started < 0.9  # both names tried, each cut short
    assert info.model_info == {}
    assert info.served["id"] == "frognano"


async def test_check_names_the_models_served(clock: Clock) -> None:
    with ScriptedModelServer(model="other-model") as srv:
        async with make_client(srv, clock) as model:
            with pytest.raises(ModelResponseError) as caught:
                await model.check()
    assert "other-model" in str(caught.value)
    assert "FROGNANO_MODEL_NAME" in str(caught.value)


def test_tools_json_must_be_a_list() -> None:
    with pytest.raises(TypeError):
        ModelClient(
            base_url="http://127.0.0.1:1/v1",
            model="m",
            api_key=None,
            tools_json=b"{}",
            tool_definitions=[],
        )
