"""Process hygiene for untrusted code: allowlisted environment, Linux hardening, killing whole trees.

This is not a container. It stops the attacks docs/threat-model.md lists (secrets in the environment, reading the
judge's memory or file descriptors, forged results, leftover daemons). Where the OS gives a process its own
mount namespace, a candidate sees every file system read-only except its own scratch folders and /dev: it
cannot change your workspace, kernel_mcp, the problem or another run's files. It can still read what your
user can read. Run candidates you do not trust in a container or VM.
"""
from __future__ import annotations

import ctypes
import functools
import os
import re
import resource
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kernel_mcp.files import CACHE_VAR, cache_root
from kernel_mcp.worker.isolation import folders, kernel_cache, mounts, proctree, syscalls
from kernel_mcp.worker.isolation.kernel_cache import scratch_env
from kernel_mcp.worker.isolation.proctree import RUN_TOKEN_VAR

# Exact names and prefixes a kernel build or run may need. Everything else (API keys, cloud credentials,
# tokens) stays with the caller.
_ENV_NAMES = {
    "PATH", "LANG", "LANGUAGE", "TERM", "TZ", "PYTHONPATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH",
    "CC", "CXX", "CUDAHOSTCXX", "MAX_JOBS", "VIRTUAL_ENV", "CONDA_PREFIX", "OMP_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "TORCH_CUDA_ARCH_LIST",
    "PYTORCH_ROCM_ARCH", "TORCH_EXTENSIONS_DIR", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
}
_ENV_PREFIXES = ("KERNEL_MCP_", "LC_", "CUDA_", "NVIDIA_", "HIP_", "ROCM_", "HSA_", "TRITON_", "OMP_", "MKL_", "KMP_",
                 "NCCL_", "TORCHINDUCTOR_", "PYTORCH_", "TORCH_")
_SECRET_WORDS = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)


PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])  # the directory that holds kernel_mcp/


def harness_env(**extra: str) -> dict[str, str]:
    """An allowlisted environment in which a child process imports this kernel_mcp first, plus ``extra``."""
    env = allowlisted_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [PACKAGE_ROOT, env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def allowlisted_env(source: dict[str, str] | None = None) -> dict[str, str]:
    """The environment untrusted code may see: an allowlist, minus anything that looks like a secret."""
    env = dict(os.environ if source is None else source)
    return {k: v for k, v in env.items()
            if (k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)) and not _SECRET_WORDS.search(k)}


def untrusted_env(scratch: Path, run_token: str) -> dict[str, str]:
    """The environment of a process that runs candidate code: the allowlist, a scratch HOME (and TMPDIR,
    unless the caller moves it), its own kernel build caches (worker/isolation/kernel_cache.py), the run token its
    leftovers are found by, and kernel_mcp's cache root named explicitly (the scratch HOME would move it)."""
    env = harness_env(HOME=str(scratch), TMPDIR=str(scratch), PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1",
                      **{RUN_TOKEN_VAR: run_token, CACHE_VAR: str(cache_root())}, **scratch_env(scratch))
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton's current default, stated to silence its warning
    env["TORCHINDUCTOR_CACHE_DIR"] = str(scratch / "torchinductor")  # never another process's (the judge's)
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)  # the judge's own setting (judge/start.main)
    env.pop("TRITON_INTERPRET", None)  # set by the caller where wanted, never inherited
    return env


def namespaces_wanted() -> bool:
    """Processes that run candidate code get their own PID and mount namespace where the OS allows it;
    KERNEL_MCP_PID_NAMESPACE=0 turns that off (to test the fallback, or where namespaces break a driver)."""
    return os.environ.get("KERNEL_MCP_PID_NAMESPACE", "1") != "0"


def spawn_untrusted(argv: list[str], env: dict[str, str], cwd: Path, log, pass_fd: int, limit_address_space: int | None,
                    isolate: bool, writable: tuple[Path, ...] = ()) -> subprocess.Popen:
    """Start a process that will run candidate code: its own process group, PID and mount namespace where
    the OS allows (every file system read-only inside but ``cwd``, its scratch, and ``writable``), no new
    privileges, no core dumps, output to ``log``, one inherited fd (its socket to the trusted side)."""
    return subprocess.Popen(argv, pass_fds=[pass_fd], env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, process_group=0,
                            preexec_fn=make_preexec(limit_address_space, isolate, (str(cwd), *map(str, writable))))


