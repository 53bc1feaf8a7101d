"""Work dies with whoever asked for it: a caller killed mid-call (a server hit by SIGKILL) leaves none of
that call's processes (judge, candidate host, compile step host, what the candidate started) 2 s later."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import CHEATS_STATE, PROBLEMS, processes_of_cache, repo_pythonpath

VECTOR_ADD = PROBLEMS / "vector_add"
GRACE_S = 2.0  # the goal: nothing of the call is alive this long after its caller died

# a candidate that says it is running (a file in conftest.CHEATS_STATE, in /dev/shm: the one place outside
# its scratch it may write where its file systems are sealed), starts a daemon of its own, then takes far longer than the test waits
SLOW = textwrap.dedent('''
    import os, pathlib, time
    def _announce():
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        pathlib.Path({started!r}).write_text(str(os.getpid()))
        time.sleep(600)
    {where}
''')


@pytest.mark.parametrize("call, where", [
    ("check", "def custom_kernel(data):\n    _announce()"),
    ("compile", "import triton  # a Triton candidate: compile records its launches by running it\n"
                "_announce()\ndef custom_kernel(data):\n    return data"),
])
def test_a_caller_killed_mid_call_leaves_no_process_of_that_call(tmp_path, call, where):
    cache = tmp_path / "cache"
    candidate = tmp_path / "slow.py"
    CHEATS_STATE.mkdir(exist_ok=True)
    started = CHEATS_STATE / f"caller_death_{os.getpid()}_{call}"
    started.unlink(missing_ok=True)
    candidate.write_text(SLOW.format(where=where, started=str(started)))
    code = (f"from kernel_mcp.tools.{call} import {call}; " +
            (f"check({str(VECTOR_ADD)!r}, {str(candidate)!r}, device='cpu')" if call == "check" else
             f"compile({str(candidate)!r}, problem={str(VECTOR_ADD)!r})"))
    env = dict(os.environ, PYTHONPATH=repo_pythonpath(), KERNEL_MCP_CACHE=str(cache))
    caller = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not started.exists():
            assert caller.poll() is None, "the call ended before its candidate ran"
            assert time.monotonic() < deadline, "the candidate never started"
            time.sleep(0.1)
        before = processes_of_cache(cache)
        assert len(before) >= 2, before  # the call's processes are seen (the test can fail)
        caller.kill()
        caller.wait()
        time.sleep(GRACE_S)
        left = processes_of_cache(cache)
        assert not left, f"{len(left)} process(es) of the call outlived their caller by {GRACE_S} s"
    finally:
        caller.kill()
        started.unlink(missing_ok=True)
        for pid in processes_of_cache(cache):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
