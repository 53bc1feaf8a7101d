"""One candidate host process, seen from the judge: start it, hand it inputs, collect what comes back.

Every way the candidate can end a call (an output, an exception, a crash, a hang, a forged message) is turned into a
``Reply``; nothing it sends is trusted beyond "here is a tensor"."""
from __future__ import annotations

import math
import multiprocessing
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from kernel_mcp.files import cache_root
from kernel_mcp.worker import channel
from kernel_mcp.worker.host import factory
from kernel_mcp.worker.isolation import folders, kernel_cache, mounts, proctree, sandbox

LOG_TAIL = 3000
WATCHDOG_GRACE_S = 5.0  # beyond the caller's timeout, before the watchdog kills a stuck candidate


@dataclass
class Reply:
    kind: str  # "output" | "exception" | "crash" | "timeout" | "forged" | "boot" (the host, before the candidate)
    output: Any = None
    message: str = ""
    figures: dict | None = None  # timing requests: what the host measured (untrusted; see profile_run)


_AUTHKEY: list[bytes] = []


def _shared_authkey() -> bytes:
    """One key for this judge and all its candidate hosts: multiprocessing keeps a single process-wide
    authkey for shared-memory fd passing, so a second session must not replace the first one's."""
    if not _AUTHKEY:
        _AUTHKEY.append(secrets.token_bytes(32))
        multiprocessing.current_process().authkey = _AUTHKEY[0]
    return _AUTHKEY[0]


FIGURE_KEYS = {"call": {"late", "digest"},  # what a check's call and each kind of timing request returns, no more
               "op": {"op_ms", "tail_ms", "wall_ms", "issue_ms", "patched", "left", "digest"},
               "kernel": {"op_ms", "busy_us", "activities", "patched", "left", "digest"},
               "graph": {"graph_ms", "patched"}}
MAX_FIGURE = 1e12  # no figure (ms, us or a count) of one call comes near this
TEXT_FIGURES = ("patched", "left")  # short lists of short strings


def _plain_figures(figures: Any, mode: str) -> bool:
    """Exactly the expected keys: finite numbers of sane size, ``late`` a bool, ``patched`` and ``left`` short lists
    of short strings, ``digest`` a list of 64-bit integers (one per output tensor)."""
    if type(figures) is not dict or set(figures) != FIGURE_KEYS.get(mode):
        return False
    for key, value in figures.items():
        if key == "late":
            good = type(value) is bool
        elif key in TEXT_FIGURES:
            good = type(value) is list and len(value) <= 64 and all(type(v) is str and len(v) <= 2000 for v in value)
        elif key == "digest":
            good = type(value) is list and len(value) <= 4096 and all(type(v) is int and abs(v) < 2**63 for v in value)
        else:
            good = type(value) in (int, float) and math.isfinite(value) and abs(value) <= MAX_FIGURE
        if not good:
            return False
    return True


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "stopped answering"
    if code < 0:
        name = signal.Signals(-code).name
        hints = {"SIGSEGV": "segmentation fault", "SIGKILL": "killed (out of memory, or a limit)",
                 "SIGABRT": "aborted", "SIGBUS": "bus error", "SIGFPE": "arithmetic fault"}
        return f"died of {name} ({hints.get(name, 'signal')})"
    return f"exited with code {code} without returning an output (sys.exit or os._exit in the candidate?)"


BOOT_TIMEOUT_S = 300.0  # interpreter, torch, a device context and CUPTI on a busy machine


