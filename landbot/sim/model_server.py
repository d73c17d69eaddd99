"""A scripted model server: plays an AI model for the fixer's tests and `landbot demo`.

    script = ModelScript(
        commands=["echo fixed > app.py && git commit -qam 'Fix app'"],
        verdict={"verdict": "fixed", "summary": "…", "recommendation": "", "reproduced": True},
    )
    with ScriptedModelServer(script) as server:
        server.url        # http://127.0.0.1:PORT/v1, the `[fixer] model_url` to configure
        ...               # run the agent
        server.requests   # every request, with its headers and body

It speaks OpenAI's Responses API as Codex uses it (`POST /v1/responses`, `stream: true`,
answered with server-sent events): while the request's conversation holds fewer tool results
(`function_call_output` items) than the script has commands, the answer is one
`function_call` to `exec_command` running the next command; after that, a final assistant
`message` whose text is the verdict. The step is read from the request itself, not from
server state, so a client that retries a request gets the same answer. Standard library
only, one thread; it listens on the host's loopback.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

MAX_BODY = 32 * 1024 * 1024


@dataclass(frozen=True)
class ModelScript:
    """What the model does: run `commands` one tool call at a time, then answer `verdict`
    (a mapping is sent as its JSON text, a string verbatim)."""

    commands: Sequence[str] = ()
    verdict: Mapping[str, Any] | str = field(
        default_factory=lambda: {
            "verdict": "needs_human",
            "summary": "the scripted model has nothing to say",
            "recommendation": "",
            "reproduced": False,
        }
    )

    @property
    def final_text(self) -> str:
        return self.verdict if isinstance(self.verdict, str) else json.dumps(dict(self.verdict))


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def raw(self) -> str:
        """Headers and body as text: what a test greps for a leaked secret."""
        head = "\n".join(f"{k}: {v}" for k, v in self.headers)
        return f"{self.method} {self.path}\n{head}\n\n{self.body.decode(errors='replace')}"


def tool_results(body: Any) -> int:
    """How many tool results (`function_call_output` items) a Responses request carries."""
    items = body.get("input") if isinstance(body, dict) else None
    if not isinstance(items, list):
        return 0
    return sum(
        1 for it in items if isinstance(it, dict) and it.get("type") == "function_call_output"
    )


def next_item(script: ModelScript, body: Any, response_id: str) -> dict[str, Any]:
    """The output item answering `body` (pure): the next tool call, or the final message."""
    step = tool_results(body)
    if step < len(script.commands):
        return {
            "type": "function_call",
            "id": f"fc_{response_id}",
            "call_id": f"call_{step + 1}",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": script.commands[step]}),
            "status": "completed",
        }
    return {
        "type": "message",
        "id": f"msg_{response_id}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": script.final_text, "annotations": []}],
    }


def _usage(body: bytes, item: Mapping[str, Any]) -> dict[str, Any]:
    # Rough token counts (4 bytes a token): clients only need the fields to be there.
    inp = max(1, len(body) // 4)
    out = max(1, len(json.dumps(item)) // 4)
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": inp + out,
    }


def sse_events(response_id: str, item: Mapping[str, Any], usage: Mapping[str, Any]) -> bytes:
    """The server-sent events of one streamed response carrying one output item."""
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "response.created",
            {"response": {"id": response_id, "object": "response", "status": "in_progress"}},
        ),
        ("response.output_item.done", {"output_index": 0, "item": dict(item)}),
        (
            "response.completed",
            {
                "response": {
                    "id": response_id,
                    "object": "response",
                    "status": "completed",
                    "output": [dict(item)],
                    "usage": dict(usage),
                }
            },
        ),
    ]
    out = []
    for name, data in events:
        payload = json.dumps({"type": name, **data})
        out.append(f"event: {name}\ndata: {payload}\n\n")
    return "".join(out).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: ScriptedModelServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass  # the tests read `requests`, not stderr

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(min(length, MAX_BODY)) if length else b""

    def _send(self, code: int, body: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        body = self._body()
        owner = self.server.owner
        owner._record(RecordedRequest(self.command, self.path, tuple(self.headers.items()), body))
        path = self.path.split("?", 1)[0]
        if self.command != "POST" or not path.endswith("/responses"):
            self._send(
                404, b'{"error": {"message": "not a scripted endpoint"}}', "application/json"
            )
            return
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            self._send(400, b'{"error": {"message": "body is not JSON"}}', "application/json")
            return
        response_id = f"resp_{owner._next_id()}"
        item = next_item(owner.script, request, response_id)
        usage = _usage(body, item)
        if isinstance(request, dict) and request.get("stream") is False:
            whole = {
                "id": response_id,
                "object": "response",
                "status": "completed",
                "output": [item],
                "usage": usage,
            }
            self._send(200, json.dumps(whole).encode(), "application/json")
            return
        self._send(200, sse_events(response_id, item, usage), "text/event-stream")

    do_GET = do_POST = do_PUT = do_DELETE = _handle


class ScriptedModelServer:
    """The scripted model on 127.0.0.1 (a free port), served by a thread."""

    def __init__(self, script: ModelScript, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.script = script
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._ids = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """The requests the script answered (POST …/responses)."""
        return [
            r
            for r in self.requests
            if r.method == "POST" and r.path.split("?", 1)[0].endswith("/responses")
        ]

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the model server is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The base URL to configure as the model endpoint (`[fixer] model_url`)."""
        return f"http://{self._host}:{self.port}/v1"

    def start(self) -> ScriptedModelServer:
        server = _Server((self._host, self._port), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
