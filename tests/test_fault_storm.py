"""One long-lived MCP server (the warm runner an agent's client starts) through a storm of hostile and
honest candidates, with check, compile and evaluate: every call ends in a clear verdict or a short tool
error, no process of a finished call is left behind, no secret of the server's reaches an answer, and
honest work still passes. Then four agents evaluating in one workspace at once: no false tampering, no
file changed behind an agent's back, every snapshot holds exactly what its agent evaluated (issue 12)."""
from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, processes_of_cache, repo_pythonpath, vector_add_on_one_shape
from mcp import Client

from kernel_mcp.history.snapshots import Store
from kernel_mcp.server import build_server
from kernel_mcp.worker.isolation import proctree
from kernel_mcp.worker.runners.local import LocalRunner

CHEATS = REPO / "tests" / "cheats"
SECRET = "sk-test-secret-kernel-mcp"
QUICK = {"device": "cpu", "budget_s": 1, "shapes": "tests"}
STORM = ["crash_segfault", "crash_os_exit", "crash_sys_exit", "hang_sleep", "daemon_double_fork",
         "forge_stdout_all_fds", "honest_noisy_stdout", "secret_env", "secret_print", "compile_daemon",
         "wrong_a_minus_b", "crash_raise"]
# An ordinary user's server makes its sandboxes through a user namespace: the storm through it keeps the
# candidates that test isolation and clean-up there (crash, hang, daemons, the environment); the others
# exercise the result channel and verdicts, which do not depend on the caller's capabilities (test time).
ORDINARY_STORM = ["crash_segfault", "hang_sleep", "daemon_double_fork", "secret_env", "compile_daemon",
                  "wrong_a_minus_b", "honest_noisy_stdout"]
MUST_FAIL = {"crash_segfault", "crash_os_exit", "crash_sys_exit", "hang_sleep", "forge_stdout_all_fds", "secret_env",
             "secret_print", "wrong_a_minus_b", "crash_raise"}  # the others compute honest values
# evaluate runs the same check first: for a candidate whose check result carries nothing of its own output
# (a crash, a hang, a daemon, a wrong value) a separate `check` call repeats it; those that print, forge or
# read secrets go through `check` too, whose full result carries their output
EVALUATE_SUFFICES = {"crash_segfault", "crash_os_exit", "crash_sys_exit", "hang_sleep", "daemon_double_fork",
                     "wrong_a_minus_b", "crash_raise"}
HONEST_VARIANTS = ["return a + b", "return b + a", "return torch.add(a, b)", "return a.add(b)"]


def workspace(root: Path) -> Path:
    """vector_add on one test shape (the storm is about isolation and verdicts, not shapes), where a hang
    fails in seconds, not minutes."""
    import yaml
    problem = vector_add_on_one_shape(root, n=4099)
    shutil.rmtree(problem / "solutions")
    spec = yaml.safe_load((problem / "task.yml").read_text())
    spec["kernel_mcp"]["timeouts"] = {"import": 60, "call": 5, "total": 90}
    (problem / "task.yml").write_text(yaml.safe_dump(spec))
    for helper in ("_cheat_util.py", "_helper_kernels.py", "_triton_add.py"):
        shutil.copy(CHEATS / helper, root / helper)
    return root


def text_of(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content) + str(result.structured_content or "")


# the server as a user's agent starts it (`python -m kernel_mcp serve`, over stdio), optionally with only the
# capabilities an ordinary user's processes have: the sandbox then makes its namespaces through a user
# namespace. (Whether the caller's non-dumpable state alone keeps its environment closed is shown by
# test_cheats.py's compile_secret_env test: here the exec that drops the capabilities already makes the
# server non-dumpable on this kernel, with or without kernel_mcp's own call.)
AS_ORDINARY_USER = ("import ctypes, os, sys; libc = ctypes.CDLL(None); "
                    "[libc.prctl(24, cap, 0, 0, 0) for cap in range(64) if cap not in (14, 23, 24)]; "
                    "os.execv(sys.executable, [sys.executable, '-m', 'kernel_mcp', *sys.argv[1:]])")


def server_and_descendants() -> set[int]:
    """The stdio server of this test (a child of this process) and every process below it: its warm judge,
    host and step hosts, which stay between calls by design. (Found through the process tree, not by
    command line: once pids wrap around, a process the server forked may have a smaller pid than it.)"""
    return set(proctree.descendants(os.getpid()))


