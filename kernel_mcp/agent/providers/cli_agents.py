"""Whole CLI agents as the loop's model: ``claude-code[:MODEL]`` (``claude -p``) and ``codex[:MODEL]``
(``codex exec``), one process per episode (docs/orchestrator.md, "Driving CLI agents headless").

The agent gets the run's MCP server (agent/loop/run_endpoint.py: kernel_mcp's instruments over its island's
workspace, and ``propose``) and no built-in tools: no shell, no file edits, no web. It tries code only
through ``propose``, so every attempt is judged by the loop exactly as an API agent's is. Its stream
(NDJSON) is kept under RUN/episodes/; its token usage becomes one turn in the journal: Claude Code's own
totals and reported cost from its final ``result`` line (per-message usage summed, and marked partial,
when a killed process never wrote one), Codex's ``turn.completed`` usage priced from the table.

An episode ends when the agent ends it, when the loop answers a proposal with a restart or a stop (the
process then gets END_GRACE_S to finish its answer), or when it has been silent for IDLE_S with no tool
call running (S6 liveness): its process group is killed.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

from kernel_mcp import SERVER_NAME
from kernel_mcp.agent.providers.base import Turn, Usage
from kernel_mcp.agent.providers.pricing import price_of
from kernel_mcp.agent.run.folder import write_atomic
from kernel_mcp.worker import agent_event, run_agent_process

BINARIES = {"claude-code": ("claude", "KERNEL_MCP_CLAUDE"), "codex": ("codex", "KERNEL_MCP_CODEX")}
EXTRA_ARGS = {"claude-code": "KERNEL_MCP_CLAUDE_ARGS", "codex": "KERNEL_MCP_CODEX_ARGS"}
TOKEN_VAR = "KERNEL_MCP_RUN_TOKEN"  # Codex reads the endpoint's bearer token from this variable
TOOL_TIMEOUT_S = 3600  # a proposal is evaluated and confirmed inside one tool call: minutes on a GPU
MAX_TURNS = 40  # model turns per episode (Claude Code's --max-turns)
IDLE_S = 600.0  # S6: silent this long with no tool call running -> the process is stuck
END_GRACE_S = 60.0  # after the loop ended the episode: time for the agent's closing answer


def is_cli_agent(spec: str) -> bool:
    return spec.partition(":")[0] in BINARIES


def binary_of(spec: str) -> str | None:
    """The CLI's executable: $KERNEL_MCP_CLAUDE / $KERNEL_MCP_CODEX, else ``claude`` / ``codex`` on PATH."""
    name, variable = BINARIES[spec.partition(":")[0]]
    given = os.environ.get(variable)
    if given:  # a path that is not an executable file is a mistake to report, not a reason to look elsewhere
        return given if os.path.isfile(given) and os.access(given, os.X_OK) else None
    return shutil.which(name)


def prepare_workspace(workspace: Path, problem: Path, source: str) -> str:
    """An island's workspace as a CLI agent sees it: the problem copied in (the instruments take paths
    inside their workspace only; a GPU MODE folder's shared ``utils.py`` beside it) and the current best
    (``source``) as kernel.py. Returns the problem's path in the workspace."""
    target = workspace / "problem" / problem.name
    if not target.exists():
        target.parent.mkdir(exist_ok=True)
        if problem.is_dir():
            shutil.copytree(problem, target, ignore=shutil.ignore_patterns("__pycache__", "solutions"))
            if (problem.parent / "utils.py").is_file():
                shutil.copy2(problem.parent / "utils.py", target.parent / "utils.py")
        else:
            shutil.copy2(problem, target)
    write_atomic(workspace / "kernel.py", source.encode())
    return f"problem/{problem.name}"