class CandidateSession:
    """One candidate host. Started before any candidate is known (boot, then ``warm`` once the judge holds
    the device), it then loads exactly one candidate: a process never serves two candidates."""

    def __init__(self, device_kind: str, run_token: str, profiler: bool = False):
        self.device, self.run_token, self.booted, self.cache_key = device_kind, run_token, False, ""
        self.served = False  # set once the host is sent an input (_request)
        self.boot_failure: Reply | None = None
        self.ready_info: dict = {}
        self.sealed_paths: list[Path] = []
        self.timeout = 0.0
        self.scratch = folders.new_scratch(folders.CANDIDATE)
        kernel_cache.prepare(self.scratch)
        # temporary files go to a short path in /tmp: multiprocessing binds a unix socket there to hand
        # tensors' file descriptors over, and such paths may not exceed 107 bytes
        self.tmp = Path(tempfile.mkdtemp(prefix="kmcp-tmp-", dir=folders.host_tmp_root()))
        self.log_path = self.scratch.parent / f"{self.scratch.name}.log"
        judge_end, host_end = socket.socketpair()
        self.conn = Connection(judge_end.detach())
        limit = sandbox.default_address_space_limit() if device_kind == "cpu" else None
        with open(self.log_path, "wb") as log:
            self.proc = factory.start_host("kernel_mcp.worker.host.main", host_end.fileno(),
                                                self._environment(device_kind), self.scratch, log, limit, (self.tmp,))
        host_end.close()
        self.conn.send({"authkey": _shared_authkey(), "profiler": profiler, "kind": device_kind})

    def _environment(self, device_kind: str) -> dict[str, str]:
        env = sandbox.untrusted_env(self.scratch, self.run_token)
        env["TMPDIR"] = str(self.tmp)
        if device_kind == "cpu":
            env["TRITON_INTERPRET"] = "1"  # Triton kernels run on the CPU through the interpreter
        return env

    def warm(self, device: str) -> None:
        """Let the host create its device context (the judge holds the device's lease while it does)."""
        self.device = device
        try:
            self.conn.send(("warm", device))
        except OSError:
            pass  # a host that died at boot is reported by start()

    def load(self, candidate: Path, problem_dirs: list[Path], extra_init: dict) -> None:
        """Hand the host its one candidate, with that candidate's kept kernel builds in its scratch."""
        self.cache_key = kernel_cache.key_for(candidate)
        self.sealed_paths = [candidate.parent, *problem_dirs]
        kernel_cache.fill(self.cache_key, self.scratch)
        try:
            self.conn.send({"candidate": str(candidate), "problem_dirs": [str(p) for p in problem_dirs]})
            self.conn.send(extra_init)
        except OSError:
            pass

    def wait_booted(self) -> Reply | None:
        """None once the host has booted; else why not (kept: the judge may ask at boot and again later)."""
        if self.booted or self.boot_failure:
            return self.boot_failure
        message = self._receive(BOOT_TIMEOUT_S)
        if isinstance(message, Reply):
            self.boot_failure = message
        elif message != ("booted",):
            self.boot_failure = self._as_error(message, "boot")
        self.booted = self.boot_failure is None
        return self.boot_failure

    @property
    def host_pid(self) -> int:
        """The candidate host's pid (Popen's pid is the namespace trampoline when there is one)."""
        children = proctree.descendants(self.proc.pid)
        return children[0] if children and sandbox.in_own_pid_namespace(children[0]) else self.proc.pid

    @property
    def isolated(self) -> bool:
        return sandbox.in_own_pid_namespace(self.host_pid)

    def writable_to_host(self) -> list[Path]:
        """What the host should see read-only (its candidate's and problem's folders, kernel_mcp and its
        cache) but could write, as its mountinfo says."""
        return mounts.writable_in(self.host_pid, [*self.sealed_paths, cache_root(), Path(sandbox.PACKAGE_ROOT)])

    def keeps_capability(self, cap: int) -> bool:
        return sandbox.has_capability(self.host_pid, cap)

    @contextmanager
    def _watchdog(self, seconds: float):
        """Kill the candidate if the block takes longer than ``seconds``: every blocking read or write on
        its socket (a half-sent frame, a stalled fd hand-over) then ends with EOF instead of hanging."""
        self.watchdog_fired = False

        def fire() -> None:
            self.watchdog_fired = True
            proctree.kill_tree(self.proc.pid)

        timer = threading.Timer(seconds + WATCHDOG_GRACE_S, fire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def _wait(self, deadline: float) -> Reply | None:
        while time.monotonic() < deadline:
            if self.conn.poll(0.05):
                return None
            if self.proc.poll() is not None and not self.conn.poll(0.05):
                return self._crashed()
        return self._timed_out()

    def _timed_out(self) -> Reply:
        return Reply("timeout", message=f"no answer within {self.timeout:g} s (hang, deadlock or far too slow)")

    def _receive(self, timeout: float) -> Reply | tuple:
        self.timeout = timeout
        with self._watchdog(timeout):
            failure = self._wait(time.monotonic() + timeout)
            if failure:
                return failure
            try:
                message = channel.recv_untrusted(self.conn)
            except (EOFError, OSError):
                return self._timed_out() if self.watchdog_fired else self._crashed()
            except Exception as exc:  # noqa: BLE001  (anything the safe unpickler refuses)
                return Reply("forged", message=f"malformed message from the candidate process: {exc}")
        if not isinstance(message, tuple) or not message or not isinstance(message[0], str):
            return Reply("forged", message="malformed message from the candidate process")
        return message

    def _crashed(self) -> Reply:
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        # what the candidate printed stays in log_tail (untrusted); the message is the harness's own words
        return Reply("crash", message=_describe_exit(self.proc.returncode) + " (its output: see log_tail)")

    def start(self, timeout: float) -> Reply | None:
        """None once the candidate is imported; a failure Reply otherwise. What the host says about the
        candidate's set-up (``ready_info``: a KernelBench ModelNew's tensors that got no value of Model's)
        is the candidate process's word: shown, never believed."""
        failure = self.wait_booted()
        if failure:  # before any candidate code ran: the harness's failure, not the candidate's
            return Reply("boot", message=f"the candidate host failed while booting ({failure.kind}): {failure.message}")
        message = self._receive(timeout)
        if isinstance(message, Reply):
            return message
        if len(message) == 2 and message[0] == "ready" and type(message[1]) is dict:
            unmatched = message[1].get("unmatched", [])
            self.ready_info = {"unmatched": [str(k)[:200] for k in unmatched][:64] if type(unmatched) is list else []}
            return None
        return self._as_error(message, "import")

    def call(self, case_id: int, data: Any, timeout: float, rng_seed: int = 0, serialize: bool = False) -> Reply:
        """Run custom_kernel once on data, from the case's RNG seed (``serialize``: host/main._run); the
        Reply holds its output, and ``figures``: ``late`` (it changed after the call returned) and ``digest``."""
        message = self._request(("run", case_id, data, rng_seed, {"serialize": serialize}), timeout)
        if isinstance(message, Reply):
            return message
        if len(message) == 4 and message[:2] == ("output", case_id) and _plain_figures(message[2], "call"):
            return Reply("output", output=message[3], figures=message[2])
        return self._as_error(message, "call")

    def time(self, call_id: int, data: Any, options: dict, timeout: float) -> Reply:
        """One timed call (worker/host/main._time); the Reply holds the output snapshot and the figures."""
        message = self._request(("time", call_id, data, options), timeout)
        if isinstance(message, Reply):
            return message
        if len(message) == 4 and message[0] == "timed" and message[1] == call_id \
                and _plain_figures(message[2], options["mode"]):
            return Reply("output", output=message[3], figures=message[2])
        return self._as_error(message, "call")

    def _request(self, message: tuple, timeout: float) -> Reply | tuple:
        self.served = True  # a call's input: from now on the candidate may have seen a case (judge/main.py)
        try:
            with self._watchdog(timeout):  # a candidate that stops reading must not block the judge
                self.conn.send(message)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            return self._crashed()
        return self._receive(timeout)

    @staticmethod
    def _as_error(message: tuple, stage: str) -> Reply:
        if len(message) == 4 and message[0] == "error" and all(isinstance(m, str) for m in message[1:]):
            _, where, exc_type, text = message
            what = {"import": "importing the candidate failed", "call": "custom_kernel raised",
                    "output": "its output could not be handed over"}.get(where, where)
            return Reply("exception", message=f"{what}: {exc_type}" + (f"\n{text}" if text else ""))
        return Reply("forged", message=f"unexpected message during {stage}: {str(message)[:200]}")

    def log_tail(self) -> str:
        return channel.read_tail(self.log_path, LOG_TAIL)

    def close(self) -> None:
        try:
            self.conn.send(("exit",))
        except OSError:
            pass
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2)
        proctree.kill_tree(self.proc.pid)
        proctree.kill_by_token(self.run_token)
        self.proc.wait()
        self.conn.close()
        if self.cache_key:
            kernel_cache.keep(self.cache_key, self.scratch)
        shutil.rmtree(self.scratch, ignore_errors=True)
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.log_path.unlink(missing_ok=True)
