"""The process a hardware profiler (ncu, rocprofv3) wraps for ``profile --counters``.

It makes one benchmark input, imports the candidate, warms it up (compilation, autotuning), then calls it
inside the NVTX range the profiler filters on, so only the candidate's own kernels are measured: once, or
``calls`` times with a fresh input each (bench/timing_bench.py takes ncu's median duration that way).
Counters are advice for the model, never the reported time or the verdict; this process is untrusted
like the candidate host. Usage: ``python -m kernel_mcp.worker.steps.counter_target JSON``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from kernel_mcp.worker.host.load import import_candidate, kernel_from

# imports inside functions: torch and the problem load after the profiler has started this process

WARMUP_CALLS = 2


def main(spec: dict) -> None:
    import torch

    from kernel_mcp.counters import NVTX_RANGE
    from kernel_mcp.problem import load_problem
    from kernel_mcp.worker.inputs import ProblemInputs

    problem = load_problem(spec["problem"])
    device = spec.get("device", "cuda")
    runtime = ProblemInputs(problem, device)
    data = runtime.generate(spec["params"])
    module = import_candidate(Path(spec["candidate"]), [str(problem.folder), str(problem.folder.parent)])
    kernel = kernel_from(module, runtime.candidate_init(), device)
    for _ in range(WARMUP_CALLS):
        kernel(data)
    for call in range(spec.get("calls", 1)):
        if call:
            data = runtime.generate(spec["params"])
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(NVTX_RANGE)
        kernel(data)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
