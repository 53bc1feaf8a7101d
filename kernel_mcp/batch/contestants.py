"""torch.compile of a problem's reference, written as a candidate, so ``profile`` times it beside a batch's
candidate in the same run (its ``baseline``): the speedup over torch.compile that KernelBench's papers
report next to the speedup over eager.

A GPU MODE problem's reference may import modules beside it (``from utils import ...``), so the
contestant is written beside copies of them; a KernelBench problem is one file. Written
once per problem and batch folder (content-addressed, so two threads write the same bytes).
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from kernel_mcp.problem import load_problem

GPUMODE_LINE = "\n\ncustom_kernel = torch.compile(ref_kernel)  # the reference, compiled (default mode)\n"
KERNELBENCH_CLASS = '''

class ModelNew(Model):
    """The reference Model, its forward compiled by torch.compile (default mode); its weights are Model's."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._compiled_forward = torch.compile(super().forward)

    def forward(self, *args, **kwargs):
        return self._compiled_forward(*args, **kwargs)
'''


def compiled_reference(problem: Path, folder: Path) -> Path:
    """The torch.compile contestant of ``problem``, under ``folder``."""
    prob = load_problem(problem)
    source = prob.reference_file.read_text()
    text = "import torch\n" + source + (GPUMODE_LINE if prob.kind == "gpumode" else KERNELBENCH_CLASS)
    key = hashlib.sha256(f"{prob.path}\0{text}".encode()).hexdigest()[:16]
    home = folder / f"{prob.path.stem}-{key}"
    target = home / "torch_compile.py"
    if target.exists():
        return target
    home.mkdir(parents=True, exist_ok=True)
    if prob.kind == "gpumode":
        for module in prob.guarded_files():  # the modules the reference imports (utils.py, task.py, ...)
            if module.suffix == ".py" and module != prob.reference_file:
                shutil.copyfile(module, home / module.name)
    staged = home / f".torch_compile.{os.getpid()}.{id(text)}.tmp"
    staged.write_text(text)
    os.replace(staged, target)  # whole or absent, whichever thread writes last
    return target
