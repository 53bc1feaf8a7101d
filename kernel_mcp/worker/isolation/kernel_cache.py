"""Kernel build caches (Triton's, torch extensions') for processes that run candidate code, one per
candidate, so no candidate can plant a build that another candidate, the reference or the judge loads.

A process that runs candidate code builds into its own scratch folder. Before it starts, trusted code
(the judge, or the runner for compile steps) fills that folder from the store entry of *this* candidate
(keyed by its path, its bytes and the toolchain's versions); after it ends, trusted code keeps the new
builds in that entry. Those processes do not see the store at all where they get a mount namespace (an
empty tmpfs covers it: sandbox._enter_namespaces), so the only builds a candidate can plant are its own
(code it could run directly anyway), and nothing another candidate left there (a note among its builds) can
be read.
Without namespaces (no root, no user namespaces) the store is writable by the candidate's user, like
every file of that user; the check then says `no_pid_namespace`. The judge itself builds into a private
temporary folder of its own and loads nothing from here (worker/judge/main.py).

A torch extension's kept build is only found where it is built at the same path as before: torch writes its
build folder's absolute path into build.ninja, and ninja rebuilds whatever command changed. Each process's
scratch path differs, so its mount namespace also binds its own torch_extensions folder at one path that is the
same for every process (``build_binds``, under the scratch root's cover: no process sees another's there), and
the process builds there (``build_here``). Without a mount namespace the path is not there, the process builds
in its scratch, and a kept torch build is built again (measured on the CPU, thirtieth session: a second check
of the same load_inline candidate took as long as the first: 27.1 s after 30.3 s). Triton's builds are found
by content hash wherever they sit.

Copies are made by trusted code from folders untrusted code wrote: symbolic links are never copied or
followed, nothing in a process's scratch is overwritten (a running process may have loaded it), the store's
copy of a torch extension is replaced only by one built again at the shared path (whole, through no link), and
a failure to copy only costs a rebuild.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import shutil
import stat
import sys
from pathlib import Path

from kernel_mcp.files import cache_root
from kernel_mcp.worker.isolation import folders

KINDS = {"TRITON_CACHE_DIR": "triton", "TORCH_EXTENSIONS_DIR": "torch_extensions"}
MAX_KEEP_BYTES = 512 << 20  # a store entry never grows past this (a flood is dropped, not kept)
KEEP_ENTRIES = 64  # candidates whose builds are kept (least recently used ones go)
# how deep a kept tree is merged: Triton's entries (one folder per build hash) never change once written;
# torch extensions sit one level further down (TORCH_EXTENSIONS_DIR/<python+cuda tag>/<name>)
MERGE_DEPTH = {"triton": 0, "torch_extensions": 1}
# torch's FileBaton: a build holds a file named "lock" in its folder and deletes it when done; a process killed
# mid-build leaves it, and a copy of it makes every later build of that extension wait for it forever
TRANSIENT = {"lock"}
BUILD_PATH = "torch-extensions"  # inside the scratch root: where a process's own torch_extensions folder is bound


def store() -> Path:
    return cache_root() / "kernels"


def key_for(candidate: Path) -> str:
    """Which store entry a candidate's processes fill from: its path and its bytes. Its path, not only its
    folder: whatever its process leaves in its build caches is kept for the next check of it, so two files of
    the same bytes in one folder would otherwise share notes (a writer and its byte-identical twin, which reads
    what the writer left when both are served a batch's same inputs: a review, twenty-fourth session).
    Also the toolchain's versions: ninja tracks commands and file times, not the library a kept extension was
    linked against, so a build kept before torch or Python changed is never loaded after (a review, thirtieth
    session: an undefined symbol at import, an honest kernel failed)."""
    digest = hashlib.sha256(str(candidate.resolve()).encode() + b"\0" + candidate.read_bytes() + b"\0"
                            + _toolchain().encode())
    return digest.hexdigest()[:24]


@functools.lru_cache(maxsize=1)
def _toolchain() -> str:
    try:
        torch = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch = "none"
    return f"python {sys.version_info[:3]} torch {torch}"


def scratch_env(scratch: Path) -> dict[str, str]:
    """The cache variables of a process that builds into ``scratch``."""
    return {var: str(scratch / name) for var, name in KINDS.items()}


def build_binds(writable: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(its own torch_extensions folder, the build path shared by name) for each scratch folder among a process's
    ``writable`` folders, for its mount namespace (mounts.seal_file_systems)."""
    return tuple((os.path.join(w, KINDS["TORCH_EXTENSIONS_DIR"]), os.path.join(os.path.dirname(w.rstrip("/")),
                                                                               BUILD_PATH))
                 for w in writable if os.path.basename(w.rstrip("/")).startswith((folders.CANDIDATE, folders.STEP)))


def build_here() -> None:
    """In a process about to import a candidate: build torch extensions at the path its mount namespace bound its
    own folder to, the same in every process of the candidate, so a kept build is loaded rather than built again.
    Only where that path is a mount of this process's own folder (not a link anyone could have left there)."""
    own = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not own:
        return
    shared = Path(own).parent.parent / BUILD_PATH
    try:
        if not shared.is_symlink() and os.path.ismount(shared) and os.path.samefile(own, shared):
            os.environ["TORCH_EXTENSIONS_DIR"] = str(shared)
    except OSError:
        pass  # not bound: build in the scratch folder


def prepare(scratch: Path) -> None:
    """Empty build caches in a new scratch folder, before any candidate is known; the store made if it is not
    there (its processes get an empty cover over it: sandbox._enter_namespaces)."""
    store().mkdir(parents=True, exist_ok=True)
    for name in KINDS.values():
        (scratch / name).mkdir(parents=True, exist_ok=True)


def fill(key: str, scratch: Path) -> None:
    """Copy this candidate's kept builds into its process's scratch folder (made by ``prepare``). New
    entries only: the process is already running, and a file it has loaded must not be rewritten under
    it (an H200 run crashed a host that way, 2026-12-01)."""
    entry = store() / key
    for name in KINDS.values():
        if (entry / name).is_dir():
            _merge(entry / name, scratch / name, MERGE_DEPTH[name])
    try:
        os.utime(entry)  # least recently used goes first
    except OSError:
        pass


def keep(key: str, scratch: Path) -> None:
    """Keep the builds a candidate's process made: new entries, and a torch extension it built again (its
    build.ninja changed: built at another path or with another toolchain) in place of the kept one; the store is
    never loaded from, so replacing there cannot pull a file from under a running process. Nothing is written
    through a link between the store and the entry (one a candidate without a mount namespace could make)."""
    entry = store() / key
    for name in KINDS.values():
        if (scratch / name).is_dir() and not (scratch / name).is_symlink() and _no_link_above(entry / name):
            _merge(scratch / name, entry / name, MERGE_DEPTH[name], replace_rebuilt=True)
    _prune()


def _merge(source: Path, target: Path, depth: int, replace_rebuilt: bool = False) -> None:
    try:
        items = list(source.iterdir())
    except OSError:
        return
    for item in items:
        try:
            _merge_item(item, target / item.name, depth, replace_rebuilt)
        except OSError:
            continue  # unreadable or vanished: that build is rebuilt when needed


def _merge_item(item: Path, target: Path, depth: int, replace_rebuilt: bool = False) -> None:
    if item.is_symlink() or not (item.is_dir() or item.is_file()) or item.is_file() and item.name in TRANSIENT:
        return
    if target.exists() or target.is_symlink():
        if replace_rebuilt and _rebuilt(item, target) and _no_link_above(target):
            _copy_whole(item, target, replace=True)
        elif depth > 0 and target.is_dir() and not target.is_symlink() and item.is_dir():
            _merge(item, target, depth - 1, replace_rebuilt)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    _copy_whole(item, target)


def _copy_whole(item: Path, target: Path, replace: bool = False) -> None:
    """``item`` copied to ``target`` whole or not at all (a concurrent reader never sees half an entry); with
    ``replace``, the folder there swapped for the copy only once the copy is complete (a failed copy keeps it)."""
    if _size(item) > MAX_KEEP_BYTES:
        return
    partial = target.with_name(target.name + f".{os.getpid()}.partial")
    aside = target.with_name(target.name + f".{os.getpid()}.old")
    try:
        if item.is_dir():
            shutil.copytree(item, partial, ignore=_links)
            _repoint_groups(partial, target)
        else:
            shutil.copy2(item, partial)
        if not replace:
            partial.rename(target)
            return
        target.rename(aside)
        try:
            partial.rename(target)
        except OSError:
            aside.rename(target)  # the kept build back as it was
            raise
    finally:
        for leftover in (partial, aside):
            shutil.rmtree(leftover, ignore_errors=True) if leftover.is_dir() else leftover.unlink(missing_ok=True)


NINJA_MAX_BYTES = 1 << 20  # a load_inline build.ninja is a few KB; anything larger is not compared (nor read)


def _rebuilt(item: Path, kept: Path) -> bool:
    """A torch extension's folder built at the shared build path (build_here) whose build.ninja differs from the
    kept one's: ninja built it again (a build kept from another path, or another toolchain). A build made in
    a scratch folder (no mount namespace) never replaces one: its paths differ on every run."""
    if not item.is_dir() or item.is_symlink() or kept.is_symlink() or not kept.is_dir():
        return False
    new, old = _small_file(item / "build.ninja"), _small_file(kept / "build.ninja")
    return new is not None and f"{os.sep}{BUILD_PATH}{os.sep}".encode() in new and new != old


def _small_file(path: Path) -> bytes | None:
    """A regular file's bytes, read without following a link, when it is at most NINJA_MAX_BYTES; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > NINJA_MAX_BYTES:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(NINJA_MAX_BYTES + 1)
    finally:
        os.close(fd)


def _no_link_above(target: Path) -> bool:
    """No symbolic link between the store and ``target``: a folder replaced there is the one its path names (a
    candidate that could write the store, without a mount namespace, could link its entry to any folder)."""
    try:
        relative = target.relative_to(store())
    except ValueError:
        return False
    return Path(os.path.realpath(target)) == Path(os.path.realpath(store())) / relative


def _links(folder: str, names: list[str]) -> list[str]:
    """copytree's ignore: symbolic links are left behind (a link would let a copy write where it points), and so
    is a build's leftover lock (TRANSIENT)."""
    return [n for n in names if os.path.islink(os.path.join(folder, n))
            or n in TRANSIENT and os.path.isfile(os.path.join(folder, n))]


def _repoint_groups(folder: Path, final: Path) -> None:
    """Triton's ``__grp__*.json`` files name the files of one build by absolute path; in a copy they must
    name the copy's files (else every lookup misses and the kernel is compiled again). A build's files sit
    in one folder, so each path becomes ``final/<its file name>``: nothing outside the folder is named."""
    for group in folder.glob("__grp__*.json"):
        if group.is_symlink() or not group.is_file():
            continue
        try:
            data = json.loads(group.read_text())
            children = {str(k): str(final / Path(str(v)).name) for k, v in data["child_paths"].items()}
        except (OSError, ValueError, KeyError, AttributeError, TypeError):
            group.unlink(missing_ok=True)  # a malformed group is a cache miss, never a path to follow
            continue
        rewritten = group.with_name(group.name + ".new")
        rewritten.write_text(json.dumps({"child_paths": children}))
        rewritten.replace(group)


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _prune() -> None:
    root = store()
    try:
        entries = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in entries[KEEP_ENTRIES:]:
        shutil.rmtree(old, ignore_errors=True)
