"""Build a candidate's torch extensions ahead of its check (``kernel-mcp judge``, batch/prebuild.py): import it
exactly as its check's candidate host will (the same precompiled-header hook, the same shared build path, the
same visible devices for torch's architecture detection), so every ``load_inline`` it makes on import is built
here, outside any device lease, and kept for its check by the runner (worker/isolation/kernel_cache.py). The
check then loads the kept build; ninja compares every command, so a build made any other way is rebuilt there,
never loaded wrong.

Runs candidate code (its import), so it runs in a step host (worker/steps/main.py): no secret, no input, nothing
to judge. Whatever it leaves in its own build folder reaches only its own check, which could have written the
same itself. An import that fails here (a module that needs the device's context at import, an error of its
own) is no verdict: the check imports it again and says what happens there.
"""
from __future__ import annotations

import os
from pathlib import Path

from kernel_mcp.worker.host.load import import_candidate
from kernel_mcp.worker.isolation import header_cache


def run(request) -> list[str]:
    """The prebuild step (a PrebuildRequest): the extension folders its build cache holds after the import."""
    candidate = Path(request.candidate)
    header_cache.use_for(candidate)  # as worker/host/main.py does before its import: the same compile lines
    import_candidate(candidate, request.problem_dirs)
    built = Path(os.environ.get("TORCH_EXTENSIONS_DIR", ""))
    return sorted(p.name for p in built.iterdir() if p.is_dir()) if built.name and built.is_dir() else []
