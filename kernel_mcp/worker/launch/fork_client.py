"""The caller's side of its fork server (launch/fork_server.py): start it on first use, ask it for a judge or a step
host, and follow what it forked through a Popen-like handle (``Forked``)."""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from kernel_mcp.files import CACHE_VAR
from kernel_mcp.worker.isolation import proctree
from kernel_mcp.worker.launch.env import judge_env, judge_sys_path
from kernel_mcp.worker.launch.fork_server import MAX_MESSAGE

FORK_VAR = "KERNEL_MCP_FORK_SERVER"
SERVER_BOOT = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
               "from kernel_mcp.worker.launch.fork_server import serve; serve(int(sys.argv[2]))")

_servers: dict[str, ForkServer] = {}  # by what its children must share with it: sys.path and environment
_servers_lock = threading.Lock()


def for_this_caller() -> ForkServer | None:
    """This process's fork server, started on first use (again where the one it had cannot be used); None
    where processes are to be exec'd (launch/fork_server.py says when)."""
    if os.environ.get(FORK_VAR) == "0" or not hasattr(os, "pidfd_open"):
        return None
    sys_path, env = judge_sys_path(), judge_env()
    # the cache folder is read when used, never on import: one server serves every cache
    key = json.dumps([sys_path, sorted((k, v) for k, v in env.items() if k != CACHE_VAR)])
    with _servers_lock:
        server = _servers.get(key)
        if server is not None and not server.current():
            server.close()
            server = None
        if server is None:
            for stale in _servers.values():  # one per caller: an old one ends once its last child is released
                stale.close()
            _servers.clear()
            server = _servers[key] = ForkServer(sys_path, env)
    return server


def close_all() -> None:
    """Close this process's fork servers (each ends once its children are released)."""
    with _servers_lock:
        for server in _servers.values():
            server.close()
        _servers.clear()


atexit.register(close_all)


def server_pids() -> list[int]:
    """The pids of this process's fork servers (tests)."""
    with _servers_lock:
        return [server.proc.pid for server in _servers.values()]


class ForkServer:
    """The caller's handle on its fork server."""

    def __init__(self, sys_path: list[str], env: dict[str, str]):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.owner = os.getpid()  # a fork of the caller must not use the caller's server
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-S", "-I", "-B", "-c", SERVER_BOOT, json.dumps(sys_path),
                                      str(theirs.fileno())], pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        theirs.close()
        self.sock = ours
        self.imported: dict[str, str] | None = None  # its AT_IMPORT, once it says it is ready
        self._lock = threading.Lock()

    def current(self) -> bool:
        """Usable for the next process: running, started by this process, its imported files unchanged."""
        if os.getpid() != self.owner or self.proc.poll() is not None:
            return False
        if self.imported is None:
            try:
                message = self.sock.recv(MAX_MESSAGE, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return True  # still importing: it imports the files as they are now
            except OSError:
                return False
            if not message.startswith(b"ready "):
                return False
            self.imported = json.loads(message[len(b"ready "):])
        return all(_digest(path) == digest for path, digest in self.imported.items())

    def judge(self, env: dict[str, str], device: str, result_fd: int, log) -> Forked | None:
        """A judge (judge/start.main with ``result_fd`` and ``device``); its stdin is the Forked's ``stdin``.
        Returns at once (the server may still be importing); None if it cannot be asked."""
        stdin_r, stdin_w = os.pipe()
        try:
            forked = self._ask({"kind": "judge", "env": env, "device": device}, [stdin_r, result_fd, log.fileno()])
        finally:
            os.close(stdin_r)
        if forked is None:
            os.close(stdin_w)
            return None
        forked.stdin = os.fdopen(stdin_w, "wb")
        return forked

    def host(self, module: str, pass_fd: int, env: dict[str, str], cwd, log, limit_address_space: int | None,
             isolate: bool, writable: tuple = ()) -> Forked | None:
        """An untrusted process running ``module``'s main with ``pass_fd`` as sys.argv[1], made as
        sandbox.spawn_untrusted makes one (host/factory.become_host). None if it cannot be asked."""
        return self._ask({"kind": "host", "module": module, "env": env, "cwd": str(cwd), "limit": limit_address_space,
                          "isolate": isolate, "writable": [str(cwd), *map(str, writable)]}, [pass_fd, log.fileno()])

    def _ask(self, request: dict, fds: list[int]) -> Forked | None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self._lock:
                socket.send_fds(self.sock, [json.dumps(request).encode()], [theirs.fileno(), *fds])
        except OSError:
            ours.close()
            return None
        finally:
            theirs.close()
        return Forked(ours)

    def close(self) -> None:
        self.sock.close()
        self.log.close()


def _digest(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return ""


class Forked:
    """What a caller uses of a Popen, for a process its fork server forked: ``pid`` (waits until it is
    forked: None if it never was), ``known_pid`` (does not wait), ``poll``, ``wait``, ``returncode``,
    ``stdin`` (a judge's); ``release`` lets the server reap it (after the caller has killed its tree), or
    not fork it at all where it had not yet (``end`` does both)."""

    PID_WAIT_S = 300.0  # the server's imports on a busy machine, and the requests ahead of this one

    def __init__(self, watch: socket.socket):
        self._watch, self.stdin = watch, None
        self._pid: int | None = None
        self.returncode: int | None = None
        self._buffer, self._ended = b"", False
        self._lock = threading.Lock()  # a watchdog thread may ask for the pid while the caller polls

    @property
    def pid(self) -> int | None:
        self._read_until(lambda: self._pid is not None, self.PID_WAIT_S)
        return self._pid

    @property
    def known_pid(self) -> int | None:
        self._read_until(lambda: self._pid is not None, 0)
        return self._pid

    @property
    def never_started(self) -> bool:
        """The server ended or refused before forking this process (asked once its output ended: a process
        that ran had its pid said right after its fork; a refusal is said at once)."""
        self._read_until(lambda: self._pid is not None, 5.0)
        return self._ended and self._pid is None

    def poll(self) -> int | None:
        self._read_until(lambda: self.returncode is not None, 0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._read_until(lambda: self.returncode is not None, timeout):
            raise subprocess.TimeoutExpired("a forked process", timeout)
        return self.returncode

    def release(self) -> None:
        self._watch.close()

    def _read_until(self, done, timeout: float | None) -> bool:
        """Read what the server says until ``done()`` or it is gone, at most ``timeout`` s (None: no limit)."""
        with self._lock:
            return self._read_locked(done, timeout)

    def _read_locked(self, done, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done() and not self._ended:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            self._watch.settimeout(left)
            try:
                chunk = self._watch.recv(4096)
            except (TimeoutError, BlockingIOError):
                break
            except OSError:
                chunk = b""
            if not chunk:  # the server is gone: what it forked went with it (judge_start's caller watch)
                self._ended = True
                if self.returncode is None:
                    self.returncode = -signal.SIGKILL
                break
            self._buffer += chunk
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                word, _, value = line.decode().partition(" ")
                if word == "pid":
                    self._pid = int(value)
                elif word == "exit":
                    self.returncode = int(value)
        return done()


def end(proc) -> None:
    """Kill the tree of ``proc`` (a Popen or a Forked) and wait for it; a Forked not forked yet never is."""
    forked = isinstance(proc, Forked)
    pid = proc.known_pid if forked else proc.pid
    if pid is not None:
        proctree.kill_tree(pid)
        proc.wait()
    if forked:
        proc.release()


