"""The judge's dispatch modes (worker/judge/dispatch_mode.py) leave torch's compiler stack unimported: torch's own
wrap of a mode's ``__torch_dispatch__`` imported it on the first op, 1.0 CPU-s in every judge. A reference
that uses torch.compile must still run under them, with the same values and the reduction length traced."""
import subprocess
import sys

import torch

from kernel_mcp.worker.judge.reduction_trace import ReductionTrace

FIRST_OPS = """
import sys
import torch
from kernel_mcp.worker.judge.precision_probe import RoundedArithmetic
from kernel_mcp.worker.judge.reduction_trace import ReductionTrace
a, b = torch.randn(8, 16, dtype=torch.float64), torch.randn(16, 4, dtype=torch.float64)
for mode in (ReductionTrace(), RoundedArithmetic("bf16", every_op=True)):
    with mode:
        (a @ b).sum()
print("torch._dynamo" in sys.modules)
"""


def test_a_judges_first_ops_under_its_modes_do_not_import_the_compiler():
    done = subprocess.run([sys.executable, "-c", FIRST_OPS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stdout + done.stderr[-2000:]


def test_a_reference_that_compiles_runs_under_the_trace_with_the_same_values_and_its_k():
    def reference(a, b):  # a trusted reference may compile part of itself
        return torch.compile(lambda x, y: torch.relu(x @ y), backend="eager", fullgraph=False)(a, b)
    a, b = torch.randn(8, 300, dtype=torch.float64), torch.randn(300, 5, dtype=torch.float64)
    tracer = ReductionTrace()
    with tracer:
        out = reference(a, b)
    assert torch.equal(out, torch.relu(a @ b))
    assert tracer.terms(out).k == 300  # the contraction seen through the compiled call
