"""`frognano model serve` and `frognano model check`, run as real processes against real HTTP."""

from __future__ import annotations

import http.server
import json
import shlex
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from frognano.agent.prompts import SYSTEM_PROMPT
from frognano.agent.request import RequestBody, SamplingConfig
from frognano.agent.tools.schema import TOOL_DEFINITIONS, TOOLS_JSON
from frognano.agent.turns import Conversation
from frognano.modelserver.check import CHECK_PROMPT, check_request
from frognano.modelserver.verdicts import Exchange, Item, Status, Target, evaluate, required_passed
from tests.cli.test_app import frognano
from tests.fakes.model_server import ScriptedModelServer, Turn

READ = Turn(
    reasoning="The user wants the README. I will read it.",
    calls=[("Read", {"file_path": "/workspace/README.md"})],
)

# What `frognano model serve` runs with its defaults, spelt out here so a changed flag shows.
DEFAULT_COMMAND = [
    sys.executable, "-m", "sglang.launch_server",
    "--model-path", "/models/frognano",
    "--served-model-name", "frognano",
    "--host", "127.0.0.1",
    "--port", "30000",
    "--tp-size", "1",
    "--context-length", "131072",
    "--reasoning-parser", "qwen3",
    "--tool-call-parser", "qwen3_coder",
    "--mem-fraction-static", "0.85",
    "--enable-metrics",
    "--enable-cache-report",
]  # fmt: skip


def check(server: ScriptedModelServer, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return frognano(
        "model", "check", *args, env={"FROGNANO_MODEL_BASE_URL": server.base_url, **env}
    )


def rows(stdout: str) -> dict[str, str]:
    """The report table as {check: result}."""
    found: dict[str, str] = {}
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.strip("│ ").split("│")]
        if len(cells) == 3 and cells[0] and cells[1]:
            found[cells[0]] = cells[1]
    return found


# ------------------------------------------------------------------------------ model check


def test_check_passes_against_a_well_behaved_server() -> None:
    with ScriptedModelServer([READ]) as server:
        done = check(server, FROGNANO_MODEL_API_KEY="sk-local")
        requests, headers = server.requests, server.request_headers
    assert done.returncode == 0, done.stderr
    assert rows(done.stdout) == {
        "endpoint reachable": "ok",
        "model served": "ok",
        "chat completion": "ok",
        "tool calls parsed": "ok",
        "reasoning separated": "ok",
        "prompt-cache report": "ok",
    }
    assert 'Read({"file_path": "/workspace/README.md"})' in done.stdout
    assert "The model server is ready for FrogNano." in done.stdout
    assert done.stderr == ""
    # One completion, with FrogNano's own tools, prompt and thinking; the key from the setting.
    (request,) = requests
    assert request["model"] == "frognano"
    assert request["tools"] == TOOL_DEFINITIONS
    assert request["messages"] == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": CHECK_PROMPT},
    ]
    assert request["chat_template_kwargs"] == {"enable_thinking": True}
    assert request["max_tokens"] == 512
    assert headers[0]["authorization"] == "Bearer sk-local"


def test_tool_call_xml_left_in_content_names_the_tool_call_parser() -> None:
    turn = Turn(reasoning=READ.reasoning, calls=READ.calls, xml_in_content=True)
    with ScriptedModelServer([turn]) as server:
        done = check(server)
    assert done.returncode == 1
    assert rows(done.stdout)["tool calls parsed"] == "FAIL"
    assert rows(done.stdout)["reasoning separated"] == "ok"
    assert "raw <tool_call> XML in content" in done.stderr
    assert "Fix: start SGLang with --tool-call-parser qwen3_coder" in done.stderr
    assert "not ready for FrogNano (1 check(s) failed)" in done.stderr


def test_thinking_left_in_content_names_the_reasoning_parser() -> None:
    turn = Turn(reasoning=READ.reasoning, calls=READ.calls, think_in_content=True)
    with ScriptedModelServer([turn]) as server:
        done = check(server)
    assert done.returncode == 1
    assert rows(done.stdout)["reasoning separated"] == "FAIL"
    assert rows(done.stdout)["tool calls parsed"] == "ok"
    assert "</think> left in content" in done.stderr
    assert "Fix: start SGLang with --reasoning-parser qwen3" in done.stderr


def test_a_missing_cache_report_only_warns() -> None:
    with ScriptedModelServer([READ], cache_report=False) as server:
        done = check(server)
    assert done.returncode == 0, done.stderr
    assert rows(done.stdout)["prompt-cache report"] == "warning"
    assert "warning: prompt-cache report" in done.stderr
    assert "Fix: start SGLang with --enable-cache-report" in done.stderr


