"""The MCP server through a real MCP client session (in memory, and over stdio in a subprocess): schemas,
annotations, a real check with progress, workspace confinement, and the snapshot tools."""
import asyncio
import os
import shutil
import subprocess
import sys

import pytest
from mcp import Client, StdioServerParameters

from kernel_mcp.server import build_server

from conftest import PROBLEMS, REPO

HONEST = "def custom_kernel(data):\n    a, b = data\n    return a + b\n"
TOOLS = {"check", "compile", "profile", "roofline", "evaluate", "snapshot", "history", "diff", "restore", "status"}


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copytree(PROBLEMS / "vector_add", root / "vector_add", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "add.py").write_text(HONEST)
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    return root


def _session(root, script):
    async def run():
        async with Client(build_server(root)) as client:
            return await script(client)
    return asyncio.run(run())


def test_importing_the_server_does_not_import_torch():
    code = "import sys, kernel_mcp.server; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


def test_tools_have_output_schemas_and_honest_annotations(workspace):
    async def script(client):
        return (await client.list_tools()).tools
    tools = {t.name: t for t in _session(workspace, script)}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.output_schema and tool.description
    assert tools["check"].annotations.read_only_hint and tools["history"].annotations.read_only_hint
    assert tools["restore"].annotations.destructive_hint and not tools["snapshot"].annotations.read_only_hint


def test_check_over_mcp_with_progress(workspace):
    seen = []

    async def progress(done, total, message):
        seen.append(message)

    async def script(client):
        return await client.call_tool("check", {"problem": "vector_add", "candidate": "add.py", "device": "cpu"},
                                      progress_callback=progress)
    result = _session(workspace, script)
    assert not result.is_error and result.structured_content["passed"] is True
    assert any("test 0" in (m or "") for m in seen)


@pytest.mark.parametrize("bad", ["../outside.py", "/etc/passwd", "-rf", "link.py", "missing.py"])
def test_paths_must_stay_inside_the_workspace(workspace, tmp_path, bad):
    (tmp_path / "outside.py").write_text(HONEST)
    os.symlink(tmp_path / "outside.py", workspace / "link.py")

    async def script(client):
        return await client.call_tool("check", {"problem": "vector_add", "candidate": bad, "device": "cpu"})
    result = _session(workspace, script)
    assert result.is_error
    assert any(word in result.content[0].text for word in ("outside the workspace", "bad path", "does not exist"))


def test_snapshot_history_diff_restore_status(workspace):
    async def script(client):
        first = (await client.call_tool("snapshot", {"problem": "vector_add", "candidate": "add.py"})).structured_content
        (workspace / "add.py").write_text(HONEST.replace("a + b", "b + a"))
        second = (await client.call_tool("snapshot", {"problem": "vector_add", "candidate": "add.py",
                                                      "parent": first["id"]})).structured_content
        history = (await client.call_tool("history", {"problem": "vector_add"})).structured_content["result"]
        diff = await client.call_tool("diff", {"a": first["id"], "b": second["id"]})
        refused = await client.call_tool("restore", {"snapshot_id": "0000000"})
        restored = await client.call_tool("restore", {"snapshot_id": first["id"]})
        status = (await client.call_tool("status", {"problem": "vector_add"})).structured_content
        return first, second, history, diff, refused, restored, status
    first, second, history, diff, refused, restored, status = _session(workspace, script)
    assert second["parent"] == first["id"] and {h["id"] for h in history} == {first["id"], second["id"]}
    assert "+    return b + a" in diff.content[0].text
    assert refused.is_error and "no snapshot" in refused.content[0].text
    assert not restored.is_error and (workspace / "add.py").read_text() == HONEST
    assert status["evaluations"] == 2


def test_evaluate_checks_times_and_snapshots(workspace):
    async def script(client):
        return await client.call_tool("evaluate", {"problem": "vector_add", "candidate": "add.py", "device": "cpu",
                                                   "budget_s": 3, "author": "test"})
    result = _session(workspace, script)
    assert not result.is_error, result.content[0].text[:2000]
    body = result.structured_content
    assert body["passed"] and body["snapshot"]["author"] == "test" and body["snapshot"]["verdict"] == body["verdict"]
    assert body["roofline"]["profile"]["shapes"]


def test_stdio_session_lists_tools(workspace):
    async def run():
        params = StdioServerParameters(command=sys.executable, args=["-m", "kernel_mcp", "serve", "--root", str(workspace)],
                                       cwd=str(REPO), env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                           filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
        async with Client(params) as client:
            return {t.name for t in (await client.list_tools()).tools}
    assert asyncio.run(run()) == TOOLS
