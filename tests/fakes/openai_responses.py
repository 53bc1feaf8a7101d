"""A loopback OpenAI Responses API (POST /v1/responses, streamed as server-sent events) that plays a ToolScript:
what Codex needs to run one MCP tool call against a fake model."""
from __future__ import annotations

import json
from typing import Any

from fakes.model_server import FakeModelServer, Reply, Seen


def _output_text(output: Any) -> str:
    """A function_call_output's output: a string, or a list of content items whose texts are joined."""
    if isinstance(output, list):
        return "\n".join(part.get("text", "") for part in output if isinstance(part, dict))
    if isinstance(output, dict):  # older clients: {"content": ..., "success": ...}
        return _output_text(output.get("content", ""))
    return str(output)


def _tool_result_text(items: list[dict], call_id: str) -> str | None:
    for item in items:
        if item.get("type") == "function_call_output" and item.get("call_id") == call_id:
            return _output_text(item.get("output"))
    return None


def _tool_names(tools: list[dict]) -> dict[str, tuple[str | None, str]]:
    """Every function offered, by full name -> (namespace, name): Codex groups each MCP server's tools in a
    ``namespace`` tool (``mcp__<server>``), and a call to one of them names both."""
    names: dict[str, tuple[str | None, str]] = {}
    for tool in tools:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools", []):
                names[f"{tool['name']}__{inner['name']}"] = (tool["name"], inner["name"])
        elif "name" in tool:
            names[tool["name"]] = (None, tool["name"])
    return names


class ResponsesFake(FakeModelServer):
    def handle(self, seen: Seen) -> Reply:
        path = seen.path.split("?")[0]
        if seen.method == "POST" and path.endswith("/responses"):
            return self._respond(seen.body)
        if seen.method == "GET" and path.endswith("/models"):
            return Reply(body={"object": "list", "data": [], "models": []})
        return Reply(404, {"error": {"type": "not_found", "message": f"no {seen.method} {path} here"}})

    def _respond(self, request: dict) -> Reply:
        items = request.get("input") or []
        offered = _tool_names(request.get("tools") or [])
        move, what = self.script.next_move(list(offered),
                                           _tool_result_text(items if isinstance(items, list) else [],
                                                             self.script.call_id))
        n = next(self.ids)
        if move == "call":
            name, arguments = what
            namespace, short = offered[name]
            item = {"type": "function_call", "id": f"fc_fake_{n}", "call_id": self.script.call_id, "name": short,
                    "arguments": json.dumps(arguments), "status": "completed"}
            if namespace:
                item["namespace"] = namespace
        else:
            item = {"type": "message", "id": f"msg_fake_{n}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": what, "annotations": []}]}
        return Reply(events=_stream(f"resp_fake_{n}", request.get("model", "fake"), item))


def _stream(response_id: str, model: str, item: dict) -> list[tuple[str, Any]]:
    """One output item as a Responses event stream: created, item added, (text delta), item done, completed."""
    usage = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 7,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 19}
    shell = {"id": response_id, "object": "response", "model": model, "status": "in_progress", "output": []}
    events = [("response.created", {"type": "response.created", "response": shell}),
              ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                              "item": {**item, "status": "in_progress"}})]
    if item["type"] == "message":
        events.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                                      "output_index": 0, "content_index": 0,
                                                      "delta": item["content"][0]["text"]}))
    done = {**shell, "status": "completed", "output": [item], "usage": usage}
    return [*events,
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": done})]
