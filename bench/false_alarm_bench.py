"""Does the judge ever fail an honest kernel on a task that declares no tolerance and no reduction length?
And does every precision downgrade still fail there? (issue 34)

    python bench/false_alarm_bench.py [--seeds 1000] [--downgrade-seeds 200] [--ks 64,256,1024,4096,16384]
                                      [--only matmul|rows] [--match NAME ...] [--out FILE.json]

Real kernels on the device: Triton matmuls (``tl.dot`` in IEEE fp32 with BLOCK_K 16/32/64/128; bf16 and fp16
inputs with an fp32 accumulator), a CUDA C++ matmul with one sequential ``fmaf`` chain per output (built with
nvcc, loaded with ctypes), split-K with ``tl.atomic_add`` (partial sums land in any order), and row sums in
three orders (blocked then a tree, one element at a time, chunks added by atomics) in fp32, bf16 and fp16.
Every seed draws fresh standard-normal inputs; each output is judged as the judge does it, in process:
the reference's float64 run under ReductionTrace gives K (nothing is declared), its task-dtype run the
honest floor, and ``kernel_mcp.worker.judge.tolerance.compare`` the decision under the default (derived) policy. The
judge's processes, isolation and timing are not part of this bench (tests/test_honest_orders.py runs the
same problem through ``check`` end to end). Prints one row per (kernel, K): checks, failures, and the share
of the bound used (median, max). Needs a CUDA GPU (the CUDA kernel also needs nvcc; it is skipped without).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).parent))
from tolerance_bench import tf32  # noqa: E402  (the same TF32 rounding as the CPU bench)

from kernel_mcp.taskspec import ToleranceSpec  # noqa: E402
from kernel_mcp.worker.judge.reduction_trace import ReductionTrace  # noqa: E402
from kernel_mcp.worker.judge.tolerance import Expected, compare  # noqa: E402

M = N = 128
ROWS = 64


@triton.jit
def _matmul(a, b, c, M, N, K, STOP, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
            PRECISION: tl.constexpr, ACC16: tl.constexpr, SPLIT: tl.constexpr):
    """C tile = A @ B over k in [split slice) and below STOP; ACC16: the running sum kept in the inputs' 16-bit
    type (a downgrade); SPLIT > 1: each program sums one slice of K and adds it to C with an atomic."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    per = tl.cdiv(tl.cdiv(K, SPLIT), BLOCK_K) * BLOCK_K
    lo = tl.program_id(2) * per
    hi = tl.minimum(lo + per, STOP)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(lo, hi, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(a + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < hi), other=0.0)
        y = tl.load(b + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < hi) & (rn[None, :] < N), other=0.0)
        if ACC16:
            acc = (acc + tl.dot(x, y)).to(x.dtype).to(tl.float32)
        else:
            acc += tl.dot(x, y, input_precision=PRECISION)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if SPLIT > 1:
        tl.atomic_add(c + rm[:, None] * N + rn[None, :], acc, mask=mask)
    else:
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty), mask=mask)


