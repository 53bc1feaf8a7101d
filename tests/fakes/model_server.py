"""What the model fakes share: a threaded HTTP server bound to 127.0.0.1 that logs every request, and the
script the fake "model" plays (call one MCP tool, then answer once the tool's result comes back)."""
from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """What a fake sends back: a JSON body, or (when ``events`` is set) a server-sent event stream."""
    status: int = 200
    body: Any = None
    events: list[tuple[str | None, Any]] | None = None  # (event name or None, JSON data)


@dataclass
class Seen:
    """One request as the fake received it."""
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class ToolScript:
    """The whole 'model': the first turn that offers a tool named ``*<suffix>`` calls it with ``arguments``;
    the turn that carries that call's result gets ``answer``. Everything else gets a short harmless text."""
    suffix: str
    arguments: dict[str, Any]
    answer: str = "Done: the evaluation came back."
    call_id: str = "call_kernel_mcp_1"
    tool_name: str | None = None  # the client's name for the tool, learned from the first request offering it
    tool_result: str | None = None  # the text the client sent back as the tool's result
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def pick_tool(self, names: list[str]) -> str | None:
        matches = [name for name in names if name.endswith(self.suffix)]
        return matches[0] if matches else None

    def next_move(self, tool_names: list[str], result: str | None) -> tuple[str, Any]:
        """('call', (name, arguments)) | ('answer', text) | ('chat', text): one decision per request."""
        with self.lock:
            if result is not None:
                self.tool_result = result
                return "answer", self.answer
            name = self.pick_tool(tool_names)
            if name is None or self.tool_result is not None:
                return "chat", "OK."
            self.tool_name = name
            return "call", (name, self.arguments)


class FakeModelServer:
    """Serve ``handle(Seen) -> Reply`` on 127.0.0.1 at a free port, in a daemon thread, for a ``with`` block."""

    def __init__(self, script: ToolScript):
        self.script = script  # what the fake "model" does, whichever API it speaks
        self.ids = itertools.count(1)  # for the message/response ids the API returns
        self.requests: list[Seen] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 (http.server's naming)
                self._serve(None)

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
                self._serve(body)

            def _serve(self, body):
                seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                fake.requests.append(seen)
                try:
                    reply = fake.handle(seen)
                except Exception as exc:  # a bug in the fake must show up in the test, not hang the client
                    reply = Reply(500, {"error": {"type": "fake_error", "message": repr(exc)}})
                self._send(reply)

            def _send(self, reply: Reply):
                if reply.events is not None:
                    payload = "".join((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n"
                                      for name, data in reply.events).encode()
                    kind = "text/event-stream"
                else:
                    payload, kind = json.dumps(reply.body).encode(), "application/json"
                self.send_response(reply.status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):  # keep pytest output clean; requests are in fake.requests
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def handle(self, seen: Seen) -> Reply:
        raise NotImplementedError

    def summary(self) -> str:
        """The request log in one line per request, for assertion messages: the tools each offered first (a client
        that has not connected its MCP servers yet offers none of theirs), then the start of its body."""
        return "\n".join(f"{r.method} {r.path} tools={_tool_names(r.body)} {str(r.body)[:300]}" for r in self.requests)

    def __enter__(self) -> FakeModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _tool_names(body) -> list[str]:
    """The names of the tools a request offered (Anthropic's and OpenAI's layouts), [] for any other body."""
    tools = body.get("tools") if isinstance(body, dict) else None
    return [tool.get("name") or (tool.get("function") or {}).get("name", "?") for tool in tools or []
            if isinstance(tool, dict)]
