"""Candidate hosts forked from a copy of the judge taken before it knew any secret: torch is imported once per
check, by the judge, instead of once more by every host it starts.

A judge's hosts used to be fresh interpreters, each importing torch (1.2-3.5 s of CPU on the machines
measured: BENCHMARKS.md), most of a check's CPU time on a CPU-only machine. Now the judge imports torch
and the modules a host needs *before* it reads its boot line (the HMAC key is still in the pipe, not in
its memory), then forks a small factory process. The factory closes that pipe and every other descriptor
of the judge's, and from then on forks one host per request of the judge. What a host can read of its
own memory is therefore the judge's state at that point: imported modules, the allowlisted environment,
the caller's ``sys.path``; no key, no seed, no request, no problem (docs/threat-model.md, rule 1: the candidate never
sees what decides its verdict).

A forked host is made the way ``sandbox.spawn_untrusted`` makes an exec'd one: its own process group,
the same ``make_preexec`` hardening (no new privileges, limits, its own PID and mount namespace, capabilities
dropped), the allowlisted environment (``os.environ`` replaced, so C libraries see it too), its scratch as
working folder, only its socket and its log open. It runs no other candidate's code (the factory never
loads one). It is re-parented to the judge (a subreaper) before it does any of that, so the judge waits
for it, reads its exit status and kills its tree as it did an exec'd host's.

Forked by default (verified on an H200; on a CPU, timed by the same figures as exec'd hosts: ``start_host``).
Where a fork would not be safe (a Python thread already running in the judge, no subreaper) or
``KERNEL_MCP_FORK_HOSTS=0`` asks for it, hosts are exec'd as before.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kernel_mcp.worker.isolation import sandbox

FORK_VAR = "KERNEL_MCP_FORK_HOSTS"
HOST_MODULES = ("kernel_mcp.worker.host.main",)  # what a forked process may be made to run
_MAX_REQUEST = 1 << 20

_factory: list[Factory] = []  # this judge's factory, once started


def wanted() -> bool:
    """By default (KERNEL_MCP_FORK_HOSTS=0 turns it off)."""
    return os.environ.get(FORK_VAR, "") != "0"


def preload(gpu_hosts: bool) -> None:
    """What every candidate host imports before its candidate, imported once here (no device touched:
    a fork after a CUDA context would not be safe); Triton too where the hosts will run it on a GPU."""
    import importlib
    for name in ("torch", "torch.multiprocessing", "kernel_mcp.worker.tensors", "kernel_mcp.worker.host.main",
                 "kernel_mcp.worker.host.timing", "kernel_mcp.worker.host.warm"):
        importlib.import_module(name)  # torch.multiprocessing registers the tensor sharing reductions
    if gpu_hosts:  # not otherwise: Triton decides at import whether its own library functions run under
        try:       # its interpreter (TRITON_INTERPRET, which a CPU host has and the judge has not)
            importlib.import_module("triton")
        except Exception:  # noqa: BLE001  (not installed, or broken: the candidate's import says so)
            pass


def start(gpu_hosts: bool = False) -> bool:
    """In the judge, before it reads its boot line: preload and fork the factory. False (hosts are exec'd)
    where that is not wanted or not safe. ``gpu_hosts``: the device asked for is a GPU (a guess)."""
    if not wanted() or not sandbox.is_subreaper():
        return False
    preload(gpu_hosts)
    if threading.active_count() != 1:
        return False  # a Python thread could hold a lock the child would wait on forever
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = _fork()
    if pid == 0:
        ours.close()
        _serve(theirs)  # never returns
    theirs.close()
    _factory.append(Factory(ours, pid))
    return True


def start_host(module: str, fd: int, env: dict[str, str], scratch: Path, log, limit: int | None,
               writable: tuple[Path, ...]):
    """A process running ``module``'s main (``fd``: its socket, as sys.argv[1]): forked by this judge's
    factory where it has one, else exec'd (sandbox.spawn_untrusted). Returns its Popen, or an Adopted.

    Hosts that will be timed are forked too. On a GPU the time is device time (CUDA events), verified
    with forked hosts on the H200. On a CPU the time is the host's own work, where a forked host's first
    writes to pages it shares with the judge (copy-on-write faults) could have landed: an A/B of CPU
    timing (vector_add's Triton kernel under the interpreter, 8 alternated rounds each of an A/A and an
    A/B comparison) found the same ratios and intervals with forked and exec'd timed hosts (BENCHMARKS.md,
    twelfth session)."""
    isolate = sandbox.namespaces_wanted()
    if _factory:
        try:
            return _factory[0].spawn(module, fd, env, scratch, log, limit, isolate, writable)
        except OSError:
            pass  # the factory is gone or cannot make this one: an exec'd host is slower, not worse
    return sandbox.spawn_untrusted([sys.executable, "-B", "-P", "-m", module, str(fd)], env, scratch, log, fd, limit,
                                   isolate, writable=writable)


def factory_pid() -> int | None:
    """The factory's pid (the judge leaves it running when it pauses its other descendants)."""
    return _factory[0].pid if _factory else None


