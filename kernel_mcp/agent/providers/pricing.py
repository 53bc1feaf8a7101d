"""What a model's tokens cost, USD per million tokens, from a versioned table; a model missing from it is
*unpriced* (its turns are counted apart), never $0.

The table lists only prices read on the provider's own pricing page (source and date below). More, or
newer, prices can be added without a release: a JSON file named by ``KERNEL_MCP_PRICES`` with rows
``{"provider:model": {"input": .., "output": .., "cache_read": .., "cache_write": ..}}`` overrides and
extends it (OpenAI's rows come only from there today: its page could not be read where this was
built). A dated model id (``claude-opus-4-5-20251101``, ``gpt-5-2025-08-07``) takes its family's row.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

PRICES_VERSION = "2026-12-01"
SOURCES = {"anthropic": "https://platform.claude.com/docs/en/about-claude/pricing (read 2026-12-01)"}
PRICES_VAR = "KERNEL_MCP_PRICES"


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0  # Anthropic: the 5-minute cache write (what the API writes unless asked)


def _anthropic(input: float, write: float, read: float, output: float) -> Price:  # noqa: A002
    return Price(input=input, output=output, cache_read=read, cache_write=write)


TABLE: dict[str, Price] = {
    # Anthropic's pricing page: base input, 5-minute cache write, cache hit, output
    "anthropic:claude-fable-5-1": _anthropic(10, 12.50, 0.25, 50),
    "anthropic:claude-mythos-5-1": _anthropic(10, 12.50, 0.25, 50),
    "anthropic:claude-fable-5": _anthropic(10, 12.50, 1.00, 50),
    "anthropic:claude-mythos-5": _anthropic(10, 12.50, 1.00, 50),
    "anthropic:claude-opus-5": _anthropic(5, 6.25, 0.50, 25),
    "anthropic:claude-opus-4-8": _anthropic(5, 6.25, 0.50, 25),
    "anthropic:claude-opus-4-7": _anthropic(5, 6.25, 0.50, 25),
    "anthropic:claude-opus-4-6": _anthropic(5, 6.25, 0.50, 25),
    "anthropic:claude-opus-4-5": _anthropic(5, 6.25, 0.50, 25),
    "anthropic:claude-opus-4-1": _anthropic(15, 18.75, 1.50, 75),
    "anthropic:claude-opus-4": _anthropic(15, 18.75, 1.50, 75),
    "anthropic:claude-sonnet-4": _anthropic(3, 3.75, 0.30, 15),
    "anthropic:claude-3-5-haiku": _anthropic(0.80, 1.00, 0.08, 4),
}


def _family(model: str) -> str:
    """``claude-opus-4-5-20251101`` -> ``claude-opus-4-5``, ``gpt-5-2025-08-07`` -> ``gpt-5``: a date suffix
    (Anthropic's YYYYMMDD, OpenAI's YYYY-MM-DD) names a snapshot of the family."""
    return re.sub(r"-(\d{8}|\d{4}-\d{2}-\d{2})$", "", model)


def table() -> dict[str, Price]:
    rows = dict(TABLE)
    path = os.environ.get(PRICES_VAR)
    if path:
        with open(path) as handle:
            for key, row in json.load(handle).items():
                rows[key] = Price(**row)
    return rows


def price_of(provider: str, model: str) -> Price | None:
    rows = table()
    return rows.get(f"{provider}:{model}") or rows.get(f"{provider}:{_family(model)}")