_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 4, 36, 37
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24
CAP_SYS_PTRACE, CAP_SYS_ADMIN = 19, 21
CLONE_NEWPID, CLONE_NEWUSER, CLONE_NEWNS = 0x20000000, 0x10000000, 0x00020000


def harden_trusted_process(reaper: bool = True) -> None:
    """For the judge and the caller: not dumpable, so a same-user process without CAP_SYS_PTRACE can
    neither read our memory (the HMAC key), environment (API keys) nor open our pipes through
    /proc/<pid>/{mem,environ,fd}. The judge also becomes a subreaper: orphaned descendants re-parent to
    it, so they can be found and killed."""
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    if reaper:
        _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def is_subreaper() -> bool:
    """True if this process is a subreaper (harden_trusted_process made it one): orphans re-parent to it."""
    value = ctypes.c_int(0)
    return _libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0) == 0 and value.value == 1


# Capabilities a root candidate keeps: none it could use against the judge, the caller or the machine.
_KEEP_CAPS = {14, 23, 24}  # CAP_IPC_LOCK (pinned memory), CAP_SYS_NICE, CAP_SYS_RESOURCE
_LAST_CAP = 63


def make_preexec(limit_address_space: int | None, isolate: bool, writable: tuple[str, ...] = ()):
    """``preexec_fn`` for a process that runs candidate code: runs in the child between fork and exec.
    ``writable``: the only folders it may write where its own mount namespace can be made (its scratch)."""

    def preexec() -> None:
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        syscalls.deny_keyring()  # the per-user keyring outlives the process and is shared by every check
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if limit_address_space:
            resource.setrlimit(resource.RLIMIT_AS, (limit_address_space, limit_address_space))
        if isolate:
            _enter_namespaces(writable)
        # root keeps its capabilities across exec unless they leave the bounding set; so does a user who is
        # root of the user namespace it just made (refused, harmlessly, where there are none to drop)
        for cap in range(_LAST_CAP + 1):
            if cap not in _KEEP_CAPS:
                _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)

    return preexec


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_CAPABILITY_VERSION_3 = 0x20080522  # linux/capability.h: two 32-bit words per set


def drop_capabilities_now() -> None:
    """For a process that runs candidate code without an exec (worker/host/factory.py): make its effective
    and permitted capabilities those a root candidate keeps (dropping them from the bounding set only takes
    effect at an exec). Other users too: one that made a user namespace holds every capability in it (with
    CAP_SYS_ADMIN it could undo its read-only mounts and the cover over the kernel build store)."""
    mask = sum(1 << cap for cap in _KEEP_CAPS)
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if _libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    for word in (0, 1):  # keep only what the process has (adding one would be refused)
        keep = mask >> (32 * word) & 0xFFFFFFFF
        data[word].effective &= keep
        data[word].permitted &= keep
        data[word].inheritable = 0
    if _libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed: the host would keep root's capabilities")


def dumpable_again() -> None:
    """For a process that runs candidate code without an exec: dumpable, as an exec would have made it
    (its parent, the judge, is not; see harden_trusted_process)."""
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)


