"""Build a candidate's torch extensions ahead of its check (``kernel-mcp judge``, the reward API: batch/prebuild.py):
import it as its check's candidate host will, with what decides a build's commands the same (the
precompiled-header hook, the shared build path, the visible GPUs from which torch picks the CUDA architectures),
so every ``load_inline`` it makes on import is built here, outside any device memory reservation, and kept for
its check by the runner (worker/isolation/kernel_cache.py). The check then loads the kept build; ninja compares
every command, so a build made any other way (a pool's step host sees every GPU of a host, its check's host one:
on a host of mixed GPU models the architectures differ) is built again there, never loaded wrong.

Runs candidate code (its import), so it runs in a step host (worker/steps/main.py): its own PID and mount
namespaces, every other candidate's folders covered, no secret, no input, nothing to judge. Whatever it leaves in
its own build folder reaches only its own check. An import that fails here (a module that needs the device's
context at import, an error of its own) is no verdict: the check imports it again and says what happens there.
"""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.worker.host.load import import_candidate
from kernel_mcp.worker.isolation import header_cache


def run(request) -> list:
    """The prebuild step (a PrebuildRequest): the candidate imported; what it built stays in its scratch for the
    runner to keep, so the reply carries nothing."""
    candidate = Path(request.candidate)
    header_cache.use_for(candidate)  # as worker/host/main.py does before its import: the same compile lines
    import_candidate(candidate, request.problem_dirs)
    return []