class CliAgent:
    """One CLI agent spec; ``run_episode`` runs one session of it against a run endpoint."""

    def __init__(self, spec: str):
        self.kind, _, self.model = spec.partition(":")
        self.binary = binary_of(spec)
        self.extra = shlex.split(os.environ.get(EXTRA_ARGS[self.kind], ""))
        self.session_id = ""

    # --- command lines -------------------------------------------------------------------------------
    def command(self, prompt: str, system: str, endpoint, config_file: Path, cwd: Path) -> list[str]:
        if self.kind == "claude-code":
            self.session_id = str(uuid.uuid4())
            config = {"mcpServers": {SERVER_NAME: {"type": "http", "url": endpoint.url,
                                                   "headers": {"Authorization": f"Bearer {endpoint.token}"}}}}
            config_file.write_text(json.dumps(config))
            config_file.chmod(0o600)  # the bearer token
            allowed = ",".join(f"mcp__{SERVER_NAME}__{tool}" for tool in endpoint.tools)  # no wildcards (#13077)
            command = [self.binary, "-p", prompt, "--output-format", "stream-json", "--verbose",
                       "--session-id", self.session_id, "--mcp-config", str(config_file), "--strict-mcp-config",
                       "--tools", "", "--allowedTools", allowed, "--append-system-prompt", system,
                       "--max-turns", str(MAX_TURNS)]
        else:
            server = f"mcp_servers.{SERVER_NAME}"
            command = [self.binary, "exec", "--json", "--skip-git-repo-check", "-C", str(cwd), "--sandbox", "read-only",
                       "--disable", "shell_tool", "--disable", "unified_exec", "-c", 'web_search="disabled"',
                       "-c", f'{server}.url="{endpoint.url}"', "-c", f'{server}.bearer_token_env_var="{TOKEN_VAR}"',
                       "-c", f"{server}.tool_timeout_sec={TOOL_TIMEOUT_S}", "-c", f"{server}.startup_timeout_sec=60",
                       "-c", f"{server}.required=true",  # no endpoint, no episode
                       # codex exec never asks: without it, calls to tools not annotated read-only are cancelled
                       "-c", f'{server}.default_tools_approval_mode="approve"']
            prompt = f"{system}\n\n{prompt}"  # codex exec has no flag for extra system text
        if self.model:
            command += ["--model", self.model] if self.kind == "claude-code" else ["-m", self.model]
        return [*command, *self.extra] + ([prompt] if self.kind == "codex" else [])

    def environment(self, endpoint) -> dict[str, str]:
        env = dict(os.environ)
        if self.kind == "claude-code":  # wait for the server before the first request; long tool calls
            env.update(MCP_CONNECTION_NONBLOCKING="false", MCP_TOOL_TIMEOUT=str(TOOL_TIMEOUT_S * 1000))
        else:
            env[TOKEN_VAR] = endpoint.token
        return env

    # --- one episode ---------------------------------------------------------------------------------
    def run_episode(self, prompt: str, system: str, endpoint, cwd: Path, stream: Path,
                    ended: Callable[[], bool], busy: Callable[[], bool]) -> tuple[list[dict], str]:
        """Run the CLI to the end of its session; its events (each line also appended to ``stream``) and
        how it ended ('' when by itself)."""
        config_file = stream.with_suffix(".mcp.json")
        try:
            command = self.command(prompt, system, endpoint, config_file, cwd)
            return run_agent_process(command, self.environment(endpoint), cwd, stream, ended, busy,
                                     idle_s=IDLE_S, grace_s=END_GRACE_S)
        finally:
            config_file.unlink(missing_ok=True)  # the bearer token

    def turn_of(self, events: list[dict]) -> Turn:
        """The episode's usage and cost as one turn."""
        if self.kind == "claude-code":
            return _claude_turn(events, self.model)
        self.session_id = next((str(e.get("thread_id")) for e in events if e.get("type") == "thread.started"), "")
        return _codex_turn(events, self.model)


def lost_turns(episodes: Path, island: str, agent: CliAgent) -> list[tuple[Path, Turn]]:
    """Sessions of this island whose process outlived the orchestrator (a kill -9 before the session's usage
    was journaled): each episode file without a turn, and the usage its CLI stream shows."""
    found = []
    for stream in sorted(episodes.glob(f"island-{island}-*.stream.jsonl")):
        episode = stream.with_name(stream.name.replace(".stream.jsonl", ".jsonl"))
        entries = ([json.loads(line) for line in episode.read_text().splitlines() if line.strip()]
                   if episode.exists() else [])
        if any("turn" in entry for entry in entries):
            continue
        events = [e for e in map(agent_event, stream.read_text().splitlines()) if e is not None]
        found.append((episode, agent.turn_of(events)))
    return found


def _claude_turn(events: list[dict], model: str) -> Turn:
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    messages = {}
    for event in events:
        message = event.get("message") if event.get("type") == "assistant" else None
        if isinstance(message, dict):
            messages[message.get("id")] = message  # a message streamed in parts repeats its usage
            model = model or message.get("model", "")
    if result and isinstance(result.get("usage"), dict):
        usage, basis = result["usage"], "exact"
    else:  # killed before its result line: what the messages said, marked partial
        usage, basis = (_summed([m.get("usage") or {} for m in messages.values()]),
                        "partial" if messages else "unavailable")
    turn = Turn(model=model, stop=(result or {}).get("subtype", "killed"),
                text=str((result or {}).get("result", ""))[:2000],
                usage=Usage(input=int(usage.get("input_tokens", 0)), output=int(usage.get("output_tokens", 0)),
                            cache_read=int(usage.get("cache_read_input_tokens", 0)),
                            cache_write=int(usage.get("cache_creation_input_tokens", 0)), basis=basis),
                reported_cost_usd=(result or {}).get("total_cost_usd"))
    turn.cost_usd = turn.usage.cost_usd(price_of("anthropic", model))
    return turn


def _codex_turn(events: list[dict], model: str) -> Turn:
    usages = [e["usage"] for e in events if e.get("type") == "turn.completed" and isinstance(e.get("usage"), dict)]
    total = _summed(usages)
    cached = int(total.get("cached_input_tokens", 0))
    text = next((e["item"].get("text", "") for e in reversed(events) if e.get("type") == "item.completed"
                 and isinstance(e.get("item"), dict) and e["item"].get("type") == "agent_message"), "")
    failed = any(e.get("type") in ("turn.failed", "error") for e in events)
    turn = Turn(model=model, stop="failed" if failed else ("completed" if usages else "killed"), text=str(text)[:2000],
                usage=Usage(input=int(total.get("input_tokens", 0)) - cached, output=int(total.get("output_tokens", 0)),
                            cache_read=cached, reasoning=int(total.get("reasoning_output_tokens", 0)),
                            basis="exact" if usages else "unavailable"))
    turn.cost_usd = turn.usage.cost_usd(price_of("openai", model)) if model else None
    return turn


def _summed(usages: list[dict]) -> dict[str, int]:
    total: dict[str, int] = {}
    for usage in usages:
        for key, value in usage.items():
            if isinstance(value, int):
                total[key] = total.get(key, 0) + value
    return total
