"""OpenAI's Responses API, and Chat Completions for any OpenAI-compatible server (vLLM, llama.cpp, Ollama,
OpenRouter) by base URL, both through the official ``openai`` package, with function tools. Each keeps
the conversation in its API's own form (Responses: input items, the model's output items appended whole,
reasoning items included; Chat: the message list).

Prompt caching is automatic on OpenAI for prompts over 1,024 tokens; the Responses session also names a
``prompt_cache_key`` (from the system prompt, the same in every session of a run) so that a run's requests
are routed to the same cache. Chat Completions servers vary too much to be sent a field they may refuse."""
from __future__ import annotations

import hashlib
from typing import Any

from kernel_mcp.agent.providers.base import ToolCall, ToolResult, ToolSpec, Turn, Usage, arguments_of, priced


def _client(api_key: str | None, base_url: str | None):
    import openai
    # a local server needs no key, but the package insists on one
    return openai.OpenAI(api_key=api_key or ("local" if base_url else None), base_url=base_url, max_retries=3)


class ResponsesSession:
    def __init__(self, model: str, system: str, tools: list[ToolSpec], api_key: str | None = None,
                 base_url: str | None = None):
        self.client, self.model, self.system = _client(api_key, base_url), model, system
        self.tools = [{"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters}
                      for t in tools]
        self.items: list[dict[str, Any]] = []
        self.cache_key = hashlib.sha256(system.encode()).hexdigest()[:32]

    def send(self, text: str | None = None, results: list[ToolResult] | None = None) -> Turn:
        self.items += [{"type": "function_call_output", "call_id": r.call_id, "output": r.content}
                       for r in results or []]
        if text:
            self.items.append({"role": "user", "content": text})
        # nothing stored server-side: a reasoning model's reasoning items come back encrypted, to be sent
        # again with the next turn (they cannot be referred to by id when store=False)
        reply = self.client.responses.create(model=self.model, instructions=self.system, input=self.items,
                                             tools=self.tools, store=False, include=["reasoning.encrypted_content"],
                                             prompt_cache_key=self.cache_key)
        output = [item.model_dump(exclude_none=True) for item in reply.output]
        self.items += output
        texts = [part.get("text", "") for item in output if item["type"] == "message"
                 for part in item.get("content", []) if part.get("type") == "output_text"]
        calls = [ToolCall(id=item["call_id"], name=item["name"], arguments=arguments_of(item.get("arguments")))
                 for item in output if item["type"] == "function_call"]
        u = reply.usage
        usage = Usage(basis="unavailable") if u is None else Usage(
            input=u.input_tokens - _get(u.input_tokens_details, "cached_tokens"), output=u.output_tokens,
            cache_read=_get(u.input_tokens_details, "cached_tokens"),
            reasoning=_get(u.output_tokens_details, "reasoning_tokens"))
        return priced(Turn(text="".join(texts), tool_calls=calls, stop=reply.status or "", model=reply.model,
                           usage=usage, response_id=reply.id), "openai")


class ChatSession:
    def __init__(self, model: str, system: str, tools: list[ToolSpec], api_key: str | None = None,
                 base_url: str | None = None, provider: str = "openai-compatible"):
        self.client, self.model, self.provider = _client(api_key, base_url), model, provider
        self.tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                        "parameters": t.parameters}} for t in tools]
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}]

    def send(self, text: str | None = None, results: list[ToolResult] | None = None) -> Turn:
        self.messages += [{"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in results or []]
        if text:
            self.messages.append({"role": "user", "content": text})
        reply = self.client.chat.completions.create(model=self.model, messages=self.messages, tools=self.tools)
        choice = reply.choices[0]
        message = choice.message.model_dump(exclude_none=True)
        self.messages.append({k: v for k, v in message.items() if k in ("role", "content", "tool_calls")})
        calls = [ToolCall(id=c["id"], name=c["function"]["name"],
                          arguments=arguments_of(c["function"].get("arguments")))
                 for c in message.get("tool_calls") or []]
        u = reply.usage
        cached = _get(getattr(u, "prompt_tokens_details", None), "cached_tokens")
        usage = Usage(basis="unavailable") if u is None else Usage(
            input=(u.prompt_tokens or 0) - cached, output=u.completion_tokens or 0, cache_read=cached,
            reasoning=_get(getattr(u, "completion_tokens_details", None), "reasoning_tokens"))
        turn = priced(Turn(text=message.get("content") or "", tool_calls=calls, stop=choice.finish_reason or "",
                           model=reply.model or self.model, usage=usage, response_id=reply.id or ""), self.provider)
        reported = (u.model_extra or {}).get("cost") if u is not None else None  # OpenRouter reports one
        turn.reported_cost_usd = float(reported) if isinstance(reported, (int, float)) else None
        return turn


def _get(details, name: str) -> int:
    return int(getattr(details, name, 0) or 0) if details is not None else 0