def left_behind(cache: Path) -> dict[int, bytes]:
    """Processes of this test's calls still running, outside the server's own tree, 1 s after a call
    returned (one that is still exiting when first seen, a SIGKILL delivered, is not left behind), with
    their command lines."""
    seen = set(processes_of_cache(cache)) - server_and_descendants()
    if seen:
        time.sleep(1.0)
        seen &= set(processes_of_cache(cache)) - server_and_descendants()
    found = {}
    for pid in sorted(seen):
        try:
            found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:150]
        except OSError:
            continue  # gone meanwhile
    return found


@pytest.mark.long
@pytest.mark.parametrize("user", ["root", "ordinary"])
def test_a_storm_of_candidates_through_one_server(tmp_path, user):
    from mcp import StdioServerParameters
    cache = tmp_path / "cache"
    root = workspace(tmp_path / "ws")
    storm_of = STORM if user == "root" else ORDINARY_STORM
    for name in storm_of:
        shutil.copy(CHEATS / f"{name}.py", root / f"{name}.py")
    env = {**os.environ, "KERNEL_MCP_CACHE": str(cache), "ANTHROPIC_API_KEY": SECRET, "PYTHONPATH": repo_pythonpath()}
    args = ["serve", "--root", str(root)]
    params = StdioServerParameters(command=sys.executable, env=env, cwd=str(root),
                                   args=["-c", AS_ORDINARY_USER, *args] if user == "ordinary" else ["-m", "kernel_mcp", *args])
    problems: list[str] = []

    async def storm():
        async with Client(params) as client:
            for name in storm_of:
                calls = (("check", {"device": "cpu"}), ("compile", {}), ("evaluate", QUICK))
                for tool, arguments in (calls[1:] if name in EVALUATE_SUFFICES else calls):
                    result = await client.call_tool(tool, {"problem": "vector_add", "candidate": f"{name}.py",
                                                           **arguments})
                    text = text_of(result)
                    if result.is_error and len(text) >= 1024:
                        problems.append(f"{tool} {name}: an error of {len(text)} characters")
                    if SECRET in text:
                        problems.append(f"{tool} {name}: the secret is in the answer")
                    if name in MUST_FAIL and tool != "compile" and (result.structured_content or {}).get("passed"):
                        problems.append(f"{tool} {name}: passed")
                    left = left_behind(cache)
                    if left:
                        problems.append(f"{tool} {name}: {len(left)} process(es) left behind: {left}")
                        for pid in left:
                            proctree.kill_tree(pid)
            return await client.call_tool("evaluate", {"problem": "vector_add", "candidate": "honest_noisy_stdout.py",
                                                       **QUICK})

    try:
        honest = asyncio.run(storm())
    except Exception as exc:  # the server went away: say what had been seen by then
        raise AssertionError(f"the storm broke off ({exc!r}); seen before: {problems}") from exc
    assert not problems, problems
    assert not honest.is_error and honest.structured_content["passed"], text_of(honest)[:1000]
    leaked = [p for p in cache.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert not leaked, leaked


@pytest.mark.long
def test_four_agents_evaluating_in_one_workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    root = workspace(tmp_path / "ws")
    runner = LocalRunner(warm=True)
    server = build_server(root, runner)
    failures: list[str] = []

    async def agent(client, index: int) -> None:
        path = root / f"agent_{index}.py"
        for round_ in range(2):
            body = HONEST_VARIANTS[(index + round_) % len(HONEST_VARIANTS)]
            source = f"import torch\n# agent {index}, round {round_}\ndef custom_kernel(data):\n    a, b = data\n    {body}\n"
            path.write_text(source)
            result = await client.call_tool("evaluate", {"problem": "vector_add", "candidate": path.name, **QUICK})
            summary = result.structured_content or {}
            if result.is_error or not summary.get("passed"):
                failures.append(f"agent {index} round {round_}: {text_of(result)[:400]}")
                continue
            if path.read_text() != source:
                failures.append(f"agent {index} round {round_}: its file changed behind its back")
            with Store(root, create=False) as store:
                kept = store.file_at(store.get(summary["snapshot_id"]), path.name)
            if kept != source.encode():
                failures.append(f"agent {index} round {round_}: the snapshot holds other bytes")

    async def all_agents():
        async with Client(server) as client:
            await asyncio.gather(*(agent(client, i) for i in range(4)))

    try:
        asyncio.run(all_agents())
    finally:
        runner.close()
    assert not failures, failures
