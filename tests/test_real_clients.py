"""The client configs that `kernel-mcp install` writes, proven with the real clients (installed from npm):

* MCP Inspector's CLI reads the Cursor config (.cursor/mcp.json, the same mcpServers format Cursor reads),
  starts the server over stdio, lists its tools and runs a real check.
* `claude -p` in a workspace set up by `kernel-mcp install claude-code --scope project` calls evaluate.
* `codex exec` with `kernel-mcp install codex --scope user` (CODEX_HOME in a temp folder) calls evaluate.

The model behind Claude Code and Codex is a loopback fake speaking the real wire protocol (tests/fakes/):
it calls the evaluate tool once, then answers. Every other request a client might make goes to a closed
loopback port (HTTP(S)_PROXY), so nothing leaves the machine. Each test skips, saying why, when node/npm or
the client package cannot be had.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import PROBLEMS, repo_pythonpath
from fakes.anthropic_api import AnthropicFake
from fakes.model_server import ToolScript
from fakes.openai_responses import ResponsesFake
from node_tools import node_cli_or_skip

INSPECTOR = ("@modelcontextprotocol/inspector", "mcp-inspector")
CLAUDE = ("@anthropic-ai/claude-code", "claude")
CODEX = ("@openai/codex", "codex")
TOOLS = {"check", "compile", "sanitize", "profile", "roofline", "evaluate", "snapshot", "history", "diff", "restore",
         "status", "steer", "evaluate_start", "profile_start", "roofline_start", "job_wait"}
HONEST = "def custom_kernel(data):\n    a, b = data\n    return a + b\n"
EVALUATE = {"problem": "vector_add", "candidate": "add.py", "device": "cpu", "budget_s": 3}
PROMPT = "Evaluate add.py on the vector_add problem with the kernel-mcp evaluate tool."
CLIENT_TIMEOUT_S = 300
CLOSED_PORT_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens, so a stray request fails at once


def _version(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout.strip()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A git repository holding vector_add (small benchmarks) and a plain-torch candidate.

    The benchmarks shrink from 16M elements to 64K: timing the full ones on a 2-core CPU takes minutes, and
    what is under test here is the client wiring, not the timer. git: Claude Code trusts the install's
    .claude/settings.local.json only in a repository, which is where a user's kernel project lives anyway.
    """
    root = tmp_path / "ws"
    shutil.copytree(PROBLEMS / "vector_add", root / "vector_add", ignore=shutil.ignore_patterns("__pycache__"))
    task = root / "vector_add" / "task.yml"
    spec = yaml.safe_load(task.read_text())
    spec["benchmarks"] = [{"n": 65536, "itemsize": 4, "seed": 201}]
    task.write_text(yaml.safe_dump(spec, sort_keys=False))
    (root / "add.py").write_text(HONEST)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def _env(home: Path, **extra: str) -> dict[str, str]:
    """The clients' environment: this machine's, less any real credentials or client settings, with a temp
    HOME, this checkout importable (the server the client starts must be the code under test) and every
    request that does not go to the loopback fake sent to a closed port."""
    drop = ("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
    env = {key: value for key, value in os.environ.items() if not key.upper().startswith(drop)}
    env.update(HOME=str(home), PYTHONPATH=repo_pythonpath(),
               KERNEL_MCP_CACHE=str(home / ".cache" / "kernel_mcp"), HTTP_PROXY=CLOSED_PORT_PROXY,
               HTTPS_PROXY=CLOSED_PORT_PROXY, NO_PROXY="127.0.0.1,localhost", **extra)
    return env


def _install(client: str, scope: str, root: Path, env: dict[str, str]) -> None:
    """`kernel-mcp install`, run as a user runs it (the CLI, in a subprocess, with the test's HOME)."""
    out = subprocess.run([sys.executable, "-m", "kernel_mcp", "install", client, "--scope", scope, "--root",
                          str(root)], capture_output=True, text=True, env=env, cwd=root, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def _run(command: list, cwd: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    out = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=CLIENT_TIMEOUT_S, stdin=subprocess.DEVNULL)
    return out, time.monotonic() - start


def _json_in(text: str) -> dict:
    """The first JSON object in a tool result's text (Codex puts a 'Wall time' header before it)."""
    start = text.find("{")
    assert start >= 0, f"no JSON object in the tool result: {text[:500]}"
    return json.JSONDecoder().raw_decode(text[start:])[0]


def _snapshot_refs(root: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(root), "for-each-ref", "--format=%(refname)", "refs/kernel_mcp/"],
                         capture_output=True, text=True, check=True)
    return out.stdout.split()


def _assert_evaluated(script: ToolScript, root: Path, log: str) -> None:
    """The fake received evaluate's real result, and the snapshot it names is in the workspace's git refs."""
    assert script.tool_result is not None, f"the client never sent the tool's result back; requests:\n{log}"
    result = _json_in(script.tool_result)
    assert result["verdict"] == "pass" and result["passed"] is True, script.tool_result[:2000]
    # evaluate's compact result names its snapshot; the commit under that ref records this problem's pass
    assert _snapshot_refs(root) == [f"refs/kernel_mcp/snapshots/{result['snapshot_id']}"]
    from kernel_mcp.tools.snapshot import history
    assert [(s.id, s.problem, s.verdict) for s in history(root)] == [(result["snapshot_id"], "vector_add", "pass")]


def _inspector(binary: Path, config: Path, *args: str, env: dict[str, str]) -> dict:
    out, _ = _run([binary, "--cli", "--config", config, "--server", "kernel-mcp", *args], config.parent, env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.mark.timeout(600)
def test_inspector_lists_tools_and_runs_check_through_the_cursor_config(workspace, home):
    inspector = node_cli_or_skip(*INSPECTOR)
    env = _env(home)
    _install("cursor", "project", workspace, env)
    config = workspace / ".cursor" / "mcp.json"

    listed = _inspector(inspector, config, "--method", "tools/list", env=env)
    assert {tool["name"] for tool in listed["tools"]} == TOOLS
    evaluate = next(tool for tool in listed["tools"] if tool["name"] == "evaluate")
    assert set(evaluate["inputSchema"]["required"]) == {"problem", "candidate"} and evaluate["outputSchema"]

    called = _inspector(inspector, config, "--method", "tools/call", "--tool-name", "check",
                        "--tool-arg", "problem=vector_add", "--tool-arg", "candidate=add.py",
                        "--tool-arg", "device=cpu", env=env)
    assert called["isError"] is False
    assert called["structuredContent"]["verdict"] == "pass" and called["structuredContent"]["passed"] is True

    refused = _inspector(inspector, config, "--method", "tools/call", "--tool-name", "check",
                         "--tool-arg", "problem=../vector_add", "--tool-arg", "candidate=add.py", env=env)
    assert refused["isError"] is True and "outside the workspace" in refused["content"][0]["text"]


@pytest.mark.timeout(600)
def test_claude_code_calls_evaluate_with_the_project_install(workspace, home):
    claude = node_cli_or_skip(*CLAUDE)
    env = _env(home)
    _install("claude-code", "project", workspace, env)
    script = ToolScript("__evaluate", EVALUATE)
    with AnthropicFake(script) as fake:
        # No --mcp-config and no --allowedTools: the server and its permission must come from the files the
        # install wrote (.mcp.json, and .claude/settings.local.json approving it and allowing its tools).
        # MCP_CONNECTION_NONBLOCKING=false: `claude -p` otherwise sends the first request before the server
        # has connected (offering a WaitForMcpServers tool instead), and this one-shot script needs evaluate.
        # MCP_TIMEOUT: the server's start-up may take the client's default wait and more on a loaded machine
        # (a busy CI run got a first request with no kernel-mcp tools in it)
        env.update(ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY="sk-ant-test-not-a-real-key", MCP_TIMEOUT="120000",
                   MCP_CONNECTION_NONBLOCKING="false", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1")
        out, took = _run([claude, "-p", PROMPT, "--output-format", "json"], workspace, env)
        log = fake.summary()
    print(f"{_version(claude)}: {took:.1f} s")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:] + log
    assert script.tool_name == "mcp__kernel-mcp__evaluate", log
    _assert_evaluated(script, workspace, log)
    final = json.loads(out.stdout)
    assert final["is_error"] is False and final["result"] == script.answer
    assert final["permission_denials"] == []


@pytest.mark.timeout(600)
def test_codex_exec_calls_evaluate_with_the_user_install(workspace, home):
    codex = node_cli_or_skip(*CODEX)
    codex_home = home / ".codex"
    env = _env(home, CODEX_HOME=str(codex_home))
    _install("codex", "user", workspace, env)
    script = ToolScript("__evaluate", EVALUATE)
    with ResponsesFake(script) as fake:
        env["FAKE_MODEL_KEY"] = "sk-test-not-a-real-key"
        provider = (f'{{ name = "loopback fake", base_url = "{fake.url}/v1", wire_api = "responses", '
                    f'env_key = "FAKE_MODEL_KEY" }}')
        # The model provider comes in by -c so that config.toml stays exactly as the install wrote it. The
        # server gets PYTHONPATH passed (Codex hands MCP servers only a short list of variables) so that it
        # runs this checkout. Plugins and apps off: they would sync from the network.
        out, took = _run([codex, "exec", "--skip-git-repo-check", "--json", "--strict-config",
                          "-c", f"model_providers.fake={provider}", "-c", 'model_provider="fake"',
                          "-c", 'model="fake-model"', "-c", 'mcp_servers.kernel-mcp.env_vars=["PYTHONPATH"]',
                          "-c", "analytics.enabled=false", "--disable", "plugins", "--disable", "apps",
                          "--disable", "remote_plugin", PROMPT], workspace, env)
        log = fake.summary()
    print(f"{_version(codex)}: {took:.1f} s")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:] + log
    assert script.tool_name == "mcp__kernel_mcp__evaluate", log  # Codex's namespace: the server name, '-' -> '_'
    _assert_evaluated(script, workspace, log)
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    calls = [e["item"] for e in events if e.get("type") == "item.completed"
             and e["item"].get("type") == "mcp_tool_call"]
    assert calls and calls[0]["server"] == "kernel-mcp" and calls[0]["tool"] == "evaluate", out.stdout[-3000:]
    assert any(e.get("type") == "item.completed" and e["item"].get("text") == script.answer for e in events)
