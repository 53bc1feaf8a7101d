"""Loading a candidate in an untrusted process: its module imported, and the callable the harness runs
(``custom_kernel``, or a KernelBench ``ModelNew`` built with the reference Model's weights). Used by the
candidate host (main.py) and the one-shot steps that run a candidate (worker/steps/)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable

from kernel_mcp.worker.isolation import kernel_cache

# imports inside functions: torch and the KernelBench adapter only for a KernelBench candidate


class MissingEntryPoint(Exception):
    """The candidate lacks what the harness calls (custom_kernel, ModelNew): said in one line."""


def import_candidate(path: Path, problem_dirs: list[str]) -> Any:
    """The candidate's module, imported as ``submission``."""
    kernel_cache.build_here()  # torch extensions built where a kept build of this candidate is found
    # GPU MODE submissions import `task`/`utils`/`reference` from the problem folder and its parent.
    sys.path[:0] = [str(path.parent), *problem_dirs]
    spec = importlib.util.spec_from_file_location("submission", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    spec.loader.exec_module(module)
    return module


def kernel_from(module: Any, init: dict, device: str) -> Callable:
    kb = init.get("kernelbench")
    if kb is None:
        fn = getattr(module, "custom_kernel", None)
        if not callable(fn):
            raise MissingEntryPoint("the candidate defines no custom_kernel(data) function")
        return fn
    import torch

    from kernel_mcp.worker.kernelbench import adopt_parameters
    if not hasattr(module, "ModelNew"):
        raise MissingEntryPoint("a KernelBench candidate must define class ModelNew")
    torch.manual_seed(kb["seed"])  # same seed as the judge's Model, for weights it cannot share by name
    model = module.ModelNew(*kb["init_inputs"]).to(device)
    init["unmatched"] = adopt_parameters(model, kb["state_dict"], kb.get("initial", {}))
    model.train(bool(kb.get("training", True)))  # the reference Model's mode

    def run(data: tuple) -> Any:
        with torch.no_grad():
            return model(*data)

    return run