def triton_matmul(block_k: int, precision: str = "ieee", acc16: bool = False, split: int = 1,
                  stop: Callable[[int], int] = lambda k: k) -> Callable:
    def run(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        (m, k), n = a.shape, b.shape[1]
        c = (torch.zeros if split > 1 else torch.empty)(m, n, device=a.device,
                                                        dtype=torch.float32 if split > 1 else a.dtype)
        grid = (triton.cdiv(m, 32), triton.cdiv(n, 32), split)
        _matmul[grid](a, b, c, m, n, k, stop(k), BLOCK_M=32, BLOCK_N=32, BLOCK_K=block_k, PRECISION=precision,
                      ACC16=acc16, SPLIT=split)
        return c.to(a.dtype)
    return run


FMA_SOURCE = r"""
#include <cuda_runtime.h>
__global__ void fma_matmul(const float* a, const float* b, float* c, int M, int N, int K) {
  int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M || j >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc = fmaf(a[i * K + k], b[k * N + j], acc);  // one sequential chain
  c[i * N + j] = acc;
}
extern "C" void launch(const float* a, const float* b, float* c, int M, int N, int K) {
  dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
  fma_matmul<<<grid, block>>>(a, b, c, M, N, K);
}
"""


def cuda_fma_matmul() -> Callable | None:
    """The sequential-FMA matmul as a CUDA C++ library (nvcc, then ctypes); None where nvcc is missing."""
    folder = Path(tempfile.mkdtemp(prefix="fma_"))
    (folder / "fma.cu").write_text(FMA_SOURCE)
    try:
        subprocess.run(["nvcc", "-O3", "-shared", "-Xcompiler", "-fPIC", "-o", str(folder / "fma.so"),
                        str(folder / "fma.cu")], check=True, capture_output=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"CUDA FMA kernel skipped: {exc}", file=sys.stderr)
        return None
    lib = ctypes.CDLL(str(folder / "fma.so"))

    def run(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        (m, k), n = a.shape, b.shape[1]
        c = torch.empty(m, n, device=a.device)
        torch.cuda.synchronize()  # the library launches on the legacy default stream: order it both ways
        lib.launch(ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()), ctypes.c_void_p(c.data_ptr()),
                   m, n, k)
        torch.cuda.synchronize()
        return c
    return run


@triton.jit
def _row_sum(x, out, L, BLOCK: tl.constexpr, MODE: tl.constexpr, ACC16: tl.constexpr, STOP_SHORT: tl.constexpr):
    """MODE 0: blocks of BLOCK summed into a vector, a tree at the end; 1: one element at a time; 2: each
    program one chunk of BLOCK, added to the row's sum by an atomic (out zeroed, fp32)."""
    row = tl.program_id(0)
    end = L - 1 if STOP_SHORT else L
    if MODE == 2:
        offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        part = tl.sum(tl.load(x + row * L + offs, mask=offs < end, other=0.0).to(tl.float32), 0)
        tl.atomic_add(out + row, part)
    elif MODE == 1:
        acc = tl.zeros((), dtype=tl.float32)
        for i in range(0, end):
            acc += tl.load(x + row * L + i).to(tl.float32)
        tl.store(out + row, acc.to(out.dtype.element_ty))
    else:
        vec = tl.zeros((BLOCK,), dtype=tl.float16 if ACC16 else tl.float32)
        for i in range(0, end, BLOCK):
            offs = i + tl.arange(0, BLOCK)
            vec += tl.load(x + row * L + offs, mask=offs < end, other=0.0).to(vec.dtype)
        tl.store(out + row, tl.sum(vec.to(tl.float32), 0).to(out.dtype.element_ty))


def triton_row_sum(mode: int, acc16: bool = False, stop_short: bool = False, cast=None) -> Callable:
    def run(x: torch.Tensor) -> torch.Tensor:
        source = x if cast is None else x.to(cast)
        rows, length = x.shape
        out = torch.zeros(rows, device=x.device, dtype=torch.float32 if mode == 2 else x.dtype)
        grid = (rows, triton.cdiv(length, 256)) if mode == 2 else (rows,)
        _row_sum[grid](source, out, length, BLOCK=256, MODE=mode, ACC16=acc16, STOP_SHORT=stop_short)
        return out.to(x.dtype)
    return run


def judged(reference: Callable, inputs: tuple, out: torch.Tensor):
    """The judge's decision on ``out`` (nothing declared): K traced from the float64 run, the honest floor
    from the task-dtype run, the default derived policy."""
    tracer = ReductionTrace()
    with tracer:
        ref64 = reference(*(t.double() for t in inputs))
    k = max(tracer.terms(ref64).k, 1.0)
    return compare(out, Expected(ref=ref64, honest=reference(*inputs)), ToleranceSpec(), k)


def matmul_cases(fma: Callable | None) -> list[tuple[str, str, torch.dtype, Callable]]:
    """(family, name, input dtype, kernel); family "honest" must pass, "downgrade" must fail."""
    cases = [("honest", f"triton tl.dot ieee BLOCK_K {b}", torch.float32, triton_matmul(b)) for b in (16, 32, 64, 128)]
    cases += [("honest", "triton split-K 4, atomics", torch.float32, triton_matmul(32, split=4)),
              ("honest", "triton split-K 16, atomics", torch.float32, triton_matmul(32, split=16))]
    if fma is not None:
        cases.append(("honest", "CUDA sequential fmaf", torch.float32, fma))
    for dtype in (torch.bfloat16, torch.float16):
        cases += [("honest", f"triton tl.dot {str(dtype)[6:]} BLOCK_K {b}", dtype, triton_matmul(b)) for b in (32, 64)]
    cases += [
        ("downgrade", "fp32: tl.dot tf32", torch.float32, triton_matmul(32, precision="tf32")),
        ("downgrade", "fp32: TF32-rounded inputs", torch.float32, lambda a, b: tf32(a) @ tf32(b)),
        ("downgrade", "fp32: bf16 inputs", torch.float32, lambda a, b: triton_matmul(32)(a.bfloat16(), b.bfloat16()).float()),
        ("downgrade", "fp32: fp16 inputs and running sum", torch.float32, lambda a, b: triton_matmul(16, acc16=True)(a.half(), b.half()).float()),
        ("downgrade", "fp32: last K block dropped", torch.float32, triton_matmul(32, stop=lambda k: (k - 1) // 32 * 32)),
        ("downgrade", "fp32: one term skipped", torch.float32, lambda a, b: a[:, :-1] @ b[:-1, :]),
        ("downgrade", "bf16: bf16 running sum", torch.bfloat16, triton_matmul(16, acc16=True)),
    ]
    return cases


def row_cases() -> list[tuple[str, str, torch.dtype, Callable]]:
    cases = []
    for dtype, name in ((torch.float32, "fp32"), (torch.bfloat16, "bf16"), (torch.float16, "fp16")):
        cases += [("honest", f"row sum {name}: blocks then tree", dtype, triton_row_sum(0)),
                  ("honest", f"row sum {name}: one at a time", dtype, triton_row_sum(1)),
                  ("honest", f"row sum {name}: chunks by atomics", dtype, triton_row_sum(2))]
    cases += [("downgrade", "row sum fp32: bf16 inputs", torch.float32, triton_row_sum(0, cast=torch.bfloat16)),
              ("downgrade", "row sum fp32: fp16 inputs and running sum", torch.float32, triton_row_sum(0, acc16=True)),
              ("downgrade", "row sum fp32: last element dropped", torch.float32, triton_row_sum(0, stop_short=True))]
    return cases


def measure(cases, ks: list[int], seeds: int, downgrade_seeds: int, rows: bool, device: str) -> list[dict]:
    table = []
    for family, name, dtype, kernel in cases:
        for k in ks:
            used, failed, n = [], 0, seeds if family == "honest" else downgrade_seeds
            for seed in range(n):
                g = torch.Generator(device=device).manual_seed(1_000_003 * k + seed)
                if rows:
                    inputs = (torch.randn(ROWS, k, device=device, generator=g).to(dtype),)
                    reference = lambda x: x.sum(-1)  # noqa: E731
                else:
                    inputs = (torch.randn(M, k, device=device, generator=g).to(dtype),
                              torch.randn(k, N, device=device, generator=g).to(dtype))
                    reference = lambda a, b: a @ b  # noqa: E731
                result = judged(reference, inputs, kernel(*inputs))
                failed += not result.ok
                used.append(result.max_error_in_bounds)
            row = {"family": family, "kernel": name, "K": k, "checks": n, "failed": failed,
                   "used_median": statistics.median(used), "used_max": max(used)}
            print(f"| {family} | {name} | {k} | {n} | {failed} | {row['used_median']:.3g} | {row['used_max']:.3g} |",
                  flush=True)
            table.append(row)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=1000, help="fresh seeds per honest kernel and K")
    parser.add_argument("--downgrade-seeds", type=int, default=200, help="fresh seeds per downgrade and K")
    parser.add_argument("--ks", default="64,256,1024,4096,16384", help="reduction lengths, comma-separated")
    parser.add_argument("--only", choices=("matmul", "rows", "all"), default="all")
    parser.add_argument("--match", nargs="*", default=[], help="only kernels whose name holds one of these")
    parser.add_argument("--device", default="cuda", help="cpu: a smoke run under TRITON_INTERPRET=1")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("false_alarm_bench needs a CUDA GPU (or --device cpu with TRITON_INTERPRET=1)")
    torch.backends.cuda.matmul.allow_tf32 = False  # the reference's own fp32 run is fp32, as in the judge
    ks = [int(k) for k in args.ks.split(",")]
    print("| family | kernel | K | checks | failed | bound used: median | max |\n|---|---|---|---|---|---|---|")
    table = []
    picked = lambda cases: [c for c in cases if not args.match or any(m in c[1] for m in args.match)]  # noqa: E731
    if args.only in ("matmul", "all"):
        fma = cuda_fma_matmul() if args.device == "cuda" else None
        table += measure(picked(matmul_cases(fma)), ks, args.seeds, args.downgrade_seeds, False, args.device)
    if args.only in ("rows", "all"):
        table += measure(picked(row_cases()), ks, args.seeds, args.downgrade_seeds, True, args.device)
    if args.out:
        name = torch.cuda.get_device_name() if args.device == "cuda" else args.device
        Path(args.out).write_text(json.dumps({"device": name, "rows": table}, indent=1))


if __name__ == "__main__":
    main()