def one_line_failure(done: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    """The error line and the hint line of a check that stopped early: nothing else printed,
    exit 1."""
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    error, hint = done.stderr.splitlines()
    assert error.startswith("error: the model server is not ready for FrogNano: "), error
    assert hint.startswith("hint: "), hint
    return error, hint


def test_wrong_model_name_lists_the_served_ones() -> None:
    with ScriptedModelServer([READ], model="qwen3.5-4b") as server:
        done = check(server)
        asked = server.request_count
        chosen = check(server, "--model", "qwen3.5-4b")
    error, hint = one_line_failure(done)
    assert "model served: the server serves 'qwen3.5-4b', not 'frognano'" in error
    assert "set FROGNANO_MODEL_NAME to 'qwen3.5-4b'" in hint
    assert "--served-model-name frognano" in hint
    assert asked == 0  # no completion is sent for a model that is not served
    assert chosen.returncode == 0, chosen.stderr


def test_unreachable_endpoint_exits_1_with_one_readable_line() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    error, hint = one_line_failure(frognano("model", "check", "--model-url", url))
    assert f"endpoint reachable: no answer from {url}/models: cannot connect" in error
    assert hint.startswith("hint: start the model server (`frognano model serve`)")


class _Garbage(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html>\n<h1>It works!</h1>\n</html>\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_server_that_answers_garbage_is_one_line() -> None:
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Garbage) as httpd:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        done = frognano("model", "check", "--model-url", url)
        httpd.shutdown()
    error, hint = one_line_failure(done)
    assert f"endpoint reachable: {url}/models answered, but not with a model list" in error
    assert "It works!" in error
    assert "OpenAI-compatible server" in hint


def test_a_refused_completion_shows_the_servers_words_in_one_line() -> None:
    with ScriptedModelServer([Turn(status=400)]) as server:
        done = check(server)
    error, hint = one_line_failure(done)
    assert "chat completion: " in error
    assert "answered HTTP 400: scripted HTTP 400" in error
    assert hint == "hint: see the model server's log"
    with ScriptedModelServer([Turn(status=500, body=b"first line\nsecond line")]) as server:
        error, _hint = one_line_failure(check(server))
    assert error.endswith("answered HTTP 500: first line second line")


@pytest.mark.parametrize("option", ["--model-url", "--base-url"])  # --base-url: hidden alias
def test_bad_model_url_is_bad_usage(option: str) -> None:
    done = frognano("model", "check", option, "localhost:30000")
    assert done.returncode == 2
    assert "--model-url 'localhost:30000' is not an http:// or https:// URL" in done.stderr


# ------------------------------------------------------------------------------ model serve


def test_serve_dry_run_prints_the_command() -> None:
    done = frognano("model", "serve", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout == shlex.join(DEFAULT_COMMAND) + "\n"


def test_serve_dry_run_with_options_and_extra_arguments() -> None:
    done = frognano(
        "model", "serve", "--dry-run", "--model-path", "/srv/weights dir", "--host", "0.0.0.0",
        "--port", "31000", "--gpus", "2", "--context-length", "65536",
        "--mem-fraction-static", "0.7", "--", "--language-model-only", "--max-running-requests",
        "8",
        env={"FROGNANO_MODEL_NAME": "frognano-4b"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert shlex.split(done.stdout) == [
        sys.executable, "-m", "sglang.launch_server",
        "--model-path", "/srv/weights dir",
        "--served-model-name", "frognano-4b",
        "--host", "0.0.0.0",
        "--port", "31000",
        "--tp-size", "2",
        "--context-length", "65536",
        "--reasoning-parser", "qwen3",
        "--tool-call-parser", "qwen3_coder",
        "--mem-fraction-static", "0.7",
        "--enable-metrics",
        "--enable-cache-report",
        "--language-model-only", "--max-running-requests", "8",
    ]  # fmt: skip


@pytest.mark.parametrize("extra", ["--port=31000", "--tool-call-parser", "--tensor-parallel-size"])
def test_serve_refuses_extra_arguments_that_override_its_own(extra: str) -> None:
    done = frognano("model", "serve", "--dry-run", "--", extra, "2")
    assert done.returncode == 2
    assert "would override what `frognano model serve` sets" in done.stderr


def test_serve_without_sglang_exits_2_with_the_install_hint(tmp_path: Path) -> None:
    done = frognano("model", "serve", "--model-path", str(tmp_path))
    assert done.returncode == 2
    assert "SGLang is not installed" in done.stderr
    assert "pip install sglang==0.5.23" in done.stderr
    assert "FROGNANO_SGLANG_PYTHON" in done.stderr
    assert "--dry-run" in done.stderr


def test_serve_runs_sglang_from_its_own_environment(tmp_path: Path) -> None:
    """SGLang pins an older openai than FrogNano: FROGNANO_SGLANG_PYTHON names the Python of
    an environment that has it, which the command then runs."""
    package = tmp_path / "site" / "sglang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "launch_server.py").write_text("import sys\nprint('sglang', sys.argv[1:3])\n")
    python = tmp_path / "sglang-env" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nPYTHONPATH={tmp_path / "site"} exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    weights = tmp_path / "weights"
    weights.mkdir()
    env = {"FROGNANO_SGLANG_PYTHON": str(python)}
    dry = frognano("model", "serve", "--dry-run", env=env)
    assert dry.stdout.split()[:3] == [str(python), "-m", "sglang.launch_server"]
    done = frognano("model", "serve", "--model-path", str(weights), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"sglang ['--model-path', '{weights}']"
    missing = frognano("model", "serve", "--model-path", str(weights),
                       env={"FROGNANO_SGLANG_PYTHON": "/usr/bin/false"})  # fmt: skip
    assert missing.returncode == 2
    assert "SGLang is not installed for /usr/bin/false" in missing.stderr


@pytest.fixture
def fake_sglang(tmp_path: Path) -> dict[str, str]:
    """An environment where `sglang.launch_server` is a stand-in that prints its process id
    and arguments, then exits 3."""
    package = tmp_path / "site" / "sglang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "launch_server.py").write_text(
        "import json, os, sys\n"
        "print(json.dumps({'pid': os.getpid(), 'argv': sys.argv[1:]}))\n"
        "sys.exit(3)\n"
    )
    return {"PYTHONPATH": str(tmp_path / "site")}


def test_serve_replaces_itself_with_sglang(tmp_path: Path, fake_sglang: dict[str, str]) -> None:
    weights = tmp_path / "weights"
    weights.mkdir()
    argv = [sys.executable, "-m", "frognano", "model", "serve", "--model-path", str(weights)]
    with subprocess.Popen(
        argv,
        env={**fake_sglang, "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 3, stderr  # SGLang's own exit status
    seen: dict[str, Any] = json.loads(stdout)
    assert seen["pid"] == process.pid  # the same process: signals reach SGLang directly
    assert seen["argv"] == ["--model-path", str(weights), *DEFAULT_COMMAND[5:]]
    assert "Starting SGLang:" in stderr
    assert "frognano model check --model-url http://127.0.0.1:30000/v1" in stderr


def test_serve_needs_an_existing_model_folder(fake_sglang: dict[str, str]) -> None:
    done = frognano("model", "serve", "--model-path", "/nonexistent/frognano", env=fake_sglang)
    assert done.returncode == 2
    assert "no model folder at /nonexistent/frognano" in done.stderr


# ------------------------------------------------------------------------------ verdicts

TARGET = Target("http://models.test/v1", "frognano")
LISTING = Exchange(
    status=200, body={"object": "list", "data": [{"id": "frognano", "max_model_len": 131072}]}
)


def completion(
    message: dict[str, Any], finish_reason: str = "tool_calls", usage: Any = None
) -> Exchange:
    if usage is None:
        usage = {"prompt_tokens": 900, "prompt_tokens_details": {"cached_tokens": 0}}
    choice = {"index": 0, "message": message, "finish_reason": finish_reason}
    return Exchange(status=200, body={"choices": [choice], "usage": usage})


def read_call(arguments: str = '{"file_path": "/workspace/README.md"}') -> dict[str, Any]:
    return {
        "id": "call_1",
        "type": "function",
        "function": {"name": "Read", "arguments": arguments},
    }


def by_name(items: list[Item]) -> dict[str, Item]:
    return {item.name: item for item in items}


GOOD = {"content": "", "reasoning_content": "Read it.", "tool_calls": [read_call()]}


def test_a_good_reply_passes_every_item() -> None:
    items = evaluate(TARGET, LISTING, completion(GOOD), max_tokens=512)
    assert [item.status for item in items] == [Status.OK] * 6
    assert required_passed(items)


def test_unreachable_skips_everything_after() -> None:
    items = evaluate(TARGET, Exchange(error="cannot connect (refused)"), None, max_tokens=512)
    assert items[0].status is Status.FAIL
    assert items[0].fix is not None
    assert "FROGNANO_MODEL_BASE_URL" in items[0].fix
    assert {item.status for item in items[1:]} == {Status.SKIP}
    assert not required_passed(items)


@pytest.mark.parametrize(
    ("exchange", "words"),
    [
        (Exchange(status=401, body={"message": "bad key"}), "FROGNANO_MODEL_API_KEY"),
        (Exchange(status=404, body={"detail": "Not Found"}), "ends in /v1"),
        (Exchange(status=200, body=None, text="<html>"), "OpenAI-compatible"),
        (Exchange(status=503, body={"error": {"message": "loading"}}), "server's log"),
    ],
)
def test_endpoint_failures_name_the_fix(exchange: Exchange, words: str) -> None:
    endpoint = evaluate(TARGET, exchange, None, max_tokens=512)[0]
    assert endpoint.status is Status.FAIL
    assert endpoint.fix is not None
    assert words in endpoint.fix


def test_a_base_url_without_v1_gets_a_suggestion() -> None:
    target = Target("http://models.test:30000", "frognano")
    endpoint = evaluate(target, Exchange(status=404), None, max_tokens=512)[0]
    assert endpoint.fix is not None
    assert "did you mean http://models.test:30000/v1?" in endpoint.fix


def test_an_unlisted_model_names_the_served_ones() -> None:
    listing = Exchange(status=200, body={"data": [{"id": "a"}, {"id": "b"}]})
    model = by_name(evaluate(TARGET, listing, None, max_tokens=512))["model served"]
    assert model.status is Status.FAIL
    assert model.detail == "the server serves 'a', 'b', not 'frognano'"
    assert model.fix is not None
    assert "'a' or 'b'" in model.fix


@pytest.mark.parametrize(
    ("message", "finish_reason", "fix"),
    [
        (
            {
                "content": "<tool_call>\n<function=Read>\n</function>\n</tool_call>",
                "reasoning_content": "x",
            },
            "stop",
            "--tool-call-parser qwen3_coder",
        ),
        (
            {"content": "", "reasoning_content": "x", "tool_calls": [read_call("file_path=/a")]},
            "tool_calls",
            "--tool-call-parser qwen3_coder",
        ),
        (
            {
                "content": "",
                "reasoning_content": "x",
                "tool_calls": [{"function": {"name": "read_file", "arguments": "{}"}}],
            },
            "tool_calls",
            "FrogNano-4B",
        ),
        ({"content": "", "reasoning_content": "long thoughts"}, "length", "--max-tokens"),
        ({"content": "The README says hello.", "reasoning_content": "x"}, "stop", "again"),
    ],
)
def test_tool_call_failures(message: dict[str, Any], finish_reason: str, fix: str) -> None:
    items = by_name(evaluate(TARGET, LISTING, completion(message, finish_reason), max_tokens=64))
    item = items["tool calls parsed"]
    assert item.status is Status.FAIL
    assert item.fix is not None
    assert fix in item.fix


@pytest.mark.parametrize(
    "message",
    [
        {"content": "I will read it.\n</think>\n\n", "tool_calls": [read_call()]},
        {"content": "<think>\nhm\n</think>\n\n", "reasoning_content": None},
        {"content": "", "reasoning_content": "  ", "tool_calls": [read_call()]},
        {"content": "", "tool_calls": [read_call()]},
    ],
)
def test_reasoning_failures_name_the_reasoning_parser(message: dict[str, Any]) -> None:
    item = by_name(evaluate(TARGET, LISTING, completion(message), max_tokens=512))[
        "reasoning separated"
    ]
    assert item.status is Status.FAIL
    assert item.fix is not None
    assert "--reasoning-parser qwen3" in item.fix


@pytest.mark.parametrize(
    "usage", [{"prompt_tokens": 9}, {"prompt_tokens_details": None}, "nonsense"]
)
def test_a_missing_cache_report_is_a_warning(usage: Any) -> None:
    items = evaluate(TARGET, LISTING, completion(GOOD, usage=usage), max_tokens=512)
    cache = by_name(items)["prompt-cache report"]
    assert cache.status is Status.WARN
    assert not cache.required
    assert cache.fix == "start SGLang with --enable-cache-report"
    assert required_passed(items)


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (Exchange(error="timed out after 120 s", timed_out=True), "--timeout"),
        (Exchange(status=200, body={"choices": []}, text='{"choices": []}'), "server's log"),
        (Exchange(status=403, body={"message": "no"}), "FROGNANO_MODEL_API_KEY"),
    ],
)
def test_completion_failures_skip_the_parser_items(reply: Exchange, words: str) -> None:
    items = by_name(evaluate(TARGET, LISTING, reply, max_tokens=512))
    assert items["chat completion"].status is Status.FAIL
    assert words in (items["chat completion"].fix or "")
    for name in ("tool calls parsed", "reasoning separated", "prompt-cache report"):
        assert items[name].status is Status.SKIP


def test_check_request_is_what_the_agent_sends() -> None:
    request = check_request("frognano", 256)
    assert request["tools"] == TOOL_DEFINITIONS
    assert request["max_tokens"] == 256
    assert request["chat_template_kwargs"] == {"enable_thinking": True}
    assert request["stream"] is False
    assert (request["temperature"], request["top_p"], request["top_k"]) == (0.6, 0.95, 20)
    # The same fields, in the same order, as the agent's own request body ends with.
    body = RequestBody("frognano", TOOLS_JSON, SamplingConfig(max_tokens=256))
    agent = json.loads(body.build(Conversation()))
    assert list(request) == list(agent)
    assert {key: request[key] for key in list(agent)[3:]} == dict(list(agent.items())[3:])
