"""The scripted model server answers like SGLang, cheaply, over keep-alive HTTP."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any

import pytest

from tests.agent.chat_template import GENERATION_PROMPT, last_assistant_turn, render
from tests.fakes.model_server import (
    EXAMPLE_TOOLS,
    ScriptedModelServer,
    Turn,
    generated_text_for,
)


def fetch(
    server: ScriptedModelServer, method: str, path: str, body: bytes | None = None
) -> tuple[int, bytes, dict[str, str]]:
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.read(), dict(response.headers)
    finally:
        connection.close()


def chat(
    server: ScriptedModelServer, messages: list[dict[str, Any]], *, tools: bool = True
) -> tuple[int, dict[str, Any], dict[str, str]]:
    body: dict[str, Any] = {"model": "frognano", "messages": messages}
    if tools:
        body["tools"] = EXAMPLE_TOOLS
    status, raw, headers = fetch(server, "POST", "/v1/chat/completions", json.dumps(body).encode())
    return status, json.loads(raw), headers


USER = [{"role": "user", "content": "hi"}]


def test_generated_text_is_the_qwen3_coder_format() -> None:
    turn = Turn(
        reasoning="Think.",
        content="Doing it.",
        calls=[
            ("Edit", {"file_path": "/a", "old_string": "x\ny", "replace_all": True}),
            ("Tune", {"n": 3, "r": 0.5, "o": {"k": [1]}, "z": None, "off": False}),
        ],
    )
    assert generated_text_for(turn) == (
        "Think.\n</think>\n\nDoing it.\n\n"
        "<tool_call>\n<function=Edit>\n"
        "<parameter=file_path>\n/a\n</parameter>\n"
        "<parameter=old_string>\nx\ny\n</parameter>\n"
        "<parameter=replace_all>\ntrue\n</parameter>\n"
        "</function>\n</tool_call>\n"
        "<tool_call>\n<function=Tune>\n"
        "<parameter=n>\n3\n</parameter>\n"
        "<parameter=r>\n0.5\n</parameter>\n"
        '<parameter=o>\n{"k": [1]}\n</parameter>\n'
        "<parameter=z>\nnull\n</parameter>\n"
        "<parameter=off>\nfalse\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    assert generated_text_for(Turn(content="Only words.")) == "\n</think>\n\nOnly words."


def test_reply_has_sglangs_shape() -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("Read", {"file_path": "/a", "offset": 2}),
        ("Bash", {"command": "ls"}),
    ]
    with ScriptedModelServer([Turn(reasoning="R.", calls=calls), Turn(content="C.")]) as srv:
        status, first, _ = chat(srv, USER)
        _, second, _ = chat(srv, USER)
    assert status == 200
    assert first["object"] == "chat.completion"
    assert first["model"] == "frognano"
    choice = first["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["role"] == "assistant"
    assert message["reasoning_content"] == "R.\n"
    assert message["content"] == "\n\n"  # never null in SGLang
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["Read", "Bash"]
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == calls[0][1]
    assert all(
        c["id"].startswith("call_") and c["type"] == "function" for c in message["tool_calls"]
    )
    usage = first["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    second_message = second["choices"][0]["message"]
    assert "tool_calls" not in second_message  # SGLang leaves the key out
    assert second_message["reasoning_content"] == "\n"  # SGLang keeps the bare newline
    assert second_message["content"] == "\n\nC."
    assert second["choices"][0]["finish_reason"] == "stop"


def test_without_tools_the_xml_stays_in_content() -> None:
    with ScriptedModelServer([Turn(calls=[("Bash", {"command": "ls"})])]) as srv:
        _, reply, _ = chat(srv, USER, tools=False)
    message = reply["choices"][0]["message"]
    assert "tool_calls" not in message  # SGLang leaves the key out
    assert "<function=Bash>" in message["content"]


def test_cached_tokens_default_to_the_previous_prefix() -> None:
    with ScriptedModelServer([Turn(content="a"), Turn(content="b"), Turn(content="c")]) as srv:
        _, one, _ = chat(srv, USER)
        longer = [*USER, {"role": "assistant", "content": "a"}, {"role": "user", "content": "go"}]
        _, two, _ = chat(srv, longer)
        _, three, _ = chat(srv, [{"role": "user", "content": "different"}])
    assert one["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert two["usage"]["prompt_tokens_details"]["cached_tokens"] == one["usage"]["prompt_tokens"]
    assert three["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


def test_exhausted_script_fails_loudly() -> None:
    with ScriptedModelServer() as srv:
        status, reply, _ = chat(srv, USER)
    assert status == 400
    assert "script exhausted" in reply["message"]


def test_default_builds_turns_from_the_request() -> None:
    seen: list[dict[str, Any]] = []

    def default(request: dict[str, Any]) -> Turn:
        seen.append(request)
        return Turn(content=f"{len(request['messages'])} messages")

    with ScriptedModelServer([Turn(content="scripted")], default=default) as srv:
        _, first, _ = chat(srv, USER)
        _, second, _ = chat(srv, USER * 3)
    assert first["choices"][0]["message"]["content"].strip() == "scripted"
    assert second["choices"][0]["message"]["content"].strip() == "3 messages"
    assert len(seen) == 1
    assert srv.generated_text(1) == "\n</think>\n\n3 messages"


def test_error_turns_send_status_headers_and_body() -> None:
    turns = [
        Turn(status=429, headers={"Retry-After": "3"}),
        Turn(status=200, body=b'{"weird": true}', headers={"X-Test": "1"}),
        Turn(content="fine"),
    ]
    with ScriptedModelServer(turns) as srv:
        status, reply, headers = chat(srv, USER)
        assert (status, reply["code"], reply["object"]) == (429, 429, "error")
        assert headers["Retry-After"] == "3"
        status, reply, headers = chat(srv, USER)
        assert (status, reply, headers["X-Test"]) == (200, {"weird": True}, "1")
        chat(srv, USER)
        assert srv.generated_text(0) == "\n</think>\n\nfine"  # only completions count
        with pytest.raises(IndexError):
            srv.generated_text(1)
        assert len(srv.requests) == 3


def test_models_and_health() -> None:
    with ScriptedModelServer(model="fn-4b") as srv:
        status, raw, _ = fetch(srv, "GET", "/v1/models")
        assert status == 200
        models = json.loads(raw)
        assert fetch(srv, "GET", "/health")[0] == 200
        assert fetch(srv, "GET", "/nope")[0] == 404
    assert models["data"][0]["id"] == "fn-4b"
    assert models["data"][0]["max_model_len"] == 131072


def test_keep_requests_bounds_what_is_recorded() -> None:
    with ScriptedModelServer(default=lambda _r: Turn(content="x"), keep_requests=2) as srv:
        for n in range(5):
            chat(srv, [{"role": "user", "content": str(n)}])
    assert srv.request_count == 5
    assert [r["messages"][0]["content"] for r in srv.requests] == ["3", "4"]
    assert len(srv.raw_requests) == len(srv.request_headers) == 2


def test_generated_text_matches_the_template_for_an_echo() -> None:
    """The server's own reply, echoed with booleans and null as text, re-renders exactly."""
    args = {"file_path": "/a", "old_string": "a", "new_string": "b", "replace_all": False}
    with ScriptedModelServer([Turn(reasoning="R", content="C", calls=[("Edit", args)])]) as srv:
        _, reply, _ = chat(srv, USER)
        message = reply["choices"][0]["message"]
    call = message["tool_calls"][0]
    call["function"]["arguments"] = json.dumps({**args, "replace_all": "false"})
    echo = {
        "role": "assistant",
        "content": message["content"],
        "reasoning_content": message["reasoning_content"],
        "tool_calls": [call],
    }
    request = {"messages": [*USER, echo], "tools": EXAMPLE_TOOLS}
    rendered = last_assistant_turn(render(request, add_generation_prompt=False))
    assert rendered == GENERATION_PROMPT + srv.generated_text(0) + "<|im_end|>"


def test_keep_alive_replies_do_not_stall() -> None:
    """TCP_NODELAY: without it every reply waits ~40 ms for a delayed ACK."""
    body = json.dumps({"model": "frognano", "messages": USER}).encode()
    with ScriptedModelServer(default=lambda _r: Turn(content="x" * 2000)) as srv:
        host, port = srv.url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=5)
        try:
            started = time.perf_counter()
            for _ in range(20):
                connection.request("POST", "/v1/chat/completions", body=body)
                response = connection.getresponse()
                response.read()
                assert response.status == 200
            elapsed = time.perf_counter() - started
        finally:
            connection.close()
    assert elapsed < 0.4, f"20 requests took {elapsed:.3f} s"
