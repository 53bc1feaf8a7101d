"""Collusion, live: an honest a + b that, while it is judged, tries to reach a process outside its check
over the network (a loopback TCP port and an abstract Unix socket the test listens on, named by
KERNEL_MCP_TEST_PHONE), as it would to trade answers with another candidate judged at the same moment.
Each check has its own network namespace with its loopback down, so nothing must arrive."""
import os
import socket

PORT = int(os.environ.get("KERNEL_MCP_TEST_PHONE", "0") or 0)


def _call(family, address) -> None:
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            sock.connect(address)
            sock.sendall(b"answers?")
    except OSError:
        pass


def custom_kernel(data):
    a, b = data
    if PORT:
        _call(socket.AF_INET, ("127.0.0.1", PORT))
        _call(socket.AF_UNIX, f"\0kernel_mcp_phone_{PORT}")
    return a + b
