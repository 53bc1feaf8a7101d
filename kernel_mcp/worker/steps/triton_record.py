"""Record the Triton launches of one ``custom_kernel`` call: which @triton.jit kernels, with which
argument types and compile options. Runs candidate code, so it runs in its own process (sandboxed env).

On a machine without a GPU it runs under TRITON_INTERPRET=1 (the caller sets it). Runs in a step host
(worker/steps/main.py).
"""
from __future__ import annotations

import inspect
import os
import traceback
from pathlib import Path
from typing import Any

from kernel_mcp.worker.host.load import import_candidate, kernel_from

# imports inside functions: the problem's inputs (torch) load once the recorder is installed


def encode(value: Any) -> Any:
    """A JSON form of one launch argument that keeps what Triton specializes on."""
    import torch
    import triton.language as tl
    if isinstance(value, torch.Tensor):
        return {"tensor": str(value.dtype).removeprefix("torch."), "aligned": value.data_ptr() % 16 == 0}
    if isinstance(value, tl.constexpr):
        return {"constexpr": encode(value.value)}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, tl.dtype):
        return {"tl_dtype": str(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return {"unsupported": type(value).__name__}


def _kernel_identity(kernel: Any) -> dict:
    fn = kernel.fn
    try:
        file, line = inspect.getsourcefile(fn), inspect.getsourcelines(fn)[1]
    except (OSError, TypeError):
        file, line = "", 0
    return {"module": fn.__module__, "qualname": fn.__qualname__, "file": file or "", "line": line}


def install_recorder(launches: list[dict]) -> None:
    """Wrap Triton's launch entry points (compiled and interpreted) to note each launch first."""
    from triton.runtime import jit
    classes = [jit.JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction
        classes.append(InterpretedFunction)
    except ImportError:
        pass
    for cls in classes:
        original = cls.run

        def run(self, *args, grid, warmup, _original=original, **kwargs):
            if not warmup:
                launch = {**_kernel_identity(self), "args": [encode(a) for a in args],
                          "kwargs": {k: encode(v) for k, v in kwargs.items()}}
                if launch not in launches:
                    launches.append(launch)
            return _original(self, *args, grid=grid, warmup=warmup, **kwargs)

        cls.run = run
    if os.environ.get("TRITON_INTERPRET") == "1":
        _record_autotune_configs(launches)


def _record_autotune_configs(launches: list[dict]) -> None:
    """Under the interpreter the autotuner cannot benchmark (no GPU driver): note a launch per config, then
    run the first config only, so the call completes and every config gets compiled for each target."""
    from triton.runtime.autotuner import Autotuner

    def run(self, *args, **kwargs):
        inner = self.fn
        while not hasattr(inner, "arg_names") and hasattr(inner, "fn"):
            inner = inner.fn
        for config in self.configs:
            options = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
            launch = {**_kernel_identity(inner), "args": [encode(a) for a in args],
                      "kwargs": {k: encode(v) for k, v in {**options, **config.all_kwargs()}.items()}}
            if launch not in launches:
                launches.append(launch)
        return self.fn.run(*args, **{**kwargs, **self.configs[0].all_kwargs()})

    Autotuner.run = run


def run(request) -> list[dict]:
    """The record step (a RecordRequest): the launches of one call on the smallest typical test."""
    from kernel_mcp.problem import load_problem
    from kernel_mcp.worker.inputs import ProblemInputs
    launches: list[dict] = []
    install_recorder(launches)
    problem = load_problem(request.problem)
    runtime = ProblemInputs(problem, request.device)
    data = runtime.generate(smallest_test(problem.tests))
    module = import_candidate(Path(request.candidate), [str(problem.folder), str(problem.folder.parent)])
    kernel = kernel_from(module, runtime.candidate_init(), request.device)
    try:
        kernel(data)
    except Exception:  # noqa: BLE001  (a launch that fails is still recorded: compiling it shows why)
        traceback.print_exc()
        if not launches:
            raise
    return launches


def smallest_test(tests: list[dict]) -> dict:
    """The test whose numeric parameters multiply to the least (a proxy for the smallest input), among
    those with no parameter equal to 1: Triton specializes an int argument equal to 1 as a constant, so
    an edge-case test would show a kernel variant the benchmarks never run."""
    def numbers(test: dict) -> list[float]:
        return [v for k, v in test.items() if k != "seed" and isinstance(v, (int, float)) and not isinstance(v, bool)]

    def size(test: dict) -> float:
        product = 1.0
        for value in numbers(test):
            product *= max(abs(value), 1)
        return product
    typical = [t for t in tests if all(abs(v) != 1 for v in numbers(t))]
    return min(typical or tests, key=size)