def _enter_namespaces(writable: tuple[str, ...] = ()) -> None:
    """Make the process about to exec PID 1 of a new PID namespace with its own /proc, behind a small
    trampoline, and give it a mount namespace in which every file system is read-only but ``writable``.

    When PID 1 of a namespace dies the kernel kills every process in it, so no daemon the candidate
    starts (double fork, setsid) outlives it; nothing inside can signal the judge or the caller, and its
    private /proc shows no process outside (no /proc/<caller>/environ, fd or mem to read).
    unshare(CLONE_NEWPID) only affects children, hence the fork: the child goes on to exec the host, the
    parent (still outside, the pid Popen knows) waits and mirrors its exit status. Root needs no user
    namespace (unless it lacks CAP_SYS_ADMIN); other users do. Any failure leaves things as they were
    (the trusted side reads /proc and says so: session.CandidateSession.writable_to_host).
    Read-only everywhere (mounts.seal_file_systems) is what lets the workspace go unguarded: the problem, the
    candidates of other agents, kernel_mcp, site-packages and kernel_mcp's cache (compile results, lease
    files, other candidates' scratch) cannot be changed, so nothing has to be restored afterwards.
    """
    flags = CLONE_NEWPID | CLONE_NEWNS | (0 if os.geteuid() == 0 else CLONE_NEWUSER)
    # root without CAP_SYS_ADMIN (a container's default root) may still make a user namespace
    if _libc.unshare(flags) != 0 and (flags & CLONE_NEWUSER or _libc.unshare(flags | CLONE_NEWUSER) != 0):
        return
    child = os.fork()
    if child == 0:
        # private mounts first, so the new /proc and the read-only remounts are seen by this namespace only
        if _libc.mount(None, b"/", None, mounts.MS_REC | mounts.MS_PRIVATE, None) == 0:
            _libc.mount(b"proc", b"/proc", b"proc", mounts.MS_NOSUID | mounts.MS_NODEV | mounts.MS_NOEXEC, None)
            mounts.seal_file_systems(writable, hidden=(str(kernel_cache.store()),),  # others' kept builds
                                     private=folders.private_roots(writable),  # others' scratch and tmp
                                     binds=kernel_cache.build_binds(writable))  # its builds at a path kept
        return
    os.closerange(3, 1 << 16)  # includes Popen's exec-status pipe: Popen returns now, as after an exec
    status = _wait_while_parent_lives(child)
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


def true_in_a_child(attempt: Callable[[], bool]) -> bool:
    """``attempt`` run in a throwaway forked child (for a change this process could not undo, such as
    entering a namespace): whether it returned True. Call it while this process has one thread."""
    child = os.fork()
    if child == 0:
        try:
            ok = attempt()
        except BaseException:  # noqa: BLE001  (the child's answer is its exit code, whatever happened)
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _wait_while_parent_lives(child: int, poll_s: float = 0.5) -> int:
    """The trampoline's wait for the namespace's PID 1. If the process that started it dies first (a
    server killed mid-call), kill PID 1, which ends everything in the namespace: the work dies with
    whoever asked for it. Returns the child's wait status. The child's exit wakes the wait at once (a
    pidfd); the parent is looked at every ``poll_s``."""
    parent = os.getppid()
    try:
        exited = os.pidfd_open(child)
    except OSError:  # kernels before 5.3: poll both
        exited, poll_s = None, min(poll_s, 0.1)
    while True:
        if exited is not None:
            select.select([exited], [], [], poll_s)
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            return status
        if os.getppid() != parent:
            os.kill(child, signal.SIGKILL)
            return os.waitpid(child, 0)[1]
        if exited is None:
            time.sleep(poll_s)


_PROBE = "import os, sys; sys.exit(any(not os.statvfs(p).f_flag & os.ST_RDONLY for p in sys.argv[1:]))"


def sealed_for_candidates(paths: tuple[str, ...]) -> bool:
    """True if a process started like a candidate (make_preexec) would see each of ``paths`` read-only:
    then the runner has nothing to guard there. Asked of a real child once per set of paths (some
    milliseconds): namespaces may be refused, or one file system may refuse a read-only remount."""
    return namespaces_wanted() and _probe_seal(paths)


@functools.lru_cache(maxsize=256)
def _probe_seal(paths: tuple[str, ...]) -> bool:
    try:
        probe = subprocess.run([sys.executable, "-S", "-c", _PROBE, *paths], env={}, cwd="/",
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                               preexec_fn=make_preexec(None, True))
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def in_own_pid_namespace(pid: int | str) -> bool:
    """True if ``pid`` is PID 1 of a namespace nested in ours (read from /proc: trusted)."""
    ids = proctree.status_field(pid, "NSpid") or []
    return len(ids) > 1 and ids[-1] == "1"


def has_capability(pid: int | str, cap: int) -> bool:
    """Read another process's effective capabilities from /proc (trusted observation)."""
    effective = proctree.status_field(pid, "CapEff")
    return bool(effective) and bool(int(effective[0], 16) >> cap & 1)


def default_address_space_limit() -> int:
    """3/4 of physical memory: a runaway CPU candidate gets MemoryError instead of the OOM killer."""
    pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    return int(pages * page_size * 3 // 4)
