"""The caller's side of a compile step: a step host (worker/steps/main.py) started like a candidate host
(allowlisted environment, scratch HOME, its own PID and mount namespace where the OS allows, limits, run
token), given one request, read back over its socket; killed with its whole tree afterwards. Its reads
end when the process ends or its time is up, whatever it left holding its output."""
from __future__ import annotations

import os
import secrets
import shutil
import socket
import stat
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

from pydantic import ValidationError

from kernel_mcp.worker import channel
from kernel_mcp.worker.isolation import folders, kernel_cache, proctree, sandbox
from kernel_mcp.worker.launch import fork_client
from kernel_mcp.worker.protocol import StepReply

MAX_REPLY_BYTES = 64 << 20
LOG_TAIL = 3000


class StepProcess:
    """One step host. ``interpret``: Triton runs under its interpreter (recording on a machine without a GPU)."""

    def __init__(self, interpret: bool, pin: dict[str, str] | None = None):
        self.interpret, self.token = interpret, secrets.token_hex(16)
        self.scratch = folders.new_scratch(folders.STEP)
        kernel_cache.prepare(self.scratch)
        self.log_path = self.scratch.parent / f"{self.scratch.name}.log"
        ours, theirs = socket.socketpair()
        self.conn = Connection(ours.detach())
        env = sandbox.untrusted_env(self.scratch, self.token) | (pin or {})  # pin: a pool worker's GPU
        if interpret:
            env["TRITON_INTERPRET"] = "1"
        self._theirs, self._env = theirs, env
        self.proc = self._start(fork=True)
        self.cache_key = ""

    def _start(self, fork: bool):
        """Forked by this process's fork server where it can (launch/fork_server.py), else a fresh interpreter."""
        limit = sandbox.default_address_space_limit() if self.interpret else None
        module, fd = "kernel_mcp.worker.steps.main", self._theirs.fileno()
        server = fork_client.for_this_caller() if fork else None
        with open(self.log_path, "wb") as log:
            proc = server.host(module, fd, self._env, self.scratch, log, limit, sandbox.namespaces_wanted()) \
                if server else None
            return proc or sandbox.spawn_untrusted([sys.executable, "-B", "-P", "-m", module, str(fd)], self._env,
                                                   self.scratch, log, fd, limit, sandbox.namespaces_wanted())

    def _started(self) -> None:
        """Its socket's other end closed once the process has it (a fork server that ended before forking
        it: it is started exec'd now)."""
        if self._theirs is None:
            return
        if isinstance(self.proc, fork_client.Forked) and self.proc.pid is None:
            self.proc = self._start(fork=False)
        self._theirs.close()
        self._theirs = None

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, request, candidate: Path, timeout_s: float) -> StepReply:
        """Send ``request``; the reply, or a failed one saying what happened (timeout, crash, malformed).
        A step that writes files (a build's ``out_dir``) writes them in its scratch, the only folder it
        may write to; they are moved to the ``out_dir`` asked for afterwards."""
        self.cache_key = kernel_cache.key_for(candidate)
        kernel_cache.fill(self.cache_key, self.scratch)
        wanted = getattr(request, "out_dir", None)
        if wanted is None:
            return self._exchange(request, timeout_s)
        reply = self._exchange(request.model_copy(update={"out_dir": str(self.scratch / "out")}), timeout_s)
        _move_files(self.scratch / "out", Path(wanted))
        return reply

    def _exchange(self, request, timeout_s: float) -> StepReply:
        self._started()
        try:
            self.conn.send_bytes(request.model_dump_json().encode())
        except OSError:
            return self._failed(f"the step process ended before its request (exit {self.proc.poll()})")
        deadline = time.monotonic() + timeout_s
        # the whole reply must arrive by the deadline: a process that sends half a frame and stalls is killed
        # by this timer, which ends the read with EOF (a blocking read would hold the guard and the lease)
        fired = threading.Event()
        watchdog = threading.Timer(timeout_s, lambda: (fired.set(), proctree.kill_tree(self.proc.pid)))
        watchdog.daemon = True
        watchdog.start()
        try:
            while time.monotonic() < deadline and not fired.is_set():
                if self.conn.poll(0.05):
                    reply = self._receive()
                    break
                if self.proc.poll() is not None and not self.conn.poll(0.05):
                    if fired.is_set():  # the watchdog's own kill, seen before its flag was: a timeout
                        reply = None
                        break
                    return self._failed(f"the step process exited (code {self.proc.returncode}) without a reply")
            else:
                reply = None
        finally:
            watchdog.cancel()
        if reply is None or (fired.is_set() and not reply.ok):  # a half-sent reply, ended by the watchdog
            proctree.kill_tree(self.proc.pid)
            return self._failed(f"{request.kind} took longer than {timeout_s:g} s", timed_out=True)
        return reply

    def _receive(self) -> StepReply:
        try:
            raw = self.conn.recv_bytes(MAX_REPLY_BYTES)
            reply = StepReply.model_validate_json(raw)
        except (EOFError, OSError) as exc:
            return self._failed(f"the step process's reply broke off ({exc})")
        except ValidationError as exc:
            return self._failed(f"malformed reply from the step process: {str(exc)[:500]}")
        return reply.model_copy(update={"log_tail": self.log_tail(), "tampered": []})  # the guard's to say

    def _failed(self, message: str, timed_out: bool = False) -> StepReply:
        return StepReply(ok=False, error=message, timed_out=timed_out, log_tail=self.log_tail())

    def log_tail(self) -> str:
        return channel.read_tail(self.log_path, LOG_TAIL)

    def close(self, keep: bool = True) -> None:
        """End it and its tree; its builds kept for its candidate unless ``keep`` is False (a step that ran out of
        time: half a build kept would let the check finish it within a timeout of its own, so a build slower than
        the import timeout would pass a batch and time out in a one-shot check)."""
        fork_client.end(self.proc)
        proctree.kill_by_token(self.token)
        if self._theirs is not None:
            self._theirs.close()
        self.conn.close()
        if self.cache_key and keep:
            kernel_cache.keep(self.cache_key, self.scratch)
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.log_path.unlink(missing_ok=True)


def _move_files(source: Path, target: Path) -> None:
    """The plain files a step wrote into ``source`` (no links, no folders, none over MAX_REPLY_BYTES), copied
    into ``target`` by trusted code. The step host may still be running: each file is opened without
    following a link and checked on the open descriptor, so swapping a checked file for a link to one of
    the user's files cannot make this copy it."""
    target.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir() if source.is_dir() and not source.is_symlink() else []:
        try:
            fd = os.open(item, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue  # a link (ELOOP), or gone
        try:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_REPLY_BYTES:
                (target / item.name).write_bytes(_read_at_most(fd, MAX_REPLY_BYTES))
        finally:
            os.close(fd)


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit and (chunk := os.read(fd, min(1 << 20, limit - size))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
