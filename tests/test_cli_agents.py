"""``kernel-mcp optimize --agent claude-code|codex``: the real CLIs (from npm, as test_real_clients.py has
them) run one episode each against a loopback fake model (tests/fakes/) with the run's own MCP endpoint
attached. The fake proposes one kernel through ``propose``; the loop evaluates it, the budget (2
evaluations: the start and the proposal) ends the run, and the CLI's usage lands in the journal as one
turn adding up to what the fake reported. Plus the stream parsing on recorded event shapes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import repo_pythonpath, vector_add_on_one_shape
from fakes.anthropic_api import USAGE, AnthropicFake
from fakes.model_server import ToolScript
from fakes.openai_responses import ResponsesFake, _tool_names
from node_tools import node_cli_or_skip

from kernel_mcp.agent.providers.cli_agents import _claude_turn, _codex_turn

START = "def custom_kernel(data):\n    a, b = data\n    return a + b\n"
PROPOSAL = {"edit": "```python\nimport torch\n\n\ndef custom_kernel(data):\n    a, b = data\n"
                    "    return torch.add(a, b)\n```", "idea": "torch.add instead of the operator"}
CLOSED_PORT_PROXY = "http://127.0.0.1:9"


def test_claude_usage_is_its_result_line_or_the_messages_summed_when_killed():
    message = {"id": "msg_1", "model": "claude-opus-4-5", "usage": {"input_tokens": 100, "output_tokens": 20,
                                                                      "cache_read_input_tokens": 1000,
                                                                      "cache_creation_input_tokens": 50}}
    streamed = [{"type": "system", "subtype": "init", "session_id": "s"},
                {"type": "assistant", "message": message}, {"type": "assistant", "message": message}]  # one message, two blocks
    killed = _claude_turn(streamed, "")
    assert (killed.usage.input, killed.usage.output, killed.usage.cache_read, killed.usage.cache_write) == (100, 20, 1000, 50)
    assert killed.usage.basis == "partial" and killed.stop == "killed" and killed.model == "claude-opus-4-5"
    assert killed.cost_usd == pytest.approx((100 * 5 + 20 * 25 + 1000 * 0.5 + 50 * 6.25) / 1e6)
    result = {"type": "result", "subtype": "success", "total_cost_usd": 0.0123, "result": "done",
              "usage": {"input_tokens": 300, "output_tokens": 60, "cache_read_input_tokens": 0,
                        "cache_creation_input_tokens": 0}}
    ended = _claude_turn([*streamed, result], "")
    assert ended.usage.input == 300 and ended.usage.basis == "exact" and ended.reported_cost_usd == 0.0123
    assert _claude_turn([], "").usage.basis == "unavailable"


def test_codex_usage_is_summed_over_its_turns_and_unpriced_without_a_model():
    events = [{"type": "thread.started", "thread_id": "t"},
              {"type": "turn.completed", "usage": {"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 9}},
              {"type": "turn.completed", "usage": {"input_tokens": 50, "cached_input_tokens": 0, "output_tokens": 1}},
              {"type": "item.completed", "item": {"type": "agent_message", "text": "bye"}}]
    turn = _codex_turn(events, "")
    assert (turn.usage.input, turn.usage.cache_read, turn.usage.output) == (110, 40, 10)
    assert turn.cost_usd is None and turn.text == "bye" and turn.stop == "completed"  # unpriced, never $0


def test_a_cli_agent_without_its_cli_is_a_usage_error_before_any_work(tmp_path):
    env = {**_env(tmp_path), "KERNEL_MCP_CODEX": str(tmp_path / "no-codex-here"), "PATH": "/usr/bin:/bin"}
    out, run = _optimize(tmp_path, "codex:gpt-test", env)
    assert out.returncode == 2 and "needs its CLI on PATH" in out.stderr and "KERNEL_MCP_CODEX" in out.stderr, out.stderr
    assert not (run / "journal.jsonl").exists()


def test_a_session_cut_off_by_a_kill_has_its_usage_recovered_from_its_stream(tmp_path):
    """kill -9 of the orchestrator mid-session: the episode has no turn, the CLI's stream shows what was
    spent (partial: no result line); an episode whose turn was journaled is left alone."""
    from kernel_mcp.agent.providers.cli_agents import CliAgent, lost_turns
    message = {"id": "m1", "model": "claude-opus-4-5", "usage": {"input_tokens": 40, "output_tokens": 4}}
    (tmp_path / "island-0-3.jsonl").write_text(json.dumps({"prompt": "p"}) + "\n")
    (tmp_path / "island-0-3.stream.jsonl").write_text(json.dumps({"type": "assistant", "message": message}) + "\n{\"type\": \"assi")
    (tmp_path / "island-0-1.jsonl").write_text(json.dumps({"prompt": "p"}) + "\n" + json.dumps({"turn": {}}) + "\n")
    (tmp_path / "island-0-1.stream.jsonl").write_text(json.dumps({"type": "assistant", "message": message}) + "\n")
    lost = lost_turns(tmp_path, "0", CliAgent("claude-code"))
    assert [episode.name for episode, _ in lost] == ["island-0-3.jsonl"]
    turn = lost[0][1]
    assert (turn.usage.input, turn.usage.output, turn.usage.basis) == (40, 4, "partial") and turn.cost_usd > 0


SILENT = "import sys, time; print('{\"type\": \"hello\"}', flush=True); print('bad', file=sys.stderr); time.sleep(60)"


@pytest.mark.parametrize("ended, busy, why", [(False, False, "no output for 1 s"), (True, False, "ended by the loop"),
                                              (False, True, None)])
def test_an_agent_process_is_killed_when_silent_or_ended_never_while_a_tool_runs(tmp_path, ended, busy, why):
    """S6: silent with no tool call running -> killed (group and all); ended by the loop -> killed after the
    grace; a tool call running keeps it alive (here until it exits by itself: a 2 s script)."""
    from kernel_mcp.worker.launch.agent import run_agent_process
    code = SILENT if why else SILENT.replace("time.sleep(60)", "time.sleep(2); sys.exit(3)")
    stream = tmp_path / "episode.jsonl"
    events, said = run_agent_process([sys.executable, "-c", code], dict(os.environ), tmp_path, stream,
                                     lambda: ended, lambda: busy, idle_s=1.0, grace_s=0.5)
    assert events == [{"type": "hello"}] and stream.read_text() == '{"type": "hello"}\n'
    assert said.startswith(why) if why else said == "exited with code 3: bad"


def _optimize(tmp_path: Path, agent: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, Path]:
    start = tmp_path / "start.py"
    start.write_text(START)
    run = tmp_path / "run"
    problem = vector_add_on_one_shape(tmp_path)  # the episode's plumbing is under test, not five shapes' timing
    command = [sys.executable, "-m", "kernel_mcp", "optimize", str(problem), "--candidate", str(start),
               "--agent", agent, "--budget", "2evals,10m", "--device", "cpu", "--timing", "2", "--run", str(run), "--json"]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900), run


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No real credentials or client settings; a temp HOME; every request but the loopback fake's to a
    closed port."""
    drop = ("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(drop)}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), PYTHONPATH=repo_pythonpath(), HTTP_PROXY=CLOSED_PORT_PROXY,
               HTTPS_PROXY=CLOSED_PORT_PROXY, NO_PROXY="127.0.0.1,localhost", **extra)
    return env


