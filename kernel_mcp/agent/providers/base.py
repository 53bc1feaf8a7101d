"""The one small interface every model provider implements (docs/orchestrator.md, "Providers"): a session that
keeps its own conversation in its API's native form, and ``send`` -> ``Turn``: the model's text, the tool
calls it asks for, why it stopped, and what the turn cost.

Token counts are normalised so that a turn's cost is one formula whatever the API:

* ``input``: prompt tokens billed at the full input rate (OpenAI's ``input_tokens`` less the cached ones;
  Anthropic's ``input_tokens`` already excludes cache reads and writes);
* ``cache_read`` / ``cache_write``: prompt tokens read from / written to the provider's prompt cache;
* ``output``: generated tokens, reasoning included (billed at the output rate); ``reasoning`` says how many
  of them were reasoning, for the report only.
"""
from __future__ import annotations

import json
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from kernel_mcp.agent.providers.pricing import Price, price_of


class Usage(BaseModel):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    basis: Literal["exact", "partial", "unavailable"] = "exact"  # the API reported all, some, or none

    def cost_usd(self, price: Price | None) -> float | None:
        """What these tokens cost at ``price`` (USD per million tokens); None when unpriced, never 0."""
        if price is None or self.basis == "unavailable":
            return None
        return (self.input * price.input + self.output * price.output + self.cache_read * price.cache_read
                + self.cache_write * price.cache_write) / 1e6


class ToolSpec(BaseModel):
    """A tool offered to the model: a name, what it does, and its arguments' JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


class ToolCall(BaseModel):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResult(BaseModel):
    call_id: str
    content: str
    is_error: bool = False


class Turn(BaseModel):
    """One model turn."""

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    stop: str = ""  # the API's stop reason, as it said it
    model: str = ""
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None  # from the pricing table; None: unpriced
    reported_cost_usd: float | None = None  # what the provider itself reported, when it does
    cost_basis: Literal["api", "imputed", "subscription", "local"] = "api"
    response_id: str = ""


class Session(Protocol):
    """One conversation with a model: the system text and the tools are fixed when it starts."""

    def send(self, text: str | None = None, results: list[ToolResult] | None = None) -> Turn: ...


def priced(turn: Turn, provider: str) -> Turn:
    """``turn`` with its cost from the pricing table."""
    turn.cost_usd = turn.usage.cost_usd(price_of(provider, turn.model))
    return turn


def arguments_of(raw: str | dict | None) -> dict[str, Any]:
    """A tool call's arguments: a dict, or the JSON text some APIs send; text that is not a JSON object is
    kept whole under ``_raw`` so the loop can tell the model its call was malformed."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": raw}
