"""A scripted OpenAI-compatible model server that answers like SGLang 0.5.23.

Real HTTP on 127.0.0.1 (stdlib `ThreadingHTTPServer`, `TCP_NODELAY`, keep-alive), so the model
client is exercised end to end. Each `/v1/chat/completions` request takes the next scripted
`Turn`; the server writes the text the model would have generated for it (`generated_text`)
and answers with what SGLang's parsers make of that text:

- `--reasoning-parser qwen3` (unless `think_in_content`), with reasoning forced as the
  generation prompt opens `<think>`: leading `<think>` tags are dropped; everything before
  `</think>` is `reasoning_content`, unstripped (SGLang returns e.g. "I will read it.\\n");
  without `</think>`, a `<tool_call>` closes the reasoning, and a text with neither is all
  reasoning (a reply cut off mid-thought); null when empty. Otherwise the whole text stays
  in `content`.
- `--tool-call-parser qwen3_coder` (unless `xml_in_content`, or when the request has no
  tools): the calls are parsed back out of the XML with the request's tool schemas (the
  parser is a copy of SGLang's), `content` is the text before the first `<tool_call>` (e.g.
  "\\n\\nLet me look.\\n\\n", or "\\n\\n" before bare calls; never null, as in SGLang), and
  `finish_reason` "stop" becomes "tool_calls". A scripted "length" stays "length". Without a
  call the `tool_calls` key is left out, as SGLang's `ChatMessage` serialiser does.

`GET /v1/models` lists the served name; `GET /model_info` (and its older name
`/get_model_info`) answers SGLang's fields with `model_path`. The reply's `model` echoes the
request's, as SGLang's `_build_chat_response` does.

The reply has SGLang's shape: `metadata: null`, `matched_stop`, and usage with
`reasoning_tokens` and `completion_tokens_details` (`tests/agent/test_sglang_conformance.py`
compares it with SGLang's own response models).

Usage: `prompt_tokens` defaults to len(request body) // 4; `cached_tokens` to the previous
request's `prompt_tokens` when the previous request's messages are a prefix of this one's.

Use as a context manager::

    with ScriptedModelServer([Turn(reasoning="Look first.", calls=[("Read", {...})])]) as srv:
        client = ModelClient(base_url=srv.base_url, ...)
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from frognano.agent.qwen3_coder import THINK_END, THINK_START, TOOL_CALL_START, parse_tool_calls

MODEL_NAME = "frognano"
MAX_MODEL_LEN = 131072
MODEL_PATH = "/models/Qwen3.5-35B-A3B-FP8"


# The five tool definitions of harness.md section 1.1, verbatim, for tests that must not depend
# on frognano.agent.tools.schema (another module's contract); sent as compact JSON bytes.
_EXAMPLE_TOOLS_TEXT = r"""
[
 {"type":"function","function":{"name":"Read","description":"Read a text file from the local filesystem. file_path must be an absolute path. By default reads up to 2000 lines from the start of the file; pass offset and limit only for long files. Lines longer than 2000 characters are truncated. Output is in cat -n format with line numbers starting at 1. Directories cannot be read; use Bash ls.","parameters":{"type":"object","properties":{"file_path":{"type":"string","description":"Absolute path of the file to read"},"offset":{"type":"integer","description":"1-based line number to start reading from. Only provide if the file is too large to read at once"},"limit":{"type":"integer","description":"Number of lines to read. Only provide if the file is too large to read at once"}},"required":["file_path"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"Write","description":"Write a file to the local filesystem, overwriting any existing file. An existing file must be Read first. Prefer Edit for modifying existing files; use Write for new files or complete rewrites.","parameters":{"type":"object","properties":{"file_path":{"type":"string","description":"Absolute path of the file to write"},"content":{"type":"string","description":"Full content to write"}},"required":["file_path","content"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"Edit","description":"Replace an exact string in a file. The file must have been Read first. old_string must match the file exactly (preserve indentation; never include the line-number prefix from Read output) and must be unique unless replace_all is true.","parameters":{"type":"object","properties":{"file_path":{"type":"string","description":"Absolute path of the file to modify"},"old_string":{"type":"string","description":"The exact text to replace"},"new_string":{"type":"string","description":"The replacement text (must differ from old_string)"},"replace_all":{"type":"boolean","description":"Replace every occurrence of old_string (default false)"}},"required":["file_path","old_string","new_string"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"Glob","description":"Find files by glob pattern such as \"**/*.py\" or \"src/**/*.ts\". Returns matching paths sorted by modification time, at most 100.","parameters":{"type":"object","properties":{"pattern":{"type":"string","description":"Glob pattern to match files against"},"path":{"type":"string","description":"Directory to search in. Omit to use the current working directory"}},"required":["pattern"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"Bash","description":"Run a bash command and return its combined stdout/stderr. The working directory persists between calls; environment variables do not. Default timeout 120000 ms, maximum 600000 ms. Output longer than 30000 characters is truncated. Do not run interactive commands.","parameters":{"type":"object","properties":{"command":{"type":"string","description":"The command to execute"},"timeout":{"type":"integer","description":"Optional timeout in milliseconds (max 600000)"},"description":{"type":"string","description":"Short description of what the command does"}},"required":["command"],"additionalProperties":false}}}
]
"""  # noqa: E501
EXAMPLE_TOOLS: list[dict[str, Any]] = json.loads(_EXAMPLE_TOOLS_TEXT)
EXAMPLE_TOOLS_JSON: bytes = json.dumps(
    EXAMPLE_TOOLS, ensure_ascii=False, separators=(",", ":")
).encode("utf-8")


@dataclass
class Turn:
    """One scripted reply."""

    reasoning: str | None = None
    content: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(tool name, arguments as the model meant them); written into the generated text as
    qwen3_coder XML."""
    finish_reason: str | None = None
    """Default: "tool_calls" when calls were parsed, else "stop"."""
    xml_in_content: bool = False
    """Simulate a server without `--tool-call-parser`: the XML stays in `content`."""
    think_in_content: bool = False
    """Simulate a server without `--reasoning-parser`: reasoning and `</think>` in `content`."""
    status: int = 200
    body: bytes | None = None
    """Sent verbatim instead of a completion (garbage or error injection)."""
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    delay: float = 0.0
    """Seconds to wait before answering."""
    raw: str | None = None
    """The generated text verbatim, instead of one built from the fields above (a reply cut
    off mid-thought, a malformed call)."""

    @property
    def is_completion(self) -> bool:
        return self.status == 200 and self.body is None


def format_value(value: Any) -> str:
    """A parameter value as the model writes it in qwen3_coder XML (and as the chat template
    renders it back: `|string`, or `tojson` for objects and arrays)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def call_xml(name: str, arguments: dict[str, Any]) -> str:
    params = "".join(
        f"<parameter={key}>\n{format_value(value)}\n</parameter>\n"
        for key, value in arguments.items()
    )
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def generated_text_for(turn: Turn) -> str:
    """The text the model generates after the prompt `<|im_start|>assistant\\n<think>\\n`."""
    if turn.raw is not None:
        return turn.raw
    calls = "\n".join(call_xml(name, args) for name, args in turn.calls)
    gap = "\n\n" if turn.content and calls else ""
    return f"{turn.reasoning or ''}\n</think>\n\n{turn.content}{gap}{calls}"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedModelServer

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        # Without it each reply waits ~40 ms for the client's delayed ACK.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock, address


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60  # idle keep-alive connections end after a minute
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        merged = {"Content-Type": "application/json", **(headers or {})}
        for key, value in merged.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/health":
            self._send(200, b"", {"Content-Type": "text/plain"})
        elif path == "/v1/models":
            model = {
                "id": owner.model,
                "object": "model",
                "created": int(time.time()),
                "owned_by": "sglang",
                "root": owner.model,
                "max_model_len": MAX_MODEL_LEN,
            }
            self._send(200, json.dumps({"object": "list", "data": [model]}).encode())
        elif path in ("/model_info", "/get_model_info") and owner.model_path is not None:
            time.sleep(owner.model_info_delay)
            # SGLang's http_server.py: /get_model_info is the older name of /model_info.
            info = {
                "model_path": owner.model_path,
                "tokenizer_path": owner.model_path,
                "is_generation": True,
                "preferred_sampling_params": None,
                "weight_version": "default",
                "has_image_understanding": False,
                "has_audio_understanding": False,
                "model_type": "qwen3_5_moe",
                "architectures": ["Qwen3_5MoeForConditionalGeneration"],
            }
            self._send(200, json.dumps(info).encode())
        else:
            self._send(404, b'{"detail":"Not Found"}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.split("?", 1)[0].rstrip("/") != "/v1/chat/completions":
            self._send(404, b'{"detail":"Not Found"}')
            return
        sent = {key.lower(): value for key, value in self.headers.items()}
        status, body, headers, delay = self.server.owner._answer(raw, sent)
        if delay > 0:
            time.sleep(delay)
        self._send(status, body, headers)


class ScriptedModelServer:
    """An OpenAI-compatible server that replays scripted turns; see the module docstring."""

    def __init__(
        self,
        turns: Iterable[Turn] = (),
        *,
        default: Callable[[dict[str, Any]], Turn] | None = None,
        model: str = MODEL_NAME,
        cache_report: bool = True,
        keep_requests: int | None = None,
        model_path: str | None = MODEL_PATH,
    ) -> None:
        """`keep_requests` bounds `requests`/`raw_requests`/`request_headers` to the last N
        (a long benchmark need not hold every 0.5 MB body); None keeps all. `model_path` is
        what `/model_info` names (None: a server without it, which answers 404)."""
        self.model = model
        self.model_path = model_path
        self.model_info_delay = 0.0
        """Seconds `/model_info` waits before it answers (a slow or stuck server)."""
        self.cache_report = cache_report
        """False: no `prompt_tokens_details` (SGLang without `--enable-cache-report`)."""
        self.requests: list[dict[str, Any]] = []
        self.raw_requests: list[bytes] = []
        self.request_headers: list[dict[str, str]] = []
        """The HTTP headers of each chat request (lower-case names)."""
        self.request_count = 0
        self._keep = keep_requests
        self._turns: deque[Turn] = deque(turns)
        self._default = default
        self._generated: list[str] = []
        self._previous: tuple[list[Any], int] | None = None
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread: threading.Thread | None = None
        port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{port}"
        self.base_url = f"{self.url}/v1"

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedModelServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="scripted-model-server",
                daemon=True,
            )
            self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- script ------------------------------------------------------------------------------

    def push(self, *turns: Turn) -> None:
        with self._lock:
            self._turns.extend(turns)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._turns)

    def generated_text(self, index: int) -> str:
        """The exact text the model "generated" for the index-th completed turn (error and
        verbatim-body turns do not count), after `<|im_start|>assistant\\n<think>\\n`."""
        with self._lock:
            return self._generated[index]

    # -- answering ---------------------------------------------------------------------------

    def _answer(
        self, raw: bytes, headers: dict[str, str]
    ) -> tuple[int, bytes, dict[str, str], float]:
        try:
            request: dict[str, Any] = json.loads(raw)
        except ValueError:
            request = {}
        with self._lock:
            self.raw_requests.append(raw)
            self.requests.append(request)
            self.request_headers.append(headers)
            if self._keep is not None and len(self.requests) > self._keep:
                del self.raw_requests[: -self._keep or None]
                del self.requests[: -self._keep or None]
                del self.request_headers[: -self._keep or None]
            self.request_count += 1
            number = self.request_count
            turn = self._turns.popleft() if self._turns else None
        if turn is None:
            if self._default is None:
                note = (
                    f"scripted model server: script exhausted at request #{number}; "
                    "push() more Turns or pass default="
                )
                # 400, not 500: clients retry a 500, and a test bug should fail at once.
                return 400, _error_body(note, "BadRequestError", 400), {}, 0.0
            turn = self._default(request)

        if not turn.is_completion:
            body = turn.body
            if body is None:
                body = _error_body(f"scripted HTTP {turn.status}", "BadRequestError", turn.status)
            return turn.status, body, turn.headers, turn.delay

        text = generated_text_for(turn)
        message, finish_reason = self._parse_like_sglang(text, turn, request)
        prompt_tokens = turn.prompt_tokens if turn.prompt_tokens is not None else len(raw) // 4
        sent = request.get("messages")
        messages: list[Any] = sent if isinstance(sent, list) else []
        with self._lock:
            self._generated.append(text)
            cached = 0
            if self._previous is not None:
                before, before_tokens = self._previous
                if len(before) <= len(messages) and messages[: len(before)] == before:
                    cached = min(before_tokens, prompt_tokens)
            self._previous = (messages, prompt_tokens)
        if turn.cached_tokens is not None:
            cached = turn.cached_tokens
        completion_tokens = max(1, len(text) // 4)
        thought = message.get("reasoning_content") or ""
        reasoning_tokens = min(completion_tokens, len(thought) // 4)
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached} if self.cache_report else None,
            "reasoning_tokens": reasoning_tokens,
            "completion_tokens_details": (
                {"reasoning_tokens": reasoning_tokens} if reasoning_tokens else None
            ),
        }
        reply = {
            "id": uuid.uuid4().hex,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": finish_reason,
                    "matched_stop": None,
                }
            ],
            "usage": usage,
            "metadata": None,
        }
        body = json.dumps(reply, ensure_ascii=False).encode("utf-8")
        return 200, body, turn.headers, turn.delay

    def _parse_like_sglang(
        self, text: str, turn: Turn, request: dict[str, Any]
    ) -> tuple[dict[str, Any], str]:
        reasoning: str | None = None
        rest = text
        if not turn.think_in_content:
            body = text
            while body.startswith(THINK_START):
                body = body[len(THINK_START) :]
            if THINK_END in body:
                before, rest = body.split(THINK_END, 1)
            elif TOOL_CALL_START in body:
                start = body.index(TOOL_CALL_START)
                before, rest = body[:start], body[start:]
            else:
                before, rest = body, ""
            reasoning = before or None
        finish_reason = turn.finish_reason or "stop"
        tools = request.get("tools") or []
        tool_calls: list[dict[str, Any]] | None = None
        if not turn.xml_in_content and tools and "<tool_call>" in rest:
            normal, calls = parse_tool_calls(rest, tools)
            rest = normal
            if calls:
                tool_calls = [
                    {
                        "id": f"call_{uuid.uuid4().hex[:24]}",
                        "index": index,
                        "type": "function",
                        "function": {
                            "name": name,
                            "arguments": json.dumps(arguments, ensure_ascii=False),
                        },
                    }
                    for index, (name, arguments) in enumerate(calls)
                ]
                if finish_reason == "stop":
                    finish_reason = "tool_calls"
        message: dict[str, Any] = {
            "role": "assistant",
            "content": rest or "",
            "reasoning_content": reasoning,
        }
        if tool_calls is not None:
            message["tool_calls"] = tool_calls
        return message, finish_reason


def _error_body(message: str, kind: str, code: int) -> bytes:
    """SGLang's error shape (`serving_base.create_error_response`)."""
    error = {"object": "error", "message": message, "type": kind, "param": None, "code": code}
    return json.dumps(error).encode()
