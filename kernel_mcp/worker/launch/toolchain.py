"""The one place kernel_mcp launches trusted toolchain binaries: compilers (nvcc, hipcc), binary tools
(cuobjdump, ptxas, nvdisasm, cu++filt) and the hardware profilers (ncu, rocprofv3).

``backends/`` and ``counters/`` build the command lines and parse what comes back; ``run_tool`` starts the
process. It never raises for a tool that is missing, fails or hangs: the ``ToolRun`` says what happened.

Every tool runs in a session of its own (``start_new_session``), so on a timeout the whole process group dies:
ncu and rocprofv3 launch the profiled program, compilers launch their stages. The pipes are read with a
deadline of their own, so a grandchild that left the group and still holds stdout cannot hang the read.
"""
from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from kernel_mcp.worker.isolation.sandbox import allowlisted_env

# Per stream. nvdisasm of a large cubin prints a few MB; past this a tool is runaway, not informative.
OUTPUT_CAP_BYTES = 32 * 1024 * 1024
# After the kill: how long to wait for the pipes to close. EOF follows the kill at once, and what the group wrote
# before it is read already; only a process that left the group and holds a pipe makes this wait run out.
DRAIN_AFTER_KILL_S = 2.0
_READ_BYTES = 64 * 1024
_WRITE_BYTES = 512  # POSIX PIPE_BUF: a write of this size to a writable pipe never blocks


class ToolRun(BaseModel):
    """One finished (or abandoned) tool run."""

    argv: list[str]
    # None: it never started (or would not die when killed); after a timeout, minus the signal that killed it
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""  # empty when run with merge_stderr (it is then inside stdout, in order)
    timed_out: bool = False
    truncated: bool = False  # a stream passed OUTPUT_CAP_BYTES; the rest was read and dropped
    message: str = ""  # in words: not started, killed, output held open or cut; empty for a plain run

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def exit_status(self) -> int:
        """For callers that only compare with 0: 0 when ok, else the tool's nonzero code (negative: the signal
        that killed it), or 1 when it never started."""
        return 0 if self.ok else (self.returncode or 1)

    @property
    def started(self) -> bool:
        return self.returncode is not None or self.timed_out

    @property
    def transcript(self) -> str:
        """stdout, stderr and, when it did not complete, why: everything a person reading an error needs."""
        return self.stdout + self.stderr + (f"\n{self.message}\n" if self.message else "")


def tool_env(**extra: str) -> dict[str, str]:
    """The environment of a toolchain binary: this process's, allowlisted (no API keys), plus ``extra``."""
    return {**allowlisted_env(), **extra}


def run_tool(argv: Sequence[str | Path], *, timeout_s: float, env: dict[str, str] | None = None,
             cwd: Path | str | None = None, input: str | None = None, merge_stderr: bool = False) -> ToolRun:
    """Run ``argv`` (stdin: ``input``, else nothing) and capture its output as UTF-8 text, for at most
    ``timeout_s`` seconds. ``env`` None: ``tool_env()``. A compiler reads the candidate's source, which
    may include any file, ``/proc/self/environ`` too, into its error messages: it never sees a secret."""
    args = [str(a) for a in argv]
    env = tool_env() if env is None else env
    try:
        proc = subprocess.Popen(args, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                                env=env, cwd=cwd, start_new_session=True)
    except OSError as exc:  # missing binary, not executable, bad cwd
        return ToolRun(argv=args, message=f"could not start {args[0]}: {exc}")
    deadline = time.monotonic() + max(timeout_s, 0.001)
    pipes = _Pipes(proc, (input or "").encode("utf-8"))
    pipes_closed = pipes.pump(deadline)
    exited = _exited_by(proc, deadline)
    if not (pipes_closed and exited):
        _kill_group(proc)
        pipes.pump(time.monotonic() + DRAIN_AFTER_KILL_S)
    pipes.close()
    exited_now = exited or _exited_by(proc, time.monotonic() + DRAIN_AFTER_KILL_S)
    run = ToolRun(argv=args, returncode=proc.returncode if exited_now else None, stdout=pipes.text(proc.stdout),
                  stderr=pipes.text(proc.stderr), timed_out=not exited, truncated=pipes.truncated)
    name = Path(args[0]).name
    if not exited:
        run.message = f"{name} took longer than {timeout_s:g} s and was killed"
    elif not pipes_closed:
        run.message = f"{name} exited, but a process it started held its output open past {timeout_s:g} s"
    elif run.truncated:
        run.message = f"{name} printed more than {OUTPUT_CAP_BYTES} bytes; the rest was dropped"
    return run


def _exited_by(proc: subprocess.Popen, deadline: float) -> bool:
    try:
        proc.wait(timeout=max(deadline - time.monotonic(), 0.001))
        return True
    except subprocess.TimeoutExpired:
        return False


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the tool and everything it started in its session
    except (ProcessLookupError, PermissionError):
        proc.kill()


class _Pipes:
    """Feeds stdin and drains stdout/stderr through one selector (what subprocess.communicate does on
    POSIX), but with a byte cap per stream and a deadline that holds even while a pipe stays open."""

    def __init__(self, proc: subprocess.Popen, data: bytes) -> None:
        self.selector = selectors.DefaultSelector()
        self.captured: dict[object, bytearray] = {}  # by stream
        self.truncated = False
        self.data, self.sent = memoryview(data), 0
        if proc.stdin is not None:
            self.selector.register(proc.stdin, selectors.EVENT_WRITE)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                self.captured[stream] = bytearray()
                self.selector.register(stream, selectors.EVENT_READ)

    def pump(self, deadline: float) -> bool:
        """Move bytes until every pipe is closed (True) or the deadline passes (False)."""
        while self.selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            for key, _ in self.selector.select(left):
                if key.events & selectors.EVENT_WRITE:
                    self._write(key.fileobj)
                else:
                    self._read(key.fileobj)
        return True

    def _write(self, stdin) -> None:
        chunk = self.data[self.sent:self.sent + _WRITE_BYTES]
        try:
            self.sent += os.write(stdin.fileno(), chunk) if chunk else 0
        except BrokenPipeError:  # the tool stopped reading; what it printed still counts
            chunk = b""
        if not chunk or self.sent >= len(self.data):
            self._forget(stdin)

    def _read(self, stream) -> None:
        chunk = os.read(stream.fileno(), _READ_BYTES)
        if not chunk:
            self._forget(stream)
            return
        kept = self.captured[stream]
        room = OUTPUT_CAP_BYTES - len(kept)
        kept += chunk[:max(room, 0)]
        self.truncated |= len(chunk) > room

    def _forget(self, stream) -> None:
        self.selector.unregister(stream)
        stream.close()

    def text(self, stream) -> str:
        return bytes(self.captured.get(stream, b"")).decode("utf-8", "replace")

    def close(self) -> None:
        """Close what is still open (a grandchild may hold the other end for ever)."""
        for key in list(self.selector.get_map().values()):
            self._forget(key.fileobj)
        self.selector.close()
