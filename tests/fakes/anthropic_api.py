"""A loopback Anthropic Messages API (POST /v1/messages, streaming or not; POST /v1/messages/count_tokens) that
plays a ToolScript: what Claude Code needs to run one MCP tool call against a fake model."""
from __future__ import annotations

import json
from typing import Any

from fakes.model_server import FakeModelServer, Reply, Seen

USAGE = {"input_tokens": 12, "output_tokens": 7, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _tool_result_text(messages: list[dict], call_id: str) -> str | None:
    """The text of the tool_result block answering ``call_id``, if the conversation has one."""
    for message in messages:
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                inner = block.get("content")
                if isinstance(inner, list):
                    return "\n".join(part.get("text", "") for part in inner if part.get("type") == "text")
                return inner or ""
    return None


class AnthropicFake(FakeModelServer):
    def handle(self, seen: Seen) -> Reply:
        path = seen.path.split("?")[0]
        if seen.method == "POST" and path == "/v1/messages/count_tokens":
            return Reply(body={"input_tokens": 100})
        if seen.method == "POST" and path == "/v1/messages":
            return self._messages(seen.body)
        return Reply(404, {"type": "error", "error": {"type": "not_found_error", "message": f"no {path} here"}})

    def _messages(self, request: dict) -> Reply:
        tools = [tool.get("name", "") for tool in request.get("tools") or []]
        move, what = self.script.next_move(tools, _tool_result_text(request["messages"], self.script.call_id))
        if move == "call":
            name, arguments = what
            block = {"type": "tool_use", "id": self.script.call_id, "name": name, "input": arguments}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": what}
            stop = "end_turn"
        message = {"id": f"msg_fake_{next(self.ids)}", "type": "message", "role": "assistant",
                   "model": request.get("model", "fake"), "content": [block], "stop_reason": stop,
                   "stop_sequence": None, "usage": USAGE}
        if request.get("stream"):
            return Reply(events=_stream(message))
        return Reply(body=message)


def _stream(message: dict) -> list[tuple[str, Any]]:
    """The same message as the SSE events of a streamed response, its one block sent as deltas."""
    block = message["content"][0]
    if block["type"] == "tool_use":
        start = {**block, "input": {}}
        text = json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": text[i:i + 20]} for i in range(0, len(text), 20)]
    else:
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block["text"]}]
    head = {**message, "content": [], "stop_reason": None, "usage": {**USAGE, "output_tokens": 1}}
    return [("message_start", {"type": "message_start", "message": head}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
            ("ping", {"type": "ping"}),
            *[("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d}) for d in deltas],
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                               "usage": {"output_tokens": USAGE["output_tokens"]}}),
            ("message_stop", {"type": "message_stop"})]
