"""`kernel-mcp serve --http` in a real subprocess: the bearer token guards every request, and a real MCP
streamable-HTTP client session with the token lists the tools and calls one."""
import asyncio
import os
import socket
import subprocess
import sys
import time

import httpx2
import pytest
from conftest import REPO, repo_pythonpath
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from kernel_mcp.errors import UsageError
from kernel_mcp.server import is_loopback, parse_listen

TOKEN = "test-token-4f1c"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(root, *extra, env=None):
    port = _free_port()
    env = {**os.environ, **(env or {}), "PYTHONPATH": repo_pythonpath()}
    server = subprocess.Popen([sys.executable, "-m", "kernel_mcp", "serve", "--root", str(root), "--http",
                               f"127.0.0.1:{port}", *extra], cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and server.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise AssertionError(f"the server did not listen: {server.communicate()[1][-2000:]}")


def _stop(server) -> str:
    server.terminate()
    try:
        return server.communicate(timeout=10)[1]
    except subprocess.TimeoutExpired:
        server.kill()
        return server.communicate()[1]


@pytest.fixture
def http_server(tmp_path):
    server, url = _start(tmp_path, "--token", TOKEN)
    yield url
    _stop(server)


def _post(url, headers):
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}
    return httpx2.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **headers})


def test_requests_without_the_right_token_get_401(http_server):
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                    {"Authorization": f"Bearer {TOKEN}x"}):
        answer = _post(http_server, headers)
        assert answer.status_code == 401, headers
        assert answer.headers["www-authenticate"].startswith("Bearer")


def test_a_client_with_the_token_lists_tools_and_calls_one(http_server):
    async def run():
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with Client(streamable_http_client(http_server, http_client=http)) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                status = await client.call_tool("status", {"problem": "vector_add"})
                history = await client.call_tool("history", {})
                return tools, status, history
    tools, status, history = asyncio.run(run())
    assert {"evaluate", "status", "history"} <= tools
    assert not status.is_error and status.structured_content["evaluations"] == 0
    assert not history.is_error and history.structured_content["result"] == []


def test_a_generated_token_is_printed_once_and_works(tmp_path):
    server, url = _start(tmp_path, env={"KERNEL_MCP_TOKEN": ""})
    try:
        assert _post(url, {}).status_code == 401
        deadline = time.monotonic() + 10
        banner = ""
        while "bearer token" not in banner and time.monotonic() < deadline:
            banner += server.stderr.readline()
        token = banner.split("bearer token ")[1].split()[0]
        assert len(token) >= 32 and _post(url, {"Authorization": f"Bearer {token}"}).status_code == 200
        assert url in banner
    finally:
        _stop(server)


@pytest.mark.parametrize("text, expected", [("8765", ("127.0.0.1", 8765)), (":8765", ("127.0.0.1", 8765)),
                                            ("0.0.0.0:80", ("0.0.0.0", 80)), ("[::1]:9000", ("::1", 9000))])
def test_listen_addresses(text, expected):
    assert parse_listen(text) == expected


@pytest.mark.parametrize("text", ["host:", "127.0.0.1:http", "70000", ""])
def test_bad_listen_addresses(text):
    with pytest.raises(UsageError, match="--http wants"):
        parse_listen(text)


def test_only_loopback_counts_as_local():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.org")


def test_binding_beyond_loopback_warns(tmp_path):
    """0.0.0.0 has to be asked for, and then the banner warns; the server still demands the token."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": repo_pythonpath()}
    server = subprocess.Popen([sys.executable, "-m", "kernel_mcp", "serve", "--root", str(tmp_path), "--http",
                               f"0.0.0.0:{port}", "--token", TOKEN], cwd=REPO, env=env, stderr=subprocess.PIPE,
                              text=True)
    try:
        banner = "".join(server.stderr.readline() for _ in range(3))
        assert "WARNING" in banner and "0.0.0.0" in banner and TOKEN not in banner
    finally:
        _stop(server)


def test_serve_refuses_a_bad_address_with_exit_code_2(tmp_path):
    out = subprocess.run([sys.executable, "-m", "kernel_mcp", "serve", "--root", str(tmp_path), "--http", "nope"],
                         cwd=REPO, env={**os.environ, "PYTHONPATH": repo_pythonpath()}, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "--http wants HOST:PORT" in out.stderr
