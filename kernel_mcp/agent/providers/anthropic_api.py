"""Anthropic's Messages API with tool use, through the official ``anthropic`` package. The conversation is
kept as the API's own message list; a tool's result goes back as a ``tool_result`` block."""
from __future__ import annotations

from typing import Any

from kernel_mcp.agent.providers.base import ToolCall, ToolResult, ToolSpec, Turn, Usage, arguments_of, priced

MAX_TOKENS = 16384  # per turn: room for a whole kernel file and the reasoning around it


class AnthropicSession:
    def __init__(self, model: str, system: str, tools: list[ToolSpec], api_key: str | None = None,
                 base_url: str | None = None, max_tokens: int = MAX_TOKENS):
        import anthropic
        self.client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=3)
        self.model, self.system, self.max_tokens = model, system, max_tokens
        self.tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]
        self.messages: list[dict[str, Any]] = []

    def send(self, text: str | None = None, results: list[ToolResult] | None = None) -> Turn:
        content: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": r.call_id, "content": r.content,
                                          "is_error": r.is_error} for r in results or []]
        if text:
            content.append({"type": "text", "text": text})
        self.messages.append({"role": "user", "content": content})
        reply = self.client.messages.create(model=self.model, system=self.system, messages=self.messages,
                                            tools=self.tools, max_tokens=self.max_tokens)
        blocks = [block.model_dump(exclude_none=True) for block in reply.content]
        self.messages.append({"role": "assistant", "content": blocks})
        return priced(Turn(text="".join(b.get("text", "") for b in blocks if b["type"] == "text"),
                           tool_calls=[ToolCall(id=b["id"], name=b["name"], arguments=arguments_of(b.get("input")))
                                       for b in blocks if b["type"] == "tool_use"],
                           stop=reply.stop_reason or "", model=reply.model, usage=_usage(reply.usage),
                           response_id=reply.id), "anthropic")


def _usage(usage) -> Usage:
    if usage is None:
        return Usage(basis="unavailable")
    details = getattr(usage, "output_tokens_details", None)
    return Usage(input=usage.input_tokens or 0, output=usage.output_tokens or 0,
                 cache_read=usage.cache_read_input_tokens or 0, cache_write=usage.cache_creation_input_tokens or 0,
                 reasoning=getattr(details, "thinking_tokens", 0) or 0)
