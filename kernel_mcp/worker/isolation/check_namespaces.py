"""Namespaces of each check's own: whatever a candidate can leave for, or reach in, another candidate's process
is private to one check. The judge enters them first thing, and its factory and hosts, forked from it,
share them:

- a mount namespace with a fresh tmpfs on /dev/shm. /dev/shm is the one file system a sealed candidate can
  still write outside its scratch (mounts.py leaves it writable: torch passes tensors through it);
- an IPC namespace: System V shared memory, message queues and semaphores, which outlive their process;
- a network namespace, its loopback down: no socket (TCP, UDP, abstract Unix) reaches a process outside
  the check, such as another candidate being judged at the same moment. Sockets bound to a path, which
  torch's file-descriptor sharing uses, are found through the file system and still work.

Without the first two, a candidate could leave answers that a later candidate, in another check, batch
row or reward, reads (tests/cheats/collude_writer.py and collude_reader.py): both outlived the check
(measured on the CPU, 2026-12-05). The hosts must share the judge's /dev/shm: torch shares a CUDA tensor
with a reference count in a shared-memory file that the receiving process opens *by name*
(``RefcountedMapAllocator``). A private /dev/shm per host would break every GPU check; one per judge does
not, and one judge judges one candidate. When the last process of the check ends, the namespaces and
everything written in them are gone.

Best effort, like the seal: where no namespace can be made (no CAP_SYS_ADMIN and no user namespace that
can map this user) the judge goes on with the machine's, and its log says so.

``KERNEL_MCP_TEST_STATE_DIR``: one folder directly under /dev/shm that a test harness (whose daemon and
leak fixtures report through it: tests/conftest.py) asks to stay shared with candidates. Unset in normal
use. A trusted caller that sets it reopens the channel for that one folder only.
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

from kernel_mcp.worker.isolation import mounts, sandbox

SHM = Path("/dev/shm")
SHARED_STATE_VAR = "KERNEL_MCP_TEST_STATE_DIR"
CLONE_NEWIPC, CLONE_NEWNET = 0x08000000, 0x40000000
OWN = sandbox.CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET  # mounts, System V IPC, the network (its loopback down)
_libc = ctypes.CDLL(None, use_errno=True)
ENTERED = False  # this process entered them: its candidates can pass no notes (a batch may share inputs)


def enter() -> str:
    """Give this process (single-threaded: unshare refuses otherwise) mount, IPC and network namespaces of its
    own, with a fresh tmpfs on /dev/shm. Returns "" when done, else why not (the machine's stay). Never
    raises: a judge without them still judges."""
    global ENTERED
    try:
        refused = _enter()
    except OSError as exc:
        refused = f"{type(exc).__name__}: {exc}"
    ENTERED = not refused
    return refused


def _enter() -> str:
    if not SHM.is_dir():
        return "no /dev/shm on this machine"
    keep = _kept_folder()
    uid, gid = os.geteuid(), os.getegid()
    if _libc.unshare(OWN) != 0:  # no CAP_SYS_ADMIN: a user namespace too, if it can map us
        if not _can_map_self(uid):
            return "no CAP_SYS_ADMIN, and a user namespace could not map root (CAP_SETFCAP)"
        if not _works_in_a_child(uid, gid):
            return "a user namespace here cannot map this user or mount a tmpfs (an LSM may restrict them)"
        if _libc.unshare(OWN | sandbox.CLONE_NEWUSER) != 0:
            return f"no mount namespace could be made (errno {ctypes.get_errno()})"
        _map_identity(uid, gid)
    return _private_shm(keep)


def _private_shm(keep: Path | None) -> str:
    """In the new mount namespace: mounts private to it, then a fresh tmpfs on /dev/shm."""
    if _libc.mount(b"none", b"/", None, mounts.MS_REC | mounts.MS_PRIVATE, None) != 0:
        return f"mounts could not be made private (errno {ctypes.get_errno()})"
    kept_fd = os.open(keep, os.O_PATH | os.O_DIRECTORY) if keep else None  # before the tmpfs hides it
    try:
        flags = mounts.MS_NOSUID | mounts.MS_NODEV
        if _libc.mount(b"tmpfs", str(SHM).encode(), b"tmpfs", flags, b"mode=1777") != 0:
            return f"no tmpfs could be mounted on /dev/shm (errno {ctypes.get_errno()})"
        if kept_fd is not None:
            _bind_kept(kept_fd, keep)
        return ""
    finally:
        if kept_fd is not None:
            os.close(kept_fd)


def _works_in_a_child(uid: int, gid: int) -> bool:
    """Try the user-namespace path in a throwaway child first: once this process is in a user namespace it
    cannot leave, and one that maps nobody (Ubuntu's AppArmor may leave a new namespace without the
    capabilities to write its map) could create no file at all, so every check would fail. The child's
    namespaces die with it."""
    def attempt() -> bool:
        if _libc.unshare(OWN | sandbox.CLONE_NEWUSER) != 0:
            return False
        _map_identity(uid, gid)
        return os.geteuid() == uid and _private_shm(None) == "" and _can_create_in(SHM)
    return sandbox.true_in_a_child(attempt)


def _can_create_in(folder: Path) -> bool:
    try:
        (folder / "probe").write_bytes(b"")
        return True
    except OSError:
        return False


def _can_map_self(uid: int) -> bool:
    """Whether a user namespace made now could map this user to itself: any user but root can; root needs
    CAP_SETFCAP (Linux 5.12 and later), without which the judge's files could not be created there (an
    unmapped owner: EOVERFLOW, measured with root's bounding set cut, 2026-12-05)."""
    return uid != 0 or sandbox.has_capability("self", 31)  # CAP_SETFCAP is capability 31


def _kept_folder() -> Path | None:
    """The caller's shared folder, if it names an existing folder directly under /dev/shm."""
    named = os.environ.get(SHARED_STATE_VAR, "")
    if not named:
        return None
    folder = Path(named)
    return folder if folder.parent == SHM and folder.is_dir() and not folder.is_symlink() else None


def _bind_kept(fd: int, folder: Path) -> None:
    """The caller's folder, opened before the tmpfs hid it, bound back at its own path."""
    try:
        folder.mkdir(mode=0o777, exist_ok=True)
        _libc.mount(f"/proc/self/fd/{fd}".encode(), str(folder).encode(), None, mounts.MS_BIND, None)
    except OSError:
        pass  # the tests' reports only: their daemon tests then say the fixture never reported


def _map_identity(uid: int, gid: int) -> None:
    """In a new user namespace: the same user and group inside as outside, so files keep their owner. A
    process that is not dumpable (a judge forked from the fork server) has its /proc files owned by root,
    which an ordinary user cannot write: dumpable for these writes, before the judge holds any secret
    (start.main makes it not dumpable again at once)."""
    sandbox.dumpable_again()
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        try:
            Path(f"/proc/self/{name}").write_text(text)
        except OSError:
            pass