class Factory:
    """The judge's side of its factory: one request at a time, under a lock (hosts start from threads)."""

    def __init__(self, sock: socket.socket, pid: int):
        self.sock, self.pid = sock, pid
        self.triton_loaded = "triton" in sys.modules  # then its hosts cannot run Triton's interpreter
        self._lock = threading.Lock()

    def spawn(self, module: str, pass_fd: int, env: dict[str, str], cwd: Path, log, limit_address_space: int | None,
              isolate: bool, writable: tuple[Path, ...] = ()) -> Adopted:
        """A host running ``module``'s main with ``pass_fd`` (its socket to the judge) as sys.argv[1], made
        like sandbox.spawn_untrusted's. Raises OSError if the factory cannot make one, or not this one (a
        host running Triton's interpreter, the guess of a GPU having been wrong)."""
        if self.triton_loaded and env.get("TRITON_INTERPRET") == "1":
            raise OSError("Triton was imported for GPU hosts: an interpreting host is exec'd")
        request = json.dumps({"module": module, "env": env, "cwd": str(cwd), "limit": limit_address_space,
                              "isolate": isolate, "writable": [str(cwd), *map(str, writable)]}).encode()
        with self._lock:
            socket.send_fds(self.sock, [request], [pass_fd, log.fileno()])
            reply = self.sock.recv(64)
        if not reply.isdigit():
            raise OSError(f"the host factory could not start a host: {reply.decode(errors='replace') or 'it ended'}")
        return Adopted(int(reply))


class Adopted:
    """A host forked by the factory and re-parented to this process: what judge/session.py uses of a Popen."""

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: gone, status unknown
                self.returncode = -signal.SIGKILL
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"host {self.pid}", timeout)
            time.sleep(0.005)
        return self.returncode


def _fork() -> int:
    """os.fork, without Python 3.12's warning about native threads: the only ones here at fork time are
    OpenBLAS's pool (numpy starts it on import), which OpenBLAS itself stops before a fork and restarts
    in each process on first use (its pthread_atfork handler); torch's pools start lazily."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _serve(sock: socket.socket) -> None:
    """The factory: drop everything of the judge's but the socket and the log, then fork hosts on request
    until the judge closes the socket (or dies)."""
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)  # the pipe the boot line (with the key) is about to arrive on
        _keep_only(sock.fileno())
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C reaches the caller; the judge ends us
        while True:
            message, fds, _, _ = socket.recv_fds(sock, _MAX_REQUEST, 2)
            if not message:
                break
            try:
                sock.send(str(_fork_host(json.loads(message), fds, sock)).encode())
            except Exception as exc:  # noqa: BLE001  (said to the judge, which falls back or fails the host)
                sock.send(f"{type(exc).__name__}: {exc}"[:60].encode() or b"error")
            finally:
                for fd in fds:
                    os.close(fd)
    finally:
        os._exit(0)


def _fork_host(request: dict, fds: list[int], sock: socket.socket) -> int:
    """Fork twice: the host's parent exits at once, so the host is re-parented to the judge (the nearest
    subreaper), which can then wait for it. Returns the host's pid."""
    if request.get("module") not in HOST_MODULES or len(fds) != 2:
        raise ValueError("malformed request")
    ready_r, ready_w = os.pipe()
    middle = _fork()
    if middle == 0:
        os.close(ready_r)
        me = os.getpid()  # not the host's getppid(): this process may have exited by the time it asks
        host = _fork()
        if host == 0:
            os.close(ready_w)
            _become_host(request, fds, sock, me)  # never returns
        os.write(ready_w, str(host).encode())
        os._exit(0)
    os.close(ready_w)
    os.waitpid(middle, 0)  # from here on the host's parent is the judge
    with os.fdopen(ready_r, "rb") as ready:
        host = int(ready.read() or b"0")
    if not host:
        raise OSError("fork failed")
    return host


def _become_host(request: dict, fds: list[int], sock: socket.socket, middle: int) -> None:
    """In the forked host: wait to be the judge's child, be made like an exec'd host, run its main."""
    code = 1
    try:
        while os.getppid() == middle:  # the middle process is exiting; the namespace trampoline
            time.sleep(0.0005)          # watches its parent from then on, which must be the judge
        sock.close()  # through its object, which would otherwise close whatever later takes its number
        become_host(request, *fds)
        code = 0
    except BaseException:  # noqa: BLE001  (the judge sees the host exit before booting, and its log)
        import traceback
        traceback.print_exc()
    finally:
        os._exit(code)


def become_host(request: dict, pass_fd: int, log_fd: int) -> None:
    """Make this forked process what sandbox.spawn_untrusted makes of an exec'd one, then run the request's
    module's main (``pass_fd`` as sys.argv[1]). Used here and by the caller's fork server (step hosts)."""
    os.setpgid(0, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    _keep_only(pass_fd)  # the log's own fd and whatever else the parent had open
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    threads_as_environment()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    tempfile.tempdir = None  # gettempdir() reads the new TMPDIR
    sandbox.make_preexec(request["limit"], request["isolate"], tuple(request["writable"]))()
    sandbox.drop_capabilities_now()  # what the exec would have done after the bounding set's drop
    sandbox.dumpable_again()  # as after an exec: the judge (and this copy of it) is not; the harness's
    # scans of /proc/<pid>/environ for leftovers (proctree.kill_by_token) must see this process
    sys.argv = [request["module"], str(pass_fd)]
    import importlib
    importlib.import_module(request["module"]).main()  # ends the process itself (channel.serve_inherited)


def threads_as_environment() -> None:
    """In a forked process given a new environment: torch's thread pool was sized when the copy it was
    forked from loaded torch (OpenMP reads OMP_NUM_THREADS once, at load), so a pool worker's share of the
    cores (runners/pool.py) is applied here, or every fork would start as many threads as there are cores."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    if value.isdigit() and int(value) > 0 and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(value))


def _keep_only(fd: int) -> None:
    """Close every descriptor but stdin, stdout, stderr and ``fd``."""
    os.closerange(3, fd)
    os.closerange(fd + 1, 1 << 16)
