"""Do the derived bounds hold honest kernels that sum in another order, and still catch shortcuts?
(issue 13: 0 false alarms in 1,000 checks with fresh seeds, with and without a declared tolerance)

    python bench/tolerance_bench.py [--seeds 1000] [--out FILE.json]

For each op, every seed draws fresh shapes and values, computes the float64 reference and the
reference's own task-dtype result (the 'honest' error the bounds are calibrated on, as the judge does),
then compares variants through ``kernel_mcp.worker.judge.tolerance.compare``:

* honest variants, which must pass: the same arithmetic in another order (K split in blocks summed in
  sequence, in reverse, split-K partial sums, a sequential running sum);
* shortcuts, which must fail: inputs rounded to TF32 or bf16 in an fp32 op, a bf16 running sum in a
  bf16 matmul.

Policies: ``default`` (no tolerance declared, what most problems have: magnitude |ref|, and K inferred
as the judge does, input elements per output element) and
``declared`` (K = the reduction length, magnitude |A|@|B|). Prints one row per (op, policy, variant): the
checks that failed, and the share of the bound used (median and max of the worst element per check).
CPU only (torch's CPU kernels stand in for the GPU's; the rules are the same).
"""
from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict

import torch

from kernel_mcp.taskspec import ToleranceSpec
from kernel_mcp.worker.judge.tolerance import Expected, compare, inferred_reduction_length

DEFAULT = ToleranceSpec()


def tf32(t: torch.Tensor) -> torch.Tensor:
    """Round fp32 values to TF32's 10 explicit mantissa bits (to nearest), as tensor cores read them."""
    bits = t.contiguous().view(torch.int32)
    rounded = (bits + 0x1000) & ~0x1FFF
    return rounded.view(torch.float32)


def blocked(a: torch.Tensor, b: torch.Tensor, block: int, reverse: bool = False, acc=torch.float32):
    """Sum over K in blocks of ``block``, one block after another, in ``acc`` (a tiled kernel's order)."""
    k = a.shape[1]
    starts = list(range(0, k, block))
    out = torch.zeros(a.shape[0], b.shape[1], dtype=acc)
    for s in (reversed(starts) if reverse else starts):
        out = (out.float() + a[:, s:s + block].float() @ b[s:s + block, :].float()).to(acc)
    return out


def split_k(a: torch.Tensor, b: torch.Tensor, parts: int) -> torch.Tensor:
    chunks = torch.tensor_split(torch.arange(a.shape[1]), parts)
    return sum(a[:, c].float() @ b[c, :].float() for c in chunks)


def matmul_fp32(g: torch.Generator):
    m, n, k = (int(torch.randint(lo, hi, (1,), generator=g)) for lo, hi in ((16, 257), (16, 257), (16, 1001)))
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    exp = Expected(ref=a.double() @ b.double(), honest=a @ b, magnitude=a.double().abs() @ b.double().abs())
    variants = {"honest: K in blocks of 32": blocked(a, b, 32), "honest: K blocks reversed": blocked(a, b, 32, True),
                "honest: split-K in 4": split_k(a, b, 4), "honest: K in blocks of 128": blocked(a, b, 128),
                "shortcut: TF32 inputs": tf32(a) @ tf32(b), "shortcut: bf16 inputs": a.bfloat16().float() @ b.bfloat16().float()}
    return exp, variants, k, a.numel() + b.numel()


def matmul_bf16(g: torch.Generator):
    m, n, k = (int(torch.randint(lo, hi, (1,), generator=g)) for lo, hi in ((16, 257), (16, 257), (16, 1001)))
    a, b = torch.randn(m, k, generator=g).bfloat16(), torch.randn(k, n, generator=g).bfloat16()
    exp = Expected(ref=a.double() @ b.double(), honest=a @ b, magnitude=a.double().abs() @ b.double().abs())
    fp32 = a.float() @ b.float()
    truncated = (fp32.contiguous().view(torch.int32) & ~0xFFFF).view(torch.float32).bfloat16()
    variants = {"honest: fp32 sum, rounded once": fp32.bfloat16(), "honest: K in blocks of 32": blocked(a, b, 32).bfloat16(),
                "honest: split-K in 4": split_k(a, b, 4).bfloat16(), "honest?: fp32 sum, truncated": truncated,
                "shortcut: bf16 running sum": blocked(a, b, 8, acc=torch.bfloat16)}
    return exp, variants, k, a.numel() + b.numel()


def row_sum(g: torch.Generator):
    rows, length = int(torch.randint(1, 65, (1,), generator=g)), int(torch.randint(100, 100_001, (1,), generator=g))
    x = torch.randn(rows, length, generator=g)
    exp = Expected(ref=x.double().sum(1), honest=x.sum(1), magnitude=x.double().abs().sum(1))
    variants = {"honest: torch.cumsum, last element": x.cumsum(1)[:, -1], "honest: blocks of 1024": x.view(rows, -1).split(1024, 1)[0].sum(1)
                + sum(c.sum(1) for c in x.split(1024, 1)[1:]), "shortcut: bf16 inputs": x.bfloat16().float().sum(1)}
    return exp, variants, length, x.numel()


OPS = {"matmul fp32": matmul_fp32, "matmul bf16": matmul_bf16, "row sum fp32": row_sum}


def policies(op: str) -> dict[str, ToleranceSpec]:
    declared = ToleranceSpec(K="k", magnitude="abs_inputs", accumulate="float32" if "bf16" in op else None)
    return {"default": DEFAULT, "declared": declared}


def run(seeds: int) -> dict:
    tally: dict = defaultdict(lambda: {"checks": 0, "failed": 0, "used": []})
    for op, make in OPS.items():
        for seed in range(seeds):
            exp, variants, k, inputs = make(torch.Generator().manual_seed(10_000 + seed))
            inferred = inferred_reduction_length(inputs, exp.ref.numel())  # what the judge uses with no K declared
            for policy_name, policy in policies(op).items():
                for variant, out in variants.items():
                    result = compare(out, exp if policy.magnitude == "abs_inputs" else
                                     Expected(ref=exp.ref, honest=exp.honest), policy,
                                     k if policy_name == "declared" else inferred)
                    row = tally[(op, policy_name, variant)]
                    row["checks"] += 1
                    row["failed"] += not result.ok
                    row["used"].append(result.max_error_in_bounds)
    return {f"{op} | {policy} | {variant}": {"checks": r["checks"], "failed": r["failed"],
                                             "used_median": statistics.median(r["used"]), "used_max": max(r["used"])}
            for (op, policy, variant), r in tally.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = run(args.seeds)
    print("| op | policy | variant | checks | failed | bound used: median | max |\n|---|---|---|---|---|---|---|")
    for key, r in rows.items():
        print(f"| {key} | {r['checks']} | {r['failed']} | {r['used_median']:.3g} | {r['used_max']:.3g} |")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
