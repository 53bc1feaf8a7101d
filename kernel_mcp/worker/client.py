"""The caller's side of the judge: spawn it, send the request, read authenticated lines back."""
from __future__ import annotations

import json
import os
import secrets
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from kernel_mcp.worker import channel, sandbox

ProgressFn = Callable[[str, int, int], None]


class JudgeFailure(Exception):
    """The judge ended without a trustworthy result (crash, timeout, forged line). Message says which."""


# The judge starts isolated (-I: no PYTHON* variables, no user site, no cwd on sys.path) and without the
# site module (-S: no sitecustomize, no .pth code), with this process's sys.path given explicitly. A file
# planted in site-packages or the working folder therefore cannot run inside the judge.
JUDGE_BOOT = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
              "from kernel_mcp.worker.judge import main; main(int(sys.argv[2]))")


def judge_sys_path() -> list[str]:
    return [sandbox.PACKAGE_ROOT] + [str(Path(p).resolve()) for p in sys.path if p and Path(p).is_dir()]


def judge_env() -> dict[str, str]:
    # the judge needs no secrets either, and passes none on; it writes no .pyc (the guard treats new ones
    # as planted)
    return sandbox.harness_env(PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")


def run_judge(request: dict, timeout: float, on_progress: ProgressFn | None = None) -> dict:
    """Run one request in a fresh judge process; return its signed result body."""
    sandbox.harden_trusted_process(reaper=False)  # the key and the result pipe live in this process
    key, token = secrets.token_bytes(32), secrets.token_hex(16)
    read_fd, write_fd = os.pipe()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, "-S", "-I", "-B", "-c", JUDGE_BOOT, json.dumps(judge_sys_path()),
                                 str(write_fd)],
                                pass_fds=[write_fd], stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                env=judge_env(), start_new_session=True)
        os.close(write_fd)
        try:
            proc.stdin.write((json.dumps({**request, "key": key.hex(), "run_token": token}) + "\n").encode())
            proc.stdin.close()
            return _read_result(read_fd, key, proc, timeout, on_progress, log)
        finally:
            os.close(read_fd)
            sandbox.kill_tree(proc.pid)
            sandbox.kill_by_token(token)  # candidate processes that escaped the tree (killed the judge...)
            proc.wait()


def _read_result(fd: int, key: bytes, proc: subprocess.Popen, timeout: float, on_progress, log) -> dict:
    deadline, buffer = time.monotonic() + timeout, b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(timeout=min(1.0, deadline - time.monotonic())):
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                body = channel.verify(key, line.decode(errors="replace"))
                if body is None:
                    raise JudgeFailure("a message on the judge's private channel failed authentication "
                                       "(forged by the candidate?)")
                if body["type"] == "result":
                    return body["result"]
                if on_progress:
                    on_progress(body.get("message", ""), body.get("done", 0), body.get("total", 0))
        else:
            raise JudgeFailure(f"the judge gave no result within {timeout:g} s")
    proc.wait(timeout=10)
    log.seek(0)
    tail = log.read()[-3000:].decode(errors="replace")
    raise JudgeFailure(f"the judge exited (code {proc.returncode}) without a result\n{tail}")
