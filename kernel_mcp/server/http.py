"""Streamable HTTP: the server behind a bearer token, with the listen address parsed and checked."""
from __future__ import annotations

import hmac
import ipaddress
import secrets
import sys
from pathlib import Path

from kernel_mcp.errors import UsageError
from kernel_mcp.server.app import build_server
from kernel_mcp.worker import LocalRunner, Runner, harden_trusted_process
from kernel_mcp.worker import remember_secret as remember


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``, else 401."""

    def __init__(self, app, token: str):
        if not token:
            raise ValueError("an empty bearer token would let anyone in")
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="kernel_mcp"')]})
            await send({"type": "http.response.body",
                        "body": b'{"error": "unauthorized: send Authorization: Bearer <token>"}'})
            return
        await self.app(scope, receive, send)  # lifespan and authorized requests pass through

    def _authorized(self, scope) -> bool:
        sent = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
        return hmac.compare_digest(sent, self.expected)  # constant time: no timing oracle for the token


def parse_listen(text: str) -> tuple[str, int]:
    """'PORT', ':PORT' or 'HOST:PORT' ('[::1]:PORT' for IPv6) -> (host, port); the host defaults to loopback."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--http wants HOST:PORT or PORT (e.g. 127.0.0.1:8765); got {text!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost may resolve anywhere
        return False


def serve_http(root: str, listen: str, token: str | None = None, runner: Runner | None = None) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp behind a bearer token (given, or generated and printed)."""
    import uvicorn

    harden_trusted_process(reaper=False)  # the token and API keys stay out of /proc's reach
    host, port = parse_listen(listen)
    generated = not token
    token = token or secrets.token_urlsafe(32)
    shown = f"[{host}]" if ":" in host else host
    say = sys.stderr.write
    say(f"kernel_mcp: streamable HTTP at http://{shown}:{port}/mcp (workspace {Path(root).resolve()})\n")
    say(f"kernel_mcp: bearer token {token} (clients send it as 'Authorization: Bearer <token>')\n" if generated
        else "kernel_mcp: bearer token from --token / KERNEL_MCP_TOKEN\n")
    if not is_loopback(host):
        say(f"kernel_mcp: WARNING: listening on {host}, reachable from other machines; anyone with the token "
            "can run code through this server. Prefer 127.0.0.1 with an SSH tunnel.\n")
    remember(token, "the HTTP bearer token")  # kept out of results like the environment's secrets
    runner = runner or LocalRunner(warm=True)
    app = BearerAuth(build_server(root, runner).streamable_http_app(host=host), token)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        runner.close()
