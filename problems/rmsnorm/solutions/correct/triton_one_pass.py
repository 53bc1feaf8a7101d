"""rmsnorm in one pass: each program loads its whole row once into registers (rows of up to MAX_COLS
columns), sums the squares, scales and stores. The bundled baseline reads each row twice.

On an H200 at 4096 x 4096 (2026-12-02, BENCHMARKS.md): fp32 32.9 us, 94% of the bandwidth roof (the
baseline 86%); bf16 18.5 us, 84% (the baseline 69%; a plain copy of the same bytes reaches 87%).
"""
import torch
import triton
import triton.language as tl

EPS = 1e-6
MAX_COLS = 16384  # a row held in registers: wider rows need the baseline's loop over column blocks


@triton.jit
def _rmsnorm_one_pass(x_ptr, w_ptr, out_ptr, cols, x_row_stride, out_row_stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * out_row_stride + offs, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    x, weight = data
    x, weight = x.contiguous(), weight.contiguous()
    rows, cols = x.shape
    if cols > MAX_COLS:
        raise ValueError(f"rows of {cols} columns: this kernel holds a row of at most {MAX_COLS} in registers")
    out = torch.empty_like(x)
    _rmsnorm_one_pass[(rows,)](x, weight, out, cols, x.stride(0), out.stride(0), EPS,
                               BLOCK=triton.next_power_of_2(cols), num_warps=8)
    return out
