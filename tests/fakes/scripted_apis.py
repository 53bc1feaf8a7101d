"""Loopback model APIs that play a list of scripted turns (Anthropic Messages, OpenAI Responses, Chat
Completions; plain JSON, not streamed), for the orchestrator's providers. Each turn is a tool call or a
text answer with the usage the API would report; every request is logged for the test to inspect."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fakes.model_server import FakeModelServer, Reply, Seen, ToolScript


@dataclass
class Move:
    text: str = ""
    call: tuple[str, dict[str, Any]] | None = None  # (tool name, arguments)
    input: int = 100  # prompt tokens billed in full
    output: int = 20
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    cost: float | None = None  # a provider-reported cost (Chat Completions, as OpenRouter reports it)


class Scripted(FakeModelServer):
    def __init__(self, moves: list[Move]):
        super().__init__(ToolScript(suffix="", arguments={}))  # the ToolScript is unused: the moves decide
        self.moves, self.turn = moves, 0

    def handle(self, seen: Seen) -> Reply:
        path = seen.path.split("?")[0]
        if seen.method != "POST":
            return Reply(404, {"error": {"type": "not_found", "message": path}})
        move = self.moves[min(self.turn, len(self.moves) - 1)]
        self.turn += 1
        n = self.turn
        if path.endswith("/v1/messages"):
            return Reply(body=_anthropic(move, n, seen.body))
        if path.endswith("/responses"):
            return Reply(body=_responses(move, n, seen.body))
        if path.endswith("/chat/completions"):
            return Reply(body=_chat(move, n, seen.body))
        return Reply(404, {"error": {"type": "not_found", "message": path}})


def _anthropic(move: Move, n: int, request: dict) -> dict:
    block = ({"type": "tool_use", "id": f"toolu_{n}", "name": move.call[0], "input": move.call[1]} if move.call
             else {"type": "text", "text": move.text})
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": request["model"],
            "content": [block], "stop_reason": "tool_use" if move.call else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": move.input, "output_tokens": move.output,
                      "cache_read_input_tokens": move.cache_read, "cache_creation_input_tokens": move.cache_write}}


def _responses(move: Move, n: int, request: dict) -> dict:
    items = [{"type": "reasoning", "id": f"rs_{n}", "summary": []}] if move.reasoning else []
    items.append({"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": move.call[0],
                  "arguments": json.dumps(move.call[1]), "status": "completed"} if move.call else
                 {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                  "content": [{"type": "output_text", "text": move.text, "annotations": []}]})
    return {"id": f"resp_{n}", "object": "response", "created_at": 0, "model": request["model"],
            "status": "completed", "output": items, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": move.input + move.cache_read, "output_tokens": move.output + move.reasoning,
                      "total_tokens": move.input + move.cache_read + move.output + move.reasoning,
                      "input_tokens_details": {"cached_tokens": move.cache_read},
                      "output_tokens_details": {"reasoning_tokens": move.reasoning}}}


def _chat(move: Move, n: int, request: dict) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": None if move.call else move.text}
    if move.call:
        message["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                                  "function": {"name": move.call[0], "arguments": json.dumps(move.call[1])}}]
    usage = {"prompt_tokens": move.input + move.cache_read, "completion_tokens": move.output,
             "total_tokens": move.input + move.cache_read + move.output,
             "prompt_tokens_details": {"cached_tokens": move.cache_read},
             "completion_tokens_details": {"reasoning_tokens": move.reasoning}}
    if move.cost is not None:
        usage["cost"] = move.cost
    return {"id": f"chatcmpl_{n}", "object": "chat.completion", "created": 0, "model": request["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if move.call else "stop"}],
            "usage": usage}


def sent_last(request: dict) -> str:
    """What an Anthropic Messages request's newest user message says: its tool results and text, joined."""
    content = request["messages"][-1]["content"]
    parts = [block.get("content") if block["type"] == "tool_result" else block.get("text") for block in content] \
        if isinstance(content, list) else [content]
    return "\n".join(part for part in parts if isinstance(part, str))


class Reacting(Scripted):
    """An Anthropic model that can only act on what it is sent: ``policy(last, request)`` picks each move
    from the newest user message's text (``last``) and the whole request."""

    def __init__(self, policy):
        super().__init__([])
        self.policy = policy
        self.on_turn = None  # called with the turn's number before the policy answers (a person acting meanwhile)

    def handle(self, seen: Seen) -> Reply:
        if seen.method != "POST" or not seen.path.split("?")[0].endswith("/v1/messages"):
            return Reply(404, {"error": {"type": "not_found", "message": seen.path}})
        self.turn += 1
        if self.on_turn:
            self.on_turn(self.turn)
        return Reply(body=_anthropic(self.policy(sent_last(seen.body), seen.body), self.turn, seen.body))
