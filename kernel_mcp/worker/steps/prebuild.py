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
A KernelBench candidate whose import built nothing has its ModelNew constructed too (``_construct``), in the same
host and on the same terms: a constructor that builds is built ahead as well.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from kernel_mcp.worker.host.load import import_candidate
from kernel_mcp.worker.inputs import import_file
from kernel_mcp.worker.isolation import header_cache


def run(request) -> list:
    """The prebuild step (a PrebuildRequest): the candidate imported, and a KernelBench ModelNew constructed where the
    import built nothing; what it built stays in its scratch for the runner to keep, so the reply carries nothing."""
    candidate = Path(request.candidate)
    header_cache.use_for(candidate)  # as worker/host/main.py does before its import: the same compile lines
    module = import_candidate(candidate, request.problem_dirs)
    if request.kernelbench_problem and hasattr(module, "ModelNew") and not _built():
        _construct(module, Path(request.kernelbench_problem))
    return []


def _built() -> bool:
    """Did the import build (or find kept) a torch extension in this host's build folder?"""
    folder = os.environ.get("TORCH_EXTENSIONS_DIR")
    return bool(folder) and any(Path(folder).rglob("*.so"))


def _construct(module, problem_file: Path) -> None:
    """ModelNew built from the problem's ``get_init_inputs()``, as its check's host builds it: a candidate that calls
    ``load_inline`` in its constructor (KernelBench's own template does) builds here, not in its check, where its
    device memory is reserved while nvcc runs. Built on torch's meta device: its parameters take no memory and are
    not initialised (a weight's initialisation is CPU time the build does not need). A constructor that allocates on
    a GPU by name does so unreserved, as an import that does already may."""
    # imported as the judge imports it (worker/inputs.py), here with the candidate's own code beside it
    init_inputs = import_file(problem_file, "kernelbench_reference", [problem_file.parent]).get_init_inputs()
    torch.manual_seed(0)  # any seed: only the build matters here, and the check constructs its own
    with torch.device("meta"):
        module.ModelNew(*init_inputs)
