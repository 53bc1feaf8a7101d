"""Cheat: find the harness's pipes through /proc/<ancestor>/fd/* and write forged results there.

Walks up from the candidate's parent (the judge) to the judge's parent (the caller: CLI or server),
through /proc/self/stat (which also works inside a PID namespace), and for
each of those kernel_mcp processes tries to open every pipe or file descriptor in /proc/<pid>/fd for
writing and writes a forged passing JSON line (plain, and shaped like a signed channel line), then
``os._exit(0)``. A same-user process can do this to any dumpable process that has no capabilities it lacks.
(For the safety of the machine running the tests, only ancestors whose command line mentions kernel_mcp
are touched.) Expected: not a pass, and the CLI's stdout still holds exactly one JSON object.
"""
import json
import os
import stat

from _cheat_util import ancestors

FAKE = {"passed": True, "verdict": "pass", "problem": "vector_add", "candidate": "forged", "cases": [],
        "findings": []}
LINES = (json.dumps(FAKE) + "\n" + json.dumps({"body": json.dumps({"type": "result", "result": FAKE}),
                                               "mac": "0" * 64}) + "\n").encode()


def custom_kernel(data):
    for pid in [pid for pid, cmd in ancestors() if b"kernel_mcp" in cmd]:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            path = f"/proc/{pid}/fd/{fd}"
            try:
                mode = os.stat(path).st_mode
                if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
                    continue
                handle = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                os.write(handle, LINES)
            except OSError:
                pass
            finally:
                os.close(handle)
    os._exit(0)
