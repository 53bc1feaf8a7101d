"""Where processes that run candidate code write: a scratch folder each (its HOME and build caches) and a
temporary folder each (its TMPDIR), under two roots that every such process's mount namespace covers but for
its own folders (mounts.seal_file_systems' private roots), so that no candidate sees another's."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from kernel_mcp.files import cache_root


def new_scratch(prefix: str) -> Path:
    """A private folder for one process that runs candidate code, inside kernel_mcp's cache (out of sight of
    every *other* such process where mount namespaces work: mounts.seal_file_systems' private roots)."""
    parent = scratch_root()
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))


def scratch_root() -> Path:
    return cache_root() / "scratch"


def host_tmp_root() -> Path:
    """Where candidate hosts' temporary folders are made (one per host, its TMPDIR): a folder of this user's
    in the system's temporary folder, so that each host's mount namespace can hide the others' (a short path:
    multiprocessing binds a unix socket inside, and such paths may not exceed 107 bytes)."""
    root = Path(tempfile.gettempdir()) / f"kmcp-hosts-{os.getuid()}"
    root.mkdir(mode=0o700, exist_ok=True)
    return root


CANDIDATE, STEP = "kmcp-candidate-", "kmcp-step-"  # scratch folders: a candidate host's, a compile step's
PREFIXES = (CANDIDATE, STEP, "kmcp-tmp-")  # the folders new_scratch and the hosts' TMPDIRs make


def private_roots(writable: tuple[str, ...]) -> tuple[str, ...]:
    """The folders whose entries (other processes' scratch and temporary folders) a candidate process must not
    see: the parents of its own such folders among ``writable``, covered in its mount namespace but for its own.
    Taken from the folders given, not from this process's environment: a process that forks hosts (the judge's
    factory) may have another TMPDIR than the judge that named their folders."""
    own = {os.path.dirname(w.rstrip("/")) for w in writable if os.path.basename(w.rstrip("/")).startswith(PREFIXES)}
    return tuple(sorted(own | host_tmp_roots()))


def host_tmp_roots() -> set[str]:
    """Every root candidate hosts' temporary folders may be in, covered in every candidate process's namespace
    whether or not it has a folder there: a compile step's host (its TMPDIR is its scratch folder) read the
    answers a checked candidate left in its TMPDIR and kept them among its builds for its own check (a review,
    thirty-first session). This process's root, and the one judges make them in (a judge's environment is
    allowlisted, without TMPDIR: the system's /tmp)."""
    roots = {str(host_tmp_root()), os.path.join("/tmp", f"kmcp-hosts-{os.getuid()}")}
    return {root for root in roots if os.path.isdir(root) and not os.path.islink(root)}
