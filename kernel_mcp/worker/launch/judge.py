"""The caller's side of one judge process: start it, wait for it to be ready, send it one request, read its
authenticated messages back, and clean up after it (its tree and anything carrying its run token)."""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import secrets
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_mcp.worker import channel, trace
from kernel_mcp.worker.isolation import proctree, sandbox
from kernel_mcp.worker.launch import fork_client
from kernel_mcp.worker.launch.env import JUDGE_BOOT, judge_env, judge_sys_path

# imports inside functions: pydantic and the message types load after the judge's process has started, so a
# one-shot check's judge boots while the caller imports them

if TYPE_CHECKING:
    from kernel_mcp.worker.protocol import Final, JudgeRequest, Progress, ProgressFn, Ready

# protocol (pydantic) is imported after the judge's process has started, not when this module is: a one-shot
# call then spends those ~0.2-0.3 s while the judge's interpreter starts, instead of before it


class JudgeFailure(Exception):
    """The judge ended without a trustworthy result (crash, timeout, forged line). Message says which."""


LOG_TAIL = 3000


class JudgeProcess:
    """One judge: started when made (it boots in the background), used for at most one request."""

    def __init__(self, device: str, hosts: int = 1, warm_profiler: bool = False, pin: dict[str, str] | None = None):
        sandbox.harden_trusted_process(reaper=False)  # the key and the result pipe live in this process
        self.key, self.token = secrets.token_bytes(32), secrets.token_hex(16)
        self.ready: Ready | None = None
        self.started = time.monotonic()
        self._buffer = b""
        self._closed = False
        self.on_memory_need: Callable[[int], None] | None = None  # the runner resizes its lease reservation
        self.log = tempfile.TemporaryFile()
        # the fields of protocol.JudgeBoot, which the judge validates; written as plain JSON so that the judge
        # gets its boot line (and starts its candidate hosts) before this process has imported pydantic
        self._boot_line = json.dumps({"key": self.key.hex(), "run_token": self.token, "device": device,
                                      "hosts": hosts, "warm_profiler": warm_profiler, "trace": trace.target()})
        self._pin = dict(pin or {})  # a pool worker's CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES (runners/pool.py)
        self._start(device, fork=True)

    def _start(self, device: str, fork: bool) -> None:
        """Forked by this process's fork server where it can (launch/fork_server.py), else a fresh interpreter;
        either way given its boot line at once."""
        self.read_fd, write_fd = os.pipe()
        trace.mark("caller: starting a judge")
        sys_path, env = judge_sys_path(), judge_env() | self._pin
        server = fork_client.for_this_caller() if fork else None
        forked = server.judge(env, device, write_fd, self.log) if server else None
        self.proc = forked or subprocess.Popen(
            [sys.executable, "-S", "-I", "-B", "-c", JUDGE_BOOT, json.dumps(sys_path), str(write_fd), device],
            pass_fds=[write_fd], stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT,
            env=env, start_new_session=True)
        os.close(write_fd)
        self._device = device
        self._write(self._boot_line)

    def _write(self, line: str) -> None:
        try:
            self.proc.stdin.write((line + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # a dead judge is reported by the next read

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def unchanged(self, timeout: float, on_progress: ProgressFn | None = None) -> bool:
        """True if the judge booted and every kernel_mcp file it imported still has the content it had
        then (a spare judge booted before an edit to kernel_mcp is not used)."""
        try:
            ready = self.wait_ready(timeout, on_progress)
        except JudgeFailure:
            return False
        for path, digest in ready.loaded.items():
            try:
                if hashlib.sha256(Path(path).read_bytes()).hexdigest() != digest:
                    return False
            except OSError:
                return False
        return True

    def wait_ready(self, timeout: float, on_progress: ProgressFn | None = None) -> Ready:
        """The judge's Ready (cached); what it reported while booting (a wait for the device) goes to
        ``on_progress``."""
        if self.ready is None:
            from kernel_mcp.worker.protocol import Ready
            message = self._next(time.monotonic() + timeout, on_progress, extend_s=timeout)
            if not isinstance(message, Ready):
                raise JudgeFailure(f"the judge sent {type(message).__name__} before it was ready")
            self.ready = message
            trace.mark("caller: judge ready")
        return self.ready

    def run(self, request: JudgeRequest, timeout: float, on_progress: ProgressFn | None) -> Final:
        """Send the request; forward progress; return the signed result."""
        self.send_line(request.model_dump_json())
        return self.result(timeout, on_progress)

    def send_line(self, line: str) -> None:
        """The request line, as it travels (tests send malformed ones this way); nothing more is sent."""
        self.started = time.monotonic()  # a warm judge may have booted long ago: its time starts now
        self._write(line)
        self.proc.stdin.close()

    def result(self, timeout: float, on_progress: ProgressFn | None = None) -> Final:
        from kernel_mcp.worker.protocol import Final
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline, on_progress)
            if isinstance(message, Final):
                trace.mark("caller: result read")
                return message

    def _next(self, deadline: float, on_progress: ProgressFn | None, extend_s: float = 0.0) -> Ready | Final:
        """The next ready or result message; progress messages on the way go to ``on_progress``, and each
        moves the deadline to at least ``extend_s`` from now (a booting judge that says it waits for the
        device's lease is waiting in line, not stuck)."""
        from kernel_mcp.worker.protocol import Progress
        with selectors.DefaultSelector() as sel:
            sel.register(self.read_fd, selectors.EVENT_READ)
            while True:
                while b"\n" in self._buffer:
                    line, self._buffer = self._buffer.split(b"\n", 1)
                    message = self._verify(line)
                    if isinstance(message, Progress):
                        if message.memory_need_bytes is not None and self.on_memory_need:
                            self.on_memory_need(message.memory_need_bytes)
                        if message.seconds_need:  # the judge measured a large problem: its deadline grows
                            deadline = max(deadline, time.monotonic() + message.seconds_need)
                        if on_progress:
                            on_progress(message.message, message.done, message.total)
                        deadline = max(deadline, time.monotonic() + extend_s)
                        continue
                    return message
                left = deadline - time.monotonic()
                if left <= 0:
                    raise JudgeFailure(f"the judge gave no {'result' if self.ready else 'sign of being ready'} "
                                       f"within {self._waited():g} s")
                if not sel.select(timeout=min(1.0, left)):
                    continue
                chunk = os.read(self.read_fd, 1 << 16)
                if not chunk and self._never_forked():
                    sel.unregister(self.read_fd)
                    self.close_pipes()
                    self._start(self._device, fork=False)  # the same boot line, to a fresh interpreter
                    sel.register(self.read_fd, selectors.EVENT_READ)
                    continue
                if not chunk:
                    raise JudgeFailure(self._exited())
                self._buffer += chunk

    def _verify(self, line: bytes) -> Ready | Progress | Final:
        from pydantic import ValidationError

        from kernel_mcp.worker.protocol import JudgeMessage
        body = channel.verify(self.key, line.decode(errors="replace"))
        if body is None:
            raise JudgeFailure("a message on the judge's private channel failed authentication "
                               "(forged by the candidate?)")
        try:
            return JudgeMessage.validate_python(body)
        except ValidationError as exc:
            raise JudgeFailure(f"the judge sent a malformed message: {exc}") from None

    def _waited(self) -> float:
        """Seconds since the judge was asked for what it failed to give (its boot, or the result)."""
        return round(time.monotonic() - self.started, 1)

    def _exited(self) -> str:
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.log.seek(0)
        tail = self.log.read()[-LOG_TAIL:].decode(errors="replace")
        code = self.proc.returncode
        # SIGKILL that this side did not send: on Linux most often the kernel's out-of-memory killer
        why = (" (killed with SIGKILL, most often by the out-of-memory killer: the problem's inputs and float64 "
               "references may not fit this machine's memory)") if code == -signal.SIGKILL else ""
        return f"the judge exited (code {code}){why} without a result\n{tail}"

    def _never_forked(self) -> bool:
        """Its fork server ended or refused before forking it (it is then started exec'd: nothing ran yet)."""
        return isinstance(self.proc, fork_client.Forked) and self.proc.never_started

    def close_pipes(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1

    def close(self) -> None:
        """End the judge (if still running), its whole tree, and every process carrying its run token. Once:
        a second call must not kill a process id the system has since given to another process."""
        if self._closed:
            return
        self._closed = True
        self.close_pipes()
        fork_client.end(self.proc)
        proctree.kill_by_token(self.token)  # candidate processes that escaped the tree (killed the judge...)
        self.log.close()
        trace.mark("caller: judge closed")


# A judge started ahead of need by a one-shot command (the CLI), before its heavy imports, for the runner's
# first judge call on that device to claim; closed at exit if nothing claimed it (a usage error).
_PRESTARTED: dict[tuple[str, bool], JudgeProcess] = {}


def prestart(device: str, warm_profiler: bool = False) -> None:
    """Start booting a judge for ``device`` (as the user wrote it) now; ``claim`` hands it to the runner. A
    device the judge refuses ends that judge at once; the command itself reports the usage error."""
    key = (device.strip().lower(), warm_profiler)
    if key in _PRESTARTED:
        return  # started already (kernel_mcp.cli.launch, then the command itself)
    if not _PRESTARTED:
        atexit.register(_close_prestarted)
    _PRESTARTED[key] = JudgeProcess(key[0], warm_profiler=warm_profiler)


def claim(device: str, warm_profiler: bool) -> JudgeProcess | None:
    """The judge ``prestart`` started for this device and purpose, once; else None."""
    return _PRESTARTED.pop((device, warm_profiler), None)


def _close_prestarted() -> None:
    for judge in _PRESTARTED.values():
        judge.close()
    _PRESTARTED.clear()
