"""Mounts in a candidate's own mount namespace: every file system read-only but its scratch (the seal),
and the trusted side's reading of what a process can write (its /proc/<pid>/mountinfo, proc(5))."""
from __future__ import annotations

import ctypes
import os
import re
from pathlib import Path

_libc = ctypes.CDLL(None, use_errno=True)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE = 16384, 1 << 18
MNT_DETACH = 2

# Mounts left writable: /dev/shm (shared memory: torch passes tensors through it; private to the check,
# check_namespaces.py) and the namespace's own /proc (the CUDA driver fails with error 304 without it:
# measured on the H200). /dev itself is sealed: a root candidate could create files on the machine's
# devtmpfs that outlive the check (measured on the CPU, 2026-12-05), while reads and writes of device nodes
# (the GPU's) do not need a writable mount. /proc's kernel-wide parts are sealed like /sys: a root
# candidate without capabilities still passes the owner check of root's sysctl and cgroup files.
UNSEALED = ("/dev/shm", "/proc")
SEALED_IN_PROC = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")


def seal_file_systems(writable: tuple[str, ...], hidden: tuple[str, ...] = (), private: tuple[str, ...] = (),
                      binds: tuple[tuple[str, str], ...] = ()) -> None:
    """In a mount namespace of our own: every mount read-only (UNSEALED aside), each ``hidden`` folder covered
    by an empty read-only tmpfs, each ``private`` folder (the roots other processes' scratch folders live in)
    covered by one that shows only the ``writable`` folders inside it and the targets of ``binds`` (source,
    target: a writable folder's subfolder shown again at a path inside the cover), then each ``writable`` folder
    and bind target made read-write. Best effort, mount by mount: what could not be sealed or hidden shows in
    /proc/<pid>/mountinfo, which the trusted side reads (writable_in, covered_in)."""
    for point in mount_points(Path("/proc/self/mountinfo")):
        if not any(point == top or point.startswith(top + "/") for top in UNSEALED):
            _remount(point.encode(), read_only=True)
    for path in SEALED_IN_PROC:
        _bind(path.encode(), read_only=True)
    for folder in hidden:
        _libc.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, b"size=4k")
    shown = []  # bind targets made inside a cover (never a folder of the same name outside one)
    for root in private:
        shown += _cover_but(root, [w for w in writable if os.path.dirname(w.rstrip("/")) == root.rstrip("/")],
                            [b for b in binds if os.path.dirname(b[1].rstrip("/")) == root.rstrip("/")])
    for folder in (*writable, *shown):
        _bind(folder.encode(), read_only=False)


def _cover_but(root: str, keep: list[str], binds: list[tuple[str, str]] = ()) -> list[str]:
    """``root`` covered by a tmpfs that holds only ``keep`` (folders directly inside it), each bound back from
    where it was: the other folders there, made before this process or after, cannot be seen. A live oracle
    read other candidates' requests from their scratch folders and wrote answers into its own (a review's
    ``fs_oracle``, twenty-fourth session). The folders are held open first: the cover hides their paths.
    Each of ``binds`` (a folder inside a kept one, a path directly inside ``root``) is then shown at its
    target too, where it can be (a failure leaves the target out, the cover as it is). Returns the targets
    shown (none where the cover could not be made)."""
    held = []
    try:
        held = [(folder, os.open(folder, os.O_PATH | os.O_DIRECTORY)) for folder in keep]
    except OSError:
        return []
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    try:
        if _libc.mount(b"tmpfs", root.encode(), b"tmpfs", flags, b"size=16k,mode=755") != 0:
            return []
        try:
            for folder, fd in held:
                os.mkdir(folder)
                if _libc.mount(f"/proc/self/fd/{fd}".encode(), folder.encode(), None, MS_BIND | MS_REC, None):
                    raise OSError(ctypes.get_errno(), f"bind {folder}")
            shown = [target for source, target in binds if _bind_at(source, target)]
            _libc.mount(None, root.encode(), None, MS_REMOUNT | MS_RDONLY | flags, None)
            return shown
        except OSError:
            _libc.umount2(root.encode(), MNT_DETACH)  # the folders as they were: seen, but the process works
            return []
    finally:
        for _, fd in held:
            os.close(fd)


