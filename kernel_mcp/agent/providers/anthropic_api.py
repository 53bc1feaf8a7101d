"""Anthropic's Messages API with tool use, through the official ``anthropic`` package. The conversation is
kept as the API's own message list; a tool's result goes back as a ``tool_result`` block.

Prompt caching: three of the API's four cache breakpoints (``cache_control``) mark the tools, the system
prompt (the problem's statement, the same in every session of a run) and the newest message, so each turn
reads the conversation so far from the cache and pays the full input rate only for what is new.
"""
from __future__ import annotations

from typing import Any

from kernel_mcp.agent.providers.base import ToolCall, ToolResult, ToolSpec, Turn, Usage, arguments_of, priced

MAX_TOKENS = 16384  # per turn: room for a whole kernel file and the reasoning around it
CACHED = {"type": "ephemeral"}  # the default five-minute cache: turns come seconds to minutes apart


class AnthropicSession:
    def __init__(self, model: str, system: str, tools: list[ToolSpec], api_key: str | None = None,
                 base_url: str | None = None, max_tokens: int = MAX_TOKENS):
        import anthropic
        self.client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=3)
        self.model, self.system, self.max_tokens = model, system, max_tokens
        self.tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]
        if self.tools:
            self.tools[-1]["cache_control"] = CACHED
        self.system_blocks = [{"type": "text", "text": system, "cache_control": CACHED}]
        self.messages: list[dict[str, Any]] = []

    def send(self, text: str | None = None, results: list[ToolResult] | None = None) -> Turn:
        content: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": r.call_id, "content": r.content,
                                          "is_error": r.is_error} for r in results or []]
        if text:
            content.append({"type": "text", "text": text})
        for message in self.messages:  # one moving breakpoint: the newest message only
            for block in message["content"]:
                block.pop("cache_control", None)
        if content:
            content[-1]["cache_control"] = CACHED
        self.messages.append({"role": "user", "content": content})
        reply = self.client.messages.create(model=self.model, system=self.system_blocks, messages=self.messages,
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
