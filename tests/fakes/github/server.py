"""The fake GitHub: the HTTP server, routing, schema validation and fault injection."""

from __future__ import annotations

import contextlib
import copy
import json
import re
import secrets
import socket
import threading
import time
import traceback
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from tests.fakes.github.checks import _Checks
from tests.fakes.github.gitdata import _GitData
from tests.fakes.github.manifests import NEW_APP_PAGE, _Manifests
from tests.fakes.github.model import (
    DOCS,
    SECONDARY_RATE_LIMIT_MESSAGE,
    HTTPError,
    Recorded,
    ValidationFailure,
    _error,
    _Fault,
    _Request,
    _Response,
)
from tests.fakes.github.spec import _Operation, _pointer
from tests.fakes.github.tarballs import _Tarballs


class FakeGitHub(_Manifests, _Checks, _GitData, _Tarballs):
    """The fake GitHub. All state is in memory and lives as long as the object."""

    # ---- lifecycle ----------------------------------------------------------------

    def start(self) -> FakeGitHub:
        fake = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False
            allow_reuse_address = True

            def get_request(self) -> tuple[socket.socket, Any]:
                sock, addr = super().get_request()
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with fake._lock:
                    fake._sockets.add(sock)
                return sock, addr

            def shutdown_request(self, request: Any) -> None:
                with fake._lock:
                    fake._sockets.discard(request)
                super().shutdown_request(request)

        self._server = Server(("127.0.0.1", 0), _make_handler(self))
        port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        with self._lock:
            for sock in list(self._sockets):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- faults and inspection -----------------------------------------------------

    def fail_next(
        self,
        method: str,
        path_regex: str,
        *,
        status: int = 502,
        times: int = 1,
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        """Answer the next `times` requests matching `method` ("*" for any) and `path_regex`
        (`re.search` on the path, no query) with `status`. Defaults: 403 and 429 get the
        secondary-rate-limit message and `Retry-After: 1`; others `{"message": "Server Error"}`.
        Pass `headers={}` for no Retry-After. Requests still pass schema validation first."""
        if body is None:
            if status in (403, 429):
                body = {"message": SECONDARY_RATE_LIMIT_MESSAGE, "documentation_url": DOCS}
            else:
                body = {"message": "Server Error"}
        if headers is None:
            headers = {"Retry-After": "1"} if status in (403, 429) else {}
        with self._lock:
            self._faults.append(
                _Fault(method.upper(), re.compile(path_regex), status, times, headers, body)
            )

    def requests_to(self, method: str, path_regex: str) -> list[Recorded]:
        """The recorded requests with this method whose path matches (re.search)."""
        rx = re.compile(path_regex)
        return [r for r in self.requests if r.method == method.upper() and rx.search(r.path)]

    def assert_clean(self) -> None:
        """Fail if any request broke its schema (or a response the fake built did)."""
        problems = [*self.validation_errors, *self.response_errors]
        lines = [f"{p.where} {p.method} {p.path}: {p.message}" for p in problems]
        lines += [f"server error:\n{tb}" for tb in self.server_errors]
        if lines:
            raise AssertionError("fake GitHub saw schema violations:\n" + "\n".join(lines))

    # ---- request handling ------------------------------------------------------------

    def _route(self, method: str, path: str) -> tuple[_Operation, dict[str, str]] | None:
        for op in self._spec.operations:
            if op.method != method:
                continue
            m = op.regex.match(path)
            if m:
                return op, {k: urllib.parse.unquote(v) for k, v in m.groupdict().items()}
        return None

    def _validate_request(  # noqa: PLR0912 - query and body rules side by side
        self, op: _Operation, path: str, query: dict[str, list[str]], body: Any, has_body: bool
    ) -> str | None:
        """Returns the 422 message for the first violation, after recording every one."""
        problems: list[tuple[str, str]] = []
        doc = self._spec.document
        item = doc["paths"][op.template]
        params = [
            self._spec.resolve(p)
            for p in [*item.get("parameters", []), *op.op.get("parameters", [])]
        ]
        for p in params:
            if p["in"] != "query" or p["name"] not in query:
                continue
            schema = p.get("schema", {})
            raw = query[p["name"]][-1]
            value: Any = raw
            kind = schema.get("type")
            kinds = kind if isinstance(kind, list) else [kind]
            try:
                if "integer" in kinds:
                    value = int(raw)
                elif "boolean" in kinds:
                    value = {"true": True, "false": False}[raw]
            except (ValueError, KeyError):
                problems.append(("query", f"{p['name']}: {raw!r} is not of type {kind!r}"))
                continue
            errors = list(Draft202012Validator(schema).iter_errors(value))
            if errors:
                problems.append(("query", f"{p['name']}: {best_match(errors).message}"))
        rb = op.op.get("requestBody")
        if rb is not None and "application/json" in rb.get("content", {}):
            if not has_body:
                if rb.get("required"):
                    problems.append(("body", "a JSON request body is required"))
            else:
                validator = self._spec.validator(
                    op.pointer + "/requestBody/content/application~1json/schema"
                )
                errors = sorted(validator.iter_errors(body), key=lambda e: list(e.path))
                if errors:
                    best = best_match(errors)
                    where = "/".join(str(x) for x in best.absolute_path) or "(root)"
                    problems.append(("body", f"For '{where}', {best.message}"))
        elif has_body and body is not None and op.method in ("GET", "DELETE"):
            pass  # GitHub ignores bodies on these
        for where, message in problems:
            self.validation_errors.append(
                ValidationFailure(op.method, path, op.operation_id, where, message)
            )
        if problems:
            return "Invalid request.\n\n" + "\n".join(m for _, m in problems)
        return None

    def _validate_response(self, op: _Operation, path: str, resp: _Response) -> None:
        if not self.validate_responses or resp.body is None:
            return
        responses = op.op["responses"]
        entry = responses.get(str(resp.status))
        if entry is None:
            if 200 <= resp.status < 300:
                self.response_errors.append(
                    ValidationFailure(
                        op.method, path, op.operation_id, "response", f"undocumented {resp.status}"
                    )
                )
            return
        pointer = op.pointer + _pointer("responses", str(resp.status))
        entry = self._spec.resolve(entry)
        if "$ref" in responses[str(resp.status)]:
            pointer = responses[str(resp.status)]["$ref"][1:]
        if "application/json" not in entry.get("content", {}):
            return
        validator = self._spec.validator(pointer + "/content/application~1json/schema")
        for err in validator.iter_errors(resp.body):
            where = "/".join(str(x) for x in err.absolute_path) or "(root)"
            self.response_errors.append(
                ValidationFailure(
                    op.method, path, op.operation_id, "response", f"{where}: {err.message}"
                )
            )

    def handle(
        self, method: str, raw_path: str, headers: dict[str, str], raw_body: bytes
    ) -> _Response:
        parsed = urllib.parse.urlsplit(raw_path)
        path = parsed.path
        query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
        if NEW_APP_PAGE.match(path):  # a web page (form post), not the API
            with self._lock:
                self.requests.append(record := Recorded(method, path, query, headers, None))
                resp = self._new_app_page(method, path, query, headers, raw_body)
                record.status = resp.status
            return resp
        body: Any = None
        bad_json = False
        if raw_body:
            try:
                body = json.loads(raw_body)
            except ValueError:
                bad_json = True
        record = Recorded(method, path, query, headers, body)
        with self._lock:
            self.requests.append(record)
            try:
                resp = self._dispatch(record, has_body=bool(raw_body), bad_json=bad_json)
            except HTTPError as exc:
                resp = _Response(exc.status, exc.body, exc.headers)
            except Exception as exc:  # a bug in the fake: answer 500 and make it visible
                self.server_errors.append(traceback.format_exc())
                resp = _Response(500, {"message": f"fake GitHub failed: {exc!r}"})
            record.status = resp.status
        return resp

    def _dispatch(
        self,
        record: Recorded,
        *,
        has_body: bool,
        bad_json: bool,
    ) -> _Response:
        method, path, query, headers, body = (
            record.method,
            record.path,
            record.query,
            record.headers,
            record.json,
        )
        if path.startswith("/_codeload/"):
            return self._codeload(path, query)
        routed = self._route(method, path)
        if routed is None:
            self._maybe_fault(method, path)
            raise _error(404, "Not Found")
        op, params = routed
        record.operation_id = op.operation_id
        if bad_json:
            raise HTTPError(400, {"message": "Problems parsing JSON", "documentation_url": DOCS})
        invalid = self._validate_request(op, path, query, body, has_body)
        if invalid is not None:
            raise HTTPError(
                422,
                {
                    "message": invalid,
                    "documentation_url": op.op.get("externalDocs", {}).get("url", DOCS),
                    "status": "422",
                },
            )
        self._maybe_fault(method, path)
        identity = self._authenticate(headers, op)
        req = _Request(method, path, query, headers, body, params, op, identity)
        handler: Callable[[_Request], _Response] = getattr(
            self, "_op_" + op.operation_id.replace("/", "__").replace("-", "_")
        )
        resp = handler(req)
        self._validate_response(op, path, resp)
        return resp

    def _maybe_fault(self, method: str, path: str) -> None:
        for fault in self._faults:
            if fault.method in ("*", method) and fault.regex.search(path):
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
                raise HTTPError(fault.status, copy.deepcopy(fault.body), dict(fault.headers))


def _make_handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "GitHub.com"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            resp = fake.handle(self.command, self.path, headers, raw)
            if fake.latency:
                time.sleep(fake.latency)
            if resp.raw is not None:
                payload = resp.raw
            elif resp.body is None:
                payload = b""
            else:
                payload = json.dumps(resp.body).encode()
            self.send_response(resp.status)
            sent = {k.lower() for k in resp.headers}
            if "content-type" not in sent and (payload or resp.body is not None):
                self.send_header("Content-Type", "application/json; charset=utf-8")
            for key, value in {
                "X-GitHub-Media-Type": "github.v3; format=json",
                "X-GitHub-Api-Version-Selected": "2022-11-28",
                "X-RateLimit-Limit": "5000",
                "X-RateLimit-Remaining": "4999",
                "X-RateLimit-Used": "1",
                "X-RateLimit-Reset": str(int(time.time()) + 3600),
                "X-RateLimit-Resource": "core",
                "X-GitHub-Request-Id": secrets.token_hex(8).upper(),
            }.items():
                if key.lower() not in sent:
                    self.send_header(key, value)
            for key, value in resp.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _serve

    return Handler