def _bind_at(source: str, target: str) -> bool:
    """``source`` (inside a folder bound back into a cover) shown at ``target`` (a new folder in the cover)."""
    try:
        os.mkdir(target)
    except OSError:
        return False
    if not os.path.isdir(source) or os.path.islink(source):
        return False
    return _libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC, None) == 0


def covered_in(pid: int, path: Path) -> bool:
    """Whether what ``pid`` sees at ``path`` is seal_file_systems' cover: the last mount there a read-only tmpfs
    (a mount the machine itself has at that path does not count: it is no cover)."""
    target = str(path.resolve())
    at = [(options, fstype) for point, options, fstype in _entries(Path(f"/proc/{pid}/mountinfo")) or []
          if point == target]
    if not at or target in mount_points(Path("/proc/self/mountinfo")):
        return False
    options, fstype = at[-1]
    return fstype == "tmpfs" and "ro" in options


def _bind(path: bytes, read_only: bool) -> None:
    """``path`` bound onto itself, so that it gets mount flags of its own."""
    if _libc.mount(path, path, None, MS_BIND | MS_REC, None) == 0:
        _remount(path, read_only)


def mount_points(mountinfo: Path) -> list[str]:
    """The mount points listed in a mountinfo file, in order (proc(5): field 5, octal escapes decoded)."""
    return [point for point, _, _ in _entries(mountinfo) or []]


def _entries(mountinfo: Path) -> list[tuple[str, list[str], str]] | None:
    """(mount point, its options, its file system type) for each mount listed in a mountinfo file, in order
    (proc(5): fields 5 and 6, and the first after the " - " separator); None where it cannot be read."""
    try:
        lines = [line.split() for line in mountinfo.read_text().splitlines()]
    except OSError:
        return None
    return [(_unescape(fields[4]), fields[5].split(","), _fstype(fields)) for fields in lines if len(fields) > 5]


def _fstype(fields: list[str]) -> str:
    """The field after the separator that ends the optional fields (which start at field 7)."""
    rest = fields[6:]
    return rest[rest.index("-") + 1] if "-" in rest[:-1] else ""


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


# statvfs flags a read-only remount must keep: in a user namespace the kernel refuses to drop them
_KEPT_FLAGS = {os.ST_NOSUID: MS_NOSUID, os.ST_NODEV: MS_NODEV, os.ST_NOEXEC: MS_NOEXEC,
               os.ST_NOATIME: 1024, os.ST_NODIRATIME: 2048, os.ST_RELATIME: 1 << 21}


def _remount(point: bytes, read_only: bool) -> None:
    """Change one mount's own flags (a bind remount: the file system itself is untouched)."""
    try:
        flags = os.statvfs(point).f_flag
    except OSError:
        return
    kept = sum(ms for st, ms in _KEPT_FLAGS.items() if flags & st)
    _libc.mount(None, point, None, MS_BIND | MS_REMOUNT | (MS_RDONLY if read_only else 0) | kept, None)


def writable_in(pid: int, paths: list[Path]) -> list[Path]:
    """Those of ``paths`` that ``pid`` could write to as far as mounts go: the mount in effect for a path
    (the last listed of those at its longest mount-point prefix, in pid's mountinfo) is not read-only.
    Read from /proc by the trusted side: the seal in _enter_namespaces may have failed silently."""
    entries = _entries(Path(f"/proc/{pid}/mountinfo"))
    if entries is None:
        return list(paths)
    mounts = [(point, options) for point, options, _ in entries]
    open_paths = []
    for path in paths:
        target = str(path.resolve())
        best, options = -1, ["rw"]
        for point, opts in mounts:
            inside = target == point or target.startswith(point.rstrip("/") + "/")
            if inside and len(point) >= best:
                best, options = len(point), opts
        if "ro" not in options:
            open_paths.append(path)
    return open_paths
