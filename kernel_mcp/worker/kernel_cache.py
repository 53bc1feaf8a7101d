"""Kernel build caches (Triton's, torch extensions') for processes that run candidate code, one per
candidate, so no candidate can plant a build that another candidate, the reference or the judge loads.

A process that runs candidate code builds into its own scratch folder. Before it starts, trusted code
(the judge, or the runner for compile steps) fills that folder from the store entry of *this* candidate
(keyed by its folder and bytes) plus the judge's driver stubs; after it ends, trusted code keeps the new
builds in that entry. Those processes see the whole store read-only where they get a mount namespace
(sandbox.make_preexec), so the only builds a candidate can plant are its own: code it could run directly
anyway. Without namespaces (no root, no user namespaces) the store is writable by the candidate's user,
like every file of that user; the check then says `no_pid_namespace`.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from kernel_mcp.cache import cache_root

KINDS = {"TRITON_CACHE_DIR": "triton", "TORCH_EXTENSIONS_DIR": "torch_extensions"}
MAX_KEEP_BYTES = 512 << 20  # a store entry never grows past this (a flood is dropped, not kept)
KEEP_ENTRIES = 64  # candidates whose builds are kept (least recently used ones go)
# Triton's driver helpers (cuda_utils<EXT_SUFFIX>, hip_utils...), one per machine, built by the judge
DRIVER_STUBS = ("cuda_utils", "hip_utils")
# how deep a kept tree is merged: Triton's entries (one folder per build hash) never change once written;
# torch extensions sit one level further down (TORCH_EXTENSIONS_DIR/<python+cuda tag>/<name>)
MERGE_DEPTH = {"triton": 0, "torch_extensions": 1}


def store() -> Path:
    return cache_root() / "kernels"


def judge_triton_dir() -> Path:
    """The judge's own Triton cache (references that use Triton, driver stubs): never written by candidates."""
    return cache_root() / "judge-triton"


def key_for(candidate: Path) -> str:
    """Which store entry a candidate's processes fill from: its folder and its bytes (helpers beside it
    have their own Triton keys, by their source)."""
    digest = hashlib.sha256(str(candidate.resolve().parent).encode() + b"\0" + candidate.read_bytes())
    return digest.hexdigest()[:24]


def scratch_env(scratch: Path) -> dict[str, str]:
    """The cache variables of a process that builds into ``scratch``."""
    return {var: str(scratch / name) for var, name in KINDS.items()}


def prepare(scratch: Path) -> None:
    """Empty build caches in a new scratch folder, with the judge's Triton driver stubs (built by trusted
    code; without them each new process compiles its own with gcc, ~1 s) before any candidate is known."""
    for name in KINDS.values():
        (scratch / name).mkdir(parents=True, exist_ok=True)
    _copy_stubs(scratch / "triton")


def fill(key: str, scratch: Path) -> None:
    """Copy this candidate's kept builds into its process's scratch folder (made by ``prepare``). New
    entries only: the process is already running, and a file it has loaded (Triton's driver stub) must not
    be rewritten under it (an H200 run crashed the host that way, 2026-12-01)."""
    entry = store() / key
    for name in KINDS.values():
        if (entry / name).is_dir():
            _merge(entry / name, scratch / name, MERGE_DEPTH[name])
    if entry.is_dir():
        os.utime(entry)  # least recently used goes first


def _copy_stubs(target: Path) -> None:
    source = judge_triton_dir()
    if not source.is_dir():
        return
    for folder in source.iterdir():
        if folder.is_dir() and not (target / folder.name).exists() \
                and any(f.name.startswith(DRIVER_STUBS) and f.suffix == ".so" for f in folder.iterdir()):
            shutil.copytree(folder, target / folder.name, symlinks=True)


def keep(key: str, scratch: Path) -> None:
    """Keep the builds a candidate's process made: new entries only; nothing kept is overwritten."""
    entry = store() / key
    for name in KINDS.values():
        if (scratch / name).is_dir():
            _merge(scratch / name, entry / name, MERGE_DEPTH[name])
    _prune()


def _merge(built: Path, kept: Path, depth: int) -> None:
    for item in built.iterdir():
        target = kept / item.name
        if item.is_symlink():
            continue
        if target.exists():
            if depth > 0 and target.is_dir() and item.is_dir():
                _merge(item, target, depth - 1)
            continue
        if _size(item) > MAX_KEEP_BYTES:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + f".{os.getpid()}.partial")
        try:
            shutil.copytree(item, partial, symlinks=True) if item.is_dir() else shutil.copy2(item, partial)
            if partial.is_dir():
                _repoint_groups(partial, target)
            partial.rename(target)  # whole or not at all: a concurrent reader never sees half an entry
        except OSError:
            shutil.rmtree(partial, ignore_errors=True)


def _repoint_groups(folder: Path, final: Path) -> None:
    """Triton's ``__grp__*.json`` files name the files of one build by absolute path; in a copy they must
    name the copy's files (else every lookup misses and the kernel is compiled again). A build's files sit
    in one folder, so each path becomes ``final/<its file name>``: nothing outside the folder is named."""
    for group in folder.glob("__grp__*.json"):
        try:
            data = json.loads(group.read_text())
            children = {str(k): str(final / Path(str(v)).name) for k, v in data["child_paths"].items()}
        except (OSError, ValueError, KeyError, AttributeError, TypeError):
            group.unlink(missing_ok=True)  # a malformed group is a cache miss, never a path to follow
            continue
        group.write_text(json.dumps({"child_paths": children}))


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _prune() -> None:
    root = store()
    if not root.is_dir():
        return
    entries = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP_ENTRIES:]:
        shutil.rmtree(old, ignore_errors=True)
