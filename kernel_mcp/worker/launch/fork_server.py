"""Judges and step hosts forked from a clean copy of the harness that the caller starts once, instead of a
fresh interpreter each.

A judge used to be a new interpreter importing torch and the harness: ~2 of a judge's ~2.2 CPU-s on a
2-core CPU machine (BENCHMARKS.md, twelfth session), and a long-lived caller (an MCP server, an optimize
run, a warm runner's spares) starts hundreds; a compile step host paid the same again. Now the caller starts
one *fork server*: the same isolated interpreter a judge is (``python -S -I -B``, the caller's ``sys.path``
given explicitly, the judge's allowlisted environment), which imports torch and every judge module, never
touches a device (a fork after a CUDA context is not safe) nor imports Triton (a step host that interprets
Triton must import it under TRITON_INTERPRET), and then forks one process per request.

What a forked process inherits is therefore what an exec'd judge builds for itself: harness modules and the
allowlisted environment. The server never receives a key: a judge's boot line (key, run token) goes into
the judge's own stdin pipe, which the server only passes on; a request carries an environment, a device or
a module, and descriptors. Candidates cannot reach it: it is non-dumpable and holds no descriptor of
theirs, and each forked process closes the server's descriptors first thing. A step host is made from its
copy the way host_factory makes a candidate host (``factory.become_host``: sandbox, capabilities,
allowlisted environment), so it runs untrusted code with nothing secret in memory: the server has none.

The server is each forked process's parent and keeps its exit status for the caller: per process a socket
(the *watch*) says ``pid N`` once forked and ``exit C`` once it ended, and the server reaps it only when the
caller closes that socket, so a pid the caller kills is never reused meanwhile (as with a Popen's zombie).
A watch closed while its process runs (the caller died) kills that process's tree. The server ends once
the caller closed its socket and released every process; a caller that dies closes them all.

Processes are exec'd as before where the server cannot be used: ``KERNEL_MCP_FORK_SERVER=0``, no pidfd
(Linux < 5.3), a server that died, or one whose imported files changed on disk since (a developer edited
kernel_mcp: its judges would run the old code). A process the server never forked is started again exec'd
by its caller (``judge.JudgeProcess``, ``step.StepProcess``). The caller's side is fork_client.py.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import sys
import tempfile

from kernel_mcp.worker.digests import AT_IMPORT, loaded_digests

# imports inside functions: the caller imports this module (fork_client reads MAX_MESSAGE) and must not load
# the judge's or the hosts' code; the server sets torch's environment before anything imports torch; a forked
# child imports only what its role needs

# every module a judge imports on its way to a verdict, imported once in the server
JUDGE_MODULES = ("kernel_mcp.worker.judge.start", "kernel_mcp.worker.judge.main", "kernel_mcp.worker.judge.check",
                 "kernel_mcp.worker.judge.profile", "kernel_mcp.worker.resolve", "kernel_mcp.worker.host.warm",
                 "kernel_mcp.worker.lease", "kernel_mcp.worker.steps.main")
HOST_MODULES = ("kernel_mcp.worker.steps.main",)  # what a forked untrusted process may be made to run
MAX_MESSAGE = 1 << 20


# --- the server --------------------------------------------------------------------------------------------


def serve(fd: int) -> None:
    """The fork server process: import, then fork on request until the caller is done with it."""
    sock = socket.socket(fileno=fd)
    try:
        from kernel_mcp.worker.isolation import sandbox
        sandbox.harden_trusted_process(reaper=False)  # not dumpable: nobody reads it or opens its sockets
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the caller's to handle; it releases us
        _preload()
        sock.send(b"ready " + json.dumps(AT_IMPORT).encode())
        _Loop(sock).run()
    finally:
        os._exit(0)


def _preload() -> None:
    import gc
    import importlib

    from kernel_mcp.worker.host import factory

    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # as judge/start.main does before torch's import
    factory.preload(gpu_hosts=False)  # torch and what a candidate host needs; never Triton (above)
    for name in JUDGE_MODULES:
        importlib.import_module(name)
    AT_IMPORT.update(loaded_digests())
    gc.freeze()  # what is imported stays put: a child's garbage collections do not copy those pages


class _Loop:
    """Requests on the caller's socket; per child, its pidfd (it ended) and its watch (the caller let go)."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.selector = selectors.DefaultSelector()
        self.selector.register(sock, selectors.EVENT_READ, None)
        self.children: dict[int, tuple[socket.socket, int]] = {}  # pid -> (watch, pidfd)
        self.serving = True

    def run(self) -> None:
        while self.serving or self.children:
            for key, _ in self.selector.select():
                if key.data is None:
                    self._request()
                else:
                    kind, pid = key.data
                    self._exited(pid) if kind == "exited" else self._released(pid)

    def _request(self) -> None:
        try:
            message, fds, _, _ = socket.recv_fds(self.sock, MAX_MESSAGE, 4)
        except OSError:
            message, fds = b"", []
        if not message:
            self.serving = False
            self.selector.unregister(self.sock)
            for fd in fds:
                os.close(fd)
            return
        watch = socket.socket(fileno=fds[0]) if fds else None
        try:
            if watch is None:
                raise ValueError("malformed request")
            if _let_go(watch):  # closed before its turn (a spare closed at once): nothing to start
                watch.close()
                return
            pid = self._fork(json.loads(message), fds[1:], watch)
            pidfd = os.pidfd_open(pid)
        except Exception as exc:  # noqa: BLE001  (the caller starts this process exec'd instead)
            if watch is not None:
                _say(watch, f"error {type(exc).__name__}: {exc}"[:200])
                watch.close()
            return
        finally:
            for fd in fds[1:]:
                os.close(fd)
        self.children[pid] = (watch, pidfd)
        _say(watch, f"pid {pid}")
        self.selector.register(pidfd, selectors.EVENT_READ, ("exited", pid))
        self.selector.register(watch, selectors.EVENT_READ, ("released", pid))

    def _fork(self, request: dict, fds: list[int], watch: socket.socket) -> int:
        kind = request.get("kind")
        if not isinstance(request.get("env"), dict) or not (
                (kind == "judge" and isinstance(request.get("device"), str) and len(fds) == 3)
                or (kind == "host" and request.get("module") in HOST_MODULES and len(fds) == 2)):
            raise ValueError("malformed request")
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                self._forget(watch)
                if kind == "judge":
                    _become_judge(request, *fds)
                else:
                    from kernel_mcp.worker.host import factory
                    factory.become_host(request, *fds)
                code = 0
            except BaseException:  # noqa: BLE001  (the caller sees it end early, and its log)
                import traceback
                traceback.print_exc()
            finally:
                os._exit(code)
        return pid

    def _forget(self, watch: socket.socket) -> None:
        """In a child: close the server's sockets through their objects (closed only by number, a socket
        object collected later would close whatever descriptor then has that number)."""
        for other, pidfd in self.children.values():
            other.close()
            os.close(pidfd)
        watch.close()
        self.selector.close()
        self.sock.close()

    def _exited(self, pid: int) -> None:
        watch, pidfd = self.children[pid]
        self.selector.unregister(pidfd)
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # a zombie until released: pid kept
        code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        _say(watch, f"exit {code}")

    def _released(self, pid: int) -> None:
        """The caller closed the watch (done with this process, or gone): end it if it still runs, reap it."""
        watch, pidfd = self.children.pop(pid)
        self.selector.unregister(watch)
        try:
            self.selector.unregister(pidfd)
            from kernel_mcp.worker.isolation import proctree
            proctree.kill_tree(pid)  # still running: its caller is gone
        except KeyError:
            pass  # it had ended
        os.waitpid(pid, 0)
        os.close(pidfd)
        watch.close()


def _become_judge(request: dict, stdin_fd: int, result_fd: int, log_fd: int) -> None:
    """In a forked judge: made as launch/judge.JudgeProcess's Popen makes one (its own session, the boot line on
    stdin, output to the log, the result pipe its only other descriptor, the judge's environment)."""
    os.setsid()
    os.dup2(stdin_fd, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.closerange(3, result_fd)
    os.closerange(result_fd + 1, 1 << 16)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.clear()
    os.environ.update(request["env"])
    from kernel_mcp.worker.host.factory import threads_as_environment
    threads_as_environment()
    tempfile.tempdir = None  # gettempdir() reads the new TMPDIR
    sys.argv = ["-c", str(result_fd), request["device"]]
    from kernel_mcp.worker.judge.start import main
    main(result_fd, request["device"])


def _let_go(watch: socket.socket) -> bool:
    """Has the caller closed this watch already?"""
    try:
        return watch.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _say(watch: socket.socket, line: str) -> None:
    try:
        watch.sendall(line.encode() + b"\n")
    except OSError:
        pass  # the caller let go already: its release arrives next
