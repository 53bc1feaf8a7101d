"""The base of the judge's dispatch modes (reduction_trace.ReductionTrace, precision_probe.RoundedArithmetic).

torch wraps every ``TorchDispatchMode`` subclass's ``__torch_dispatch__`` in ``torch._disable_dynamo``, whose
first call imports torch's whole compiler stack (torch._dynamo, sympy, Triton where installed): 1.0 CPU-s on
the 2-core CI machine, paid by every judge on its first float64 run, more than the rest of a small check.
These modes opt out (``_should_skip_dynamo``, which torch 2.13's ``__init_subclass__`` reads; a torch that
does not read it keeps the wrap, slower but the same values). The wrap only matters where
torch.compile runs under the mode: a reference that compiles still runs, traced through the mode (checked
with torch 2.13 on the CPU: same values, tests/test_dispatch_mode.py)."""
from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode


class JudgeDispatchMode(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # read by TorchDispatchMode.__init_subclass__: do not wrap (above)
