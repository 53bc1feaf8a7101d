"""Which kernel_mcp files a process runs, as sha256 digests: a judge reports them when it is ready, and the
caller compares them with the files now on disk before using a judge that was started earlier (a file
changed in between, say by a candidate before the guard restored it, means that judge may run code that is
no longer there). Shared by the judge and the fork server it may be forked from."""
from __future__ import annotations

import hashlib
import os
import sys

AT_IMPORT: dict[str, str] = {}  # in a fork server and its children: sha256 of each kernel_mcp file as imported


def loaded_digests() -> dict[str, str]:
    """sha256 of each kernel_mcp module file this process imported: the caller compares them with the files
    now on disk before using a judge that was started earlier (a file changed in between, say by a
    candidate before the guard restored it, means this judge may run code that is no longer there). Files
    its fork server imported count as they were then (AT_IMPORT)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # kernel_mcp/
    found = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if path in AT_IMPORT:
            found[path] = AT_IMPORT[path]
        elif path.startswith(root) and path.endswith(".py"):
            try:
                with open(path, "rb") as handle:
                    found[path] = hashlib.sha256(handle.read()).hexdigest()
            except OSError:
                continue
    return found
