"""Model providers behind one interface (``base.Session``): ``open_session("anthropic:MODEL" |
"openai:MODEL" | "openai-compatible:URL#MODEL", system, tools)``. API keys come from the usual variables
(ANTHROPIC_API_KEY, OPENAI_API_KEY) and stay in this process: candidate code runs in processes started
without them (worker/isolation/sandbox.py)."""
from __future__ import annotations

import os

from kernel_mcp.agent.providers.base import Session, ToolSpec

# imports inside functions: a provider's SDK (anthropic, openai) is imported only when a run uses that provider

KINDS = "anthropic:MODEL, openai:MODEL, openai-compatible:URL#MODEL"


def open_session(spec: str, system: str, tools: list[ToolSpec]) -> Session:
    kind, _, rest = spec.partition(":")
    if kind == "anthropic" and rest:
        from kernel_mcp.agent.providers.anthropic_api import AnthropicSession
        return AnthropicSession(rest, system, tools, base_url=os.environ.get("ANTHROPIC_BASE_URL"))
    if kind == "openai" and rest:
        from kernel_mcp.agent.providers.openai_api import ResponsesSession
        return ResponsesSession(rest, system, tools, base_url=os.environ.get("OPENAI_BASE_URL"))
    if kind == "openai-compatible" and "#" in rest:
        from kernel_mcp.agent.providers.openai_api import ChatSession
        url, _, model = rest.rpartition("#")
        return ChatSession(model, system, tools, api_key=os.environ.get("OPENAI_API_KEY"), base_url=url)
    raise ValueError(f"unknown agent {spec!r}: use one of {KINDS}")