def _assert_one_episode(run: Path, script: ToolScript, out: subprocess.CompletedProcess) -> dict:
    """The proposal was evaluated by the loop and answered; the episode's usage is one journaled turn."""
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    records = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]
    done = [r for r in records if r["kind"] == "done"]
    assert [d["role"] for d in done] == ["baseline", "candidate"], done
    assert done[1]["idea"] == PROPOSAL["idea"] and done[1]["verdict"] == "pass"
    assert script.tool_result is not None and "verdict: pass" in script.tool_result, script.tool_result
    turns = [r for r in records if r["kind"] == "turn"]
    assert len(turns) == 1, turns
    episodes = list((run / "episodes").glob("island-0-*.jsonl"))
    assert any(e.name.endswith(".stream.jsonl") for e in episodes), episodes  # the CLI's raw stream is kept
    assert not list((run / "episodes").glob("*.mcp.json"))  # the token's file is gone
    assert json.loads(out.stdout)["evaluations"] == 2
    return turns[0]


@pytest.mark.long
@pytest.mark.timeout(900)
def test_claude_code_runs_an_episode_through_the_runs_endpoint(tmp_path):
    claude = node_cli_or_skip("@anthropic-ai/claude-code", "claude")
    script = ToolScript("__propose", PROPOSAL, call_id="toolu_propose_1")
    with AnthropicFake(script) as fake:
        env = _env(tmp_path, KERNEL_MCP_CLAUDE=str(claude), ANTHROPIC_BASE_URL=fake.url,
                   ANTHROPIC_API_KEY="sk-ant-test-not-a-real-key", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1")
        out, run = _optimize(tmp_path, "claude-code", env)
        served = [r for r in fake.requests if r.path.split("?")[0] == "/v1/messages"]
    assert script.tool_name == "mcp__kernel-mcp__propose", fake.summary()
    turn = _assert_one_episode(run, script, out)
    # Claude Code's own totals: every request the fake served, at the fake's usage each
    assert turn["usage"]["input"] == USAGE["input_tokens"] * len(served), (turn, len(served))
    assert turn["usage"]["output"] == USAGE["output_tokens"] * len(served)
    assert turn["reported_cost_usd"] is not None and turn["usage"]["basis"] == "exact"
    stream = next((run / "episodes").glob("island-0-*.stream.jsonl")).read_text().splitlines()  # the CLI's raw events
    init = next(e for e in map(json.loads, stream) if e.get("type") == "system" and e.get("subtype") == "init")
    assert init["tools"] and all(t.startswith("mcp__kernel-mcp__") for t in init["tools"]), init["tools"]  # no Bash, Edit, Web
    assert "mcp__kernel-mcp__propose" in init["tools"] and "mcp__kernel-mcp__evaluate" not in init["tools"]


@pytest.mark.long
@pytest.mark.timeout(900)
def test_codex_runs_an_episode_through_the_runs_endpoint(tmp_path):
    codex = node_cli_or_skip("@openai/codex", "codex")
    script = ToolScript("__propose", PROPOSAL, call_id="call_propose_1")
    with ResponsesFake(script) as fake:
        provider = (f'{{ name = "loopback fake", base_url = "{fake.url}/v1", wire_api = "responses", '
                    f'env_key = "FAKE_MODEL_KEY" }}')
        extra = (f"-c 'model_providers.fake={provider}' -c 'model_provider=\"fake\"' -c 'model=\"fake-model\"' "
                 "-c analytics.enabled=false --disable plugins --disable apps --disable remote_plugin")
        env = _env(tmp_path, KERNEL_MCP_CODEX=str(codex), KERNEL_MCP_CODEX_ARGS=extra, FAKE_MODEL_KEY="sk-test-fake",
                   CODEX_HOME=str(tmp_path / "codex-home"))
        (tmp_path / "codex-home").mkdir()
        out, run = _optimize(tmp_path, "codex", env)
        served = [r for r in fake.requests if r.path.split("?")[0].endswith("/responses")]
    assert script.tool_name and script.tool_name.endswith("propose"), fake.summary()
    offered = set(_tool_names(served[0].body.get("tools") or []))
    assert "mcp__kernel_mcp__propose" in offered and "mcp__kernel_mcp__evaluate" not in offered
    assert not {name for name in offered if any(w in name for w in ("shell", "exec", "patch", "web"))}, offered
    turn = _assert_one_episode(run, script, out)
    assert turn["usage"]["input"] + turn["usage"]["cache_read"] == 12 * len(served)  # the fake's 12 per response
    assert turn["usage"]["output"] == 7 * len(served) and turn["cost_usd"] is None  # unpriced, not $0
