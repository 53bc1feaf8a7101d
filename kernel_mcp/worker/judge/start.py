"""The judge process's first step: before it reads its boot line (which carries the key), it imports torch and
what a candidate host needs and forks the factory its hosts will be forked from (host/factory.py); then
it starts its candidate hosts from the boot line, so they boot while it validates the line and warms up.

Started by ``worker/launch/judge.py`` (isolated Python, see ``launch/env.JUDGE_BOOT``) with the fd of its result pipe.
The boot line is read here as plain JSON and only what a host needs is taken from it, each field checked; the judge then
validates the whole line (``protocol.JudgeBoot``) and ends these hosts if it refuses it.
"""
from __future__ import annotations

import json
import os
import re
import sys
import threading
import time

from kernel_mcp.worker import trace
from kernel_mcp.worker.host import factory as host_factory
from kernel_mcp.worker.isolation import check_namespaces, proctree, sandbox
from kernel_mcp.worker.judge.hosts import Hosts
from kernel_mcp.worker.resolve import guess_kind

# imports inside functions: the request-serving modules (pydantic, check, profile) load after the factory is
# forked and the hosts are started from the boot line, so the hosts boot while they load


def early_hosts(line: str) -> Hosts | None:
    """Hosts started from the boot line's fields, or None when they do not look right (the judge's full
    validation then says why)."""
    try:
        fields = json.loads(line)
        token, count, profiler, device = (fields["run_token"], fields["hosts"], fields["warm_profiler"],
                                          fields["device"])
    except (ValueError, KeyError, TypeError):
        return None
    if not (isinstance(token, str) and re.fullmatch(r"[0-9a-f]{32}", token) and type(count) is int
            and 0 <= count <= 2 and type(profiler) is bool and isinstance(device, str)):
        return None
    trace.enable(fields.get("trace") if isinstance(fields.get("trace"), str) else "")
    hosts = Hosts(guess_kind(device), token, profiler, count)
    trace.mark("judge: hosts started")
    return hosts


def end_with_caller(token: str | None, poll_s: float = 0.2) -> None:
    """A daemon thread that ends this judge and everything it started (its hosts and whatever they left,
    found by the tree and by the run token) as soon as the process that started it is gone: work never
    outlives whoever asked for it, nor the lease that caller held for it."""
    caller = os.getppid()

    def watch() -> None:
        while os.getppid() == caller:
            time.sleep(poll_s)
        proctree.kill_tree(os.getpid(), include_self=False)
        if token:
            proctree.kill_by_token(token)
        os._exit(1)

    threading.Thread(target=watch, name="caller-watch", daemon=True).start()


def main(fd: int, requested: str = "") -> None:
    """``requested``: the device asked for (its boot line says it again, validated): hosts that will run
    Triton on a GPU get Triton imported before the fork too."""
    # first, while this process has one thread (unshare refuses otherwise): namespaces of this check's own
    refused = check_namespaces.enter()
    sandbox.harden_trusted_process()  # after: entering may have made this process dumpable
    if refused:
        sys.stderr.write(f"kernel_mcp judge: /dev/shm, System V IPC and the network stay the machine's: {refused}\n")
    # no torch device plugins from entry points, in the judge nor in the hosts forked from it
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    host_factory.start(gpu_hosts=bool(requested) and guess_kind(requested) == "cuda")
    line = sys.stdin.readline()
    hosts = early_hosts(line)
    end_with_caller(hosts.run_token if hosts is not None else None)
    from kernel_mcp.worker.judge import main as judge
    judge.main(fd, line, hosts)
