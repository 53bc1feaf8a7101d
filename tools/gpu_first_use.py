"""First-use costs in a fresh process (developer script, GPU machine): which one-time steps of a judge or a
candidate host cost seconds, so a warm process can pay them ahead of need.

    python3 tools/gpu_first_use.py
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STEPS = r'''
import time, math, sys
sys.path.insert(0, {repo!r})
T = time.perf_counter
def step(name, fn):
    t = T(); fn(); import torch; torch.cuda.synchronize(); print(f"{{name:44s}} {{1e3*(T()-t):9.1f}} ms", flush=True)
import torch
x = None
def setup():
    global x, y
    x = torch.randn(4096, device="cuda", dtype=torch.float64); y = x + 1e-9
step("ctx + randn f64", setup)
step("sub abs", lambda: (x - y).abs())
step("isnan/isinf/isfinite", lambda: (torch.isnan(x), torch.isinf(x), torch.isfinite(x)))
step("le & and", lambda: ((x <= y) & torch.isfinite(x)))
step("clamp min", lambda: torch.clamp(x, min=1e-300))
step("where full_like inf", lambda: torch.where(x > 0, x / y, torch.full_like(x, math.inf)))
step("boolean index max item", lambda: x[x > 0].max().item())
step("norm f64", lambda: x.norm().item())
step("nonzero", lambda: torch.nonzero(x > 0))
step("sum bool item", lambda: int((x > 0).sum().item()))
step("to float32 / float16", lambda: (x.float(), x.half()))
step("f32 randn + add", lambda: torch.randn(1 << 20, device="cuda") + 1)
step("MemPool + clone", lambda: torch.cuda.MemPool())
def prof():
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        torch.ones(10, device="cuda").sum()
    p.events()
step("torch.profiler first use", prof)
step("torch.profiler second use", prof)
def trit():
    import triton, triton.language as tl
    @triton.jit
    def k(X, n, B: tl.constexpr):
        o = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(X + o, tl.load(X + o, mask=o < n) + 1, mask=o < n)
    z = torch.zeros(100, device="cuda"); k[(1,)](z, 100, B=128)
    globals()["kk"] = lambda: k[(1,)](z, 100, B=128)
step("import triton + first jit launch", trit)
step("second launch", lambda: kk())
def ipc():
    import torch.multiprocessing as mp
    from multiprocessing.reduction import ForkingPickler
    import io
    buf = io.BytesIO(); ForkingPickler(buf).dump(torch.zeros(10, device="cuda"))
step("cuda ipc reduce (first)", ipc)
'''


def main() -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:  # @triton.jit needs a file
        script.write(STEPS.format(repo=str(REPO)))
    for run in (1, 2):
        print(f"--- fresh process {run}", flush=True)
        started = time.perf_counter()
        subprocess.run([sys.executable, script.name], check=True)
        print(f"total {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
