"""The orchestrator's model providers (kernel_mcp/agent/providers) against loopback servers speaking each
API's real wire protocol through the official packages: tool calls out, tool results back in the API's
own form, usage normalised, and cost from the pricing table (an unknown model is unpriced, never $0)."""
import json

import pytest

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

from fakes.scripted_apis import Move, Scripted

from kernel_mcp.agent.providers import open_session
from kernel_mcp.agent.providers.base import ToolResult, ToolSpec, Usage
from kernel_mcp.agent.providers.pricing import Price, price_of

TOOLS = [ToolSpec(name="evaluate", description="time and check a candidate",
                  parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})]
MOVES = [Move(call=("evaluate", {"path": "k.py"}), input=1000, output=50, cache_read=4000, cache_write=2000, reasoning=30),
         Move(text="Faster by 1.3x.", input=200, output=10)]


def _two_turns(spec, monkeypatch, fake):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
    session = open_session(spec.replace("URL", fake.url + "/v1"), "You write kernels.", TOOLS)
    first = session.send("Make it faster.")
    second = session.send(results=[ToolResult(call_id=first.tool_calls[0].id, content="speedup 1.3x")])
    return first, second


@pytest.mark.parametrize("spec", ["anthropic:claude-opus-4-5-20251101", "openai:gpt-test",
                                  "openai-compatible:URL#local-model"])
def test_a_tool_call_and_its_result_make_a_round_trip(spec, monkeypatch):
    with Scripted(list(MOVES)) as fake:
        first, second = _two_turns(spec, monkeypatch, fake)
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("evaluate", {"path": "k.py"})]
    assert second.text == "Faster by 1.3x." and not second.tool_calls
    sent = json.dumps(fake.requests[1].body)
    assert "speedup 1.3x" in sent and first.tool_calls[0].id in sent  # the result, tied to its call
    assert "Make it faster." in sent and "evaluate" in sent  # the whole conversation, tools offered again


def test_anthropic_usage_and_cost_from_the_table(monkeypatch):
    with Scripted(list(MOVES)) as fake:
        first, _ = _two_turns("anthropic:claude-opus-4-5-20251101", monkeypatch, fake)
    assert first.usage == Usage(input=1000, output=50, cache_read=4000, cache_write=2000)
    assert first.cost_usd == pytest.approx((1000 * 5 + 50 * 25 + 4000 * 0.5 + 2000 * 6.25) / 1e6)
    headers = fake.requests[0].headers  # the key travels as the API's auth header (2.x: a bearer token)
    assert headers.get("x-api-key") == "test-key" or headers.get("authorization") == "Bearer test-key"


def test_openai_usage_counts_cached_and_reasoning_tokens_once(monkeypatch):
    with Scripted(list(MOVES)) as fake:
        first, second = _two_turns("openai:gpt-test", monkeypatch, fake)
    # the API reports input 5000 of which 4000 cached, output 80 of which 30 reasoning
    assert first.usage == Usage(input=1000, output=80, cache_read=4000, reasoning=30)
    assert first.cost_usd is None and second.cost_usd is None  # gpt-test is in no table: unpriced, not $0
    assert any(item.get("type") == "reasoning" for item in fake.requests[1].body["input"])  # sent back whole
    assert fake.requests[0].body["store"] is False and "reasoning.encrypted_content" in fake.requests[0].body["include"]


def test_a_provider_reported_cost_is_kept_beside_the_table(monkeypatch, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai-compatible:local-model": {"input": 1.0, "output": 2.0, "cache_read": 0.1}}))
    monkeypatch.setenv("KERNEL_MCP_PRICES", str(prices))
    moves = [Move(call=("evaluate", {"path": "k.py"}), input=1000, output=500, cache_read=2000, cost=0.0123),
             Move(text="done")]
    with Scripted(moves) as fake:
        first, _ = _two_turns("openai-compatible:URL#local-model", monkeypatch, fake)
    assert first.usage == Usage(input=1000, output=500, cache_read=2000)
    assert first.cost_usd == pytest.approx((1000 * 1.0 + 500 * 2.0 + 2000 * 0.1) / 1e6)
    assert first.reported_cost_usd == 0.0123


def test_prices_by_family_and_unknown_models(tmp_path, monkeypatch):
    assert price_of("anthropic", "claude-sonnet-4-20250514") == Price(input=3, output=15, cache_read=0.30, cache_write=3.75)
    assert price_of("anthropic", "claude-unknown-9") is None
    assert Usage(input=10).cost_usd(None) is None and Usage(basis="unavailable").cost_usd(Price(1, 1)) is None
    assert price_of("openai", "gpt-5-2025-08-07") is None  # not in the table: unpriced, never $0
    rows = tmp_path / "prices.json"  # a user's own rows, e.g. read on OpenAI's pricing page
    rows.write_text('{"openai:gpt-5": {"input": 1.25, "output": 10, "cache_read": 0.125}}')
    monkeypatch.setenv("KERNEL_MCP_PRICES", str(rows))
    assert price_of("openai", "gpt-5-2025-08-07") == Price(input=1.25, output=10, cache_read=0.125)


def test_an_unknown_agent_is_refused_with_the_forms_that_work():
    with pytest.raises(ValueError, match="openai-compatible:URL#MODEL"):
        open_session("gemini:pro", "", TOOLS)


def test_anthropic_marks_the_tools_the_system_and_the_newest_message_for_its_prompt_cache(monkeypatch):
    with Scripted(list(MOVES)) as fake:
        _two_turns("anthropic:claude-opus-4-5-20251101", monkeypatch, fake)
    for request in fake.requests:
        body = request.body
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert body["system"] == [{"type": "text", "text": "You write kernels.", "cache_control": {"type": "ephemeral"}}]
        marked = [i for i, m in enumerate(body["messages"]) for b in m["content"] if "cache_control" in b]
        assert marked == [len(body["messages"]) - 1]  # one moving breakpoint: the API allows four in all


def test_openai_responses_names_one_prompt_cache_key_per_system_prompt(monkeypatch):
    with Scripted(list(MOVES)) as fake:
        _two_turns("openai:gpt-test", monkeypatch, fake)
    keys = {request.body.get("prompt_cache_key") for request in fake.requests}
    assert len(keys) == 1 and None not in keys
