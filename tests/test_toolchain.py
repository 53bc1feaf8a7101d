"""worker/launch/toolchain.py: the one launcher of compilers and profilers never raises and never hangs."""
from __future__ import annotations

import sys
import time

from kernel_mcp.worker.launch import toolchain


def test_a_plain_run_returns_its_output_and_code():
    run = toolchain.run_tool([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); "
                              "sys.exit(3)"], timeout_s=60)
    assert (run.returncode, run.stdout.strip(), run.stderr.strip(), run.ok) == (3, "out", "err", False)


def test_input_reaches_the_tool():
    run = toolchain.run_tool([sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"], timeout_s=60,
                             input="mangled")
    assert run.ok and run.stdout.strip() == "MANGLED"


def test_a_missing_binary_is_a_failed_run_not_an_exception():
    run = toolchain.run_tool(["/nonexistent/nvcc", "--version"], timeout_s=5)
    assert not run.ok and not run.started and run.message


def test_a_hanging_tool_and_a_grandchild_holding_its_pipe_end_at_the_timeout():
    """The tool forks a grandchild into a session of its own (out of the tool's group) that keeps stdout
    open for a minute, then hangs itself: run_tool returns soon after its timeout anyway."""
    script = ("import os, time\n"
              "if os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\n"
              "print('started', flush=True)\ntime.sleep(60)\n")
    started = time.monotonic()
    run = toolchain.run_tool([sys.executable, "-c", script], timeout_s=2)
    assert run.timed_out and not run.ok and "started" in run.stdout
    assert time.monotonic() - started < 2 + toolchain.DRAIN_AFTER_KILL_S + 5


def test_output_past_the_cap_is_dropped_and_said(monkeypatch):
    monkeypatch.setattr(toolchain, "OUTPUT_CAP_BYTES", 1000)
    run = toolchain.run_tool([sys.executable, "-c", "print('x' * 100000)"], timeout_s=60)
    assert run.ok and run.truncated and len(run.stdout) <= 1000
