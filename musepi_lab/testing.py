"""A real OpenAI-compatible HTTP server on loopback, for tests and offline demos.

`StubOpenAIServer` speaks Chat Completions (`POST /v1/chat/completions`), the Responses
compact endpoint (`POST /v1/responses/compact`) and a custom remote-compaction endpoint
(`POST /compact`: `{systemPrompt, prompt, maxTokens}` → `{summary}`). Answers are
deterministic; every request body and its headers are recorded; failures can be queued:
an HTTP status (with any `Retry-After` value), a delay (for timeouts), a 200 whose body is
an arbitrary JSON value (`choices: []`, `content: null`, a refusal, `content_filter`, an
`{"error": ...}` object) or raw bytes (malformed JSON, HTML), and a 401 whose body echoes the
`Authorization` header it received, as some real endpoints do. It binds 127.0.0.1 only.

`LocalModelServer` (from `musepi_lab.llm`) is its real counterpart: a local model served by
llama-cpp-python on loopback, for the tests and demos that need a model that writes.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .llm._local import LocalModelMissing as LocalModelMissing
from .llm._local import LocalModelServer as LocalModelServer

Responder = Callable[[dict[str, Any]], str]


def default_responder(body: dict[str, Any]) -> str:
    """A deterministic summary: fixed headings and a digest of the request's last message."""
    messages = body.get("messages") or []
    last = messages[-1].get("content", "") if messages else str(body.get("prompt", ""))
    if isinstance(last, list):
        last = "".join(p.get("text", "") for p in last if isinstance(p, dict))
    digest = hashlib.sha256(str(last).encode()).hexdigest()[:12]
    return f"## Goal\nStub summary {digest}\n\n## Next Steps\n1. Continue."


@dataclass
class Failure:
    """A queued failure, served instead of the next normal answer.

    Attributes:
        status: The HTTP status. A status of 400 or more answers an error body; 200 with
            neither `body` nor `raw` is a normal answer (after `delay_s`).
        delay_s: Seconds to wait before answering (longer than the client timeout: a timeout).
        retry_after: The `Retry-After` header value, sent verbatim (`"2"`, `"-5"`, `"nan"`).
        body: A JSON value sent as the body instead of the usual one.
        raw: Bytes sent as the body instead (malformed JSON, an HTML page).
        content_type: The `content-type` of the answer.
        echo_auth: The error body repeats the `Authorization` header received.
    """

    status: int = 500
    delay_s: float = 0.0
    retry_after: str | None = None
    body: Any = None
    raw: bytes | None = None
    content_type: str = "application/json"
    echo_auth: bool = False

    @property
    def replaces_answer(self) -> bool:
        """True when this failure sends its own body rather than the normal answer."""
        return self.status >= 400 or self.body is not None or self.raw is not None


def chat_completion(
    content: Any,
    *,
    model: str = "stub-model",
    finish_reason: str | None = "stop",
    refusal: str | None = None,
    prompt_tokens: int = 0,
) -> dict[str, Any]:
    """A Chat Completions answer body with one choice (content may be None or a list)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    completion = len(content) // 4 if isinstance(content, str) else 0
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
        },
    }


def responses_compact_reply(items: list[Any]) -> dict[str, Any]:
    """The stub's `/responses/compact` answer: the user items kept, then one compaction item
    whose encrypted content is a hash of the input."""
    return {
        "id": "resp-compact-stub",
        "object": "response.compaction",
        "output": [
            *[i for i in items if isinstance(i, dict) and i.get("role") == "user"],
            {
                "type": "compaction",
                "encrypted_content": hashlib.sha256(json.dumps(items).encode()).hexdigest(),
            },
        ],
        "usage": {"input_tokens": len(json.dumps(items)) // 4, "output_tokens": 0},
    }


class _StubHandler(BaseHTTPRequestHandler):
    """Serves one `StubOpenAIServer` (set as the subclass attribute `stub`)."""

    stub: StubOpenAIServer

    def log_message(self, *args: Any) -> None:  # quiet
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "invalid JSON"}})
            return
        with self.stub._lock:
            self.stub.requests.append((self.path, body))
            self.stub.request_headers.append({k.lower(): v for k, v in self.headers.items()})
            failure = self.stub.failures.popleft() if self.stub.failures else None
        if failure is not None:
            if failure.delay_s:
                time.sleep(failure.delay_s)
            if failure.replaces_answer:
                self._fail(failure)
                return
        self._answer(body)

    def _fail(self, failure: Failure) -> None:
        headers = {"retry-after": failure.retry_after} if failure.retry_after else {}
        payload = failure.body
        if payload is None:
            message = f"injected {failure.status}"
            if failure.echo_auth:
                auth = self.headers.get("authorization", "")
                message = f"Incorrect API key provided: {auth.removeprefix('Bearer ')}"
            payload = {"error": {"message": message}}
        raw = failure.raw if failure.raw is not None else json.dumps(payload).encode()
        self._send_bytes(failure.status, raw, failure.content_type, headers)

    def _answer(self, body: dict[str, Any]) -> None:
        path = self.path.rstrip("/")
        choice = body.get("tool_choice")
        if isinstance(choice, str) and choice in self.stub.refused_tool_choices:
            message = f"tool_choice {choice!r} is not supported by this model"
            self._send(400, {"error": {"message": message, "param": "tool_choice"}})
            return
        text = self.stub.responder(body)
        if path.endswith("/chat/completions"):
            prompt_chars = sum(len(json.dumps(m)) for m in body.get("messages", []))
            self._send(
                200,
                chat_completion(
                    text,
                    model=body.get("model") or self.stub.model,
                    prompt_tokens=prompt_chars // 4,
                ),
            )
        elif path.endswith("/responses/compact"):
            self._send(200, responses_compact_reply(body.get("input") or []))
        elif path.endswith("/compact"):
            self._send(200, {"summary": text})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_bytes(
        self,
        status: int,
        data: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and went away


@dataclass
class StubOpenAIServer:
    """A threaded loopback server; use as a context manager.

    Attributes:
        responder: Makes the reply text from the JSON request body.
        requests: Every request received: `(path, json_body)`.
        failures: Failures served before normal answers, in order.
        request_headers: The headers of every request received (lower-case names).
        refused_tool_choices: `tool_choice` values answered with a 400 naming
            `tool_choice`, as providers that do not take `none` answer.
    """

    responder: Responder = default_responder
    model: str = "stub-model"
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    failures: deque[Failure] = field(default_factory=deque)
    request_headers: list[dict[str, str]] = field(default_factory=list)
    refused_tool_choices: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>/v1`."""
        if self._server is None:
            raise RuntimeError("server not started")
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    @property
    def root_url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return self.base_url[: -len("/v1")]

    def fail_next(self, *failures: Failure) -> None:
        """Queue failures for the next requests."""
        with self._lock:
            self.failures.extend(failures)

    def start(self) -> StubOpenAIServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        handler = type("Handler", (_StubHandler,), {"stub": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Shut the server down."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> StubOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
