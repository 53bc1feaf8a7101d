"""Where a large output's comparison spends its seconds, and what the first test of a check pays for it.

    python bench/compare_bench.py [--elements N] [--device cuda] [--out FILE.json]

KernelBench's elementwise problems (19_ReLU ... 32_HardTanh) return 4096 x 393,216 fp32 values (1.6G, 6 GiB), and
their float64 reference (12 GiB) waits in pinned host memory while the candidate runs (judge/parking.py). The
first test of a check compares that output five times: four trivial answers (judge/degenerate.py) and the
candidate's output. On an H100 (2026-12-06, `tools/gpu_owed.sh memory`) the comparison took 9.6 s a time, 48 s of
a 124 s check. This bench builds that moment (an fp32 LeakyReLU, its float64 reference parked as the judge parks
it) and times, side by side in one process:

* ``first test, each bound made again``: five comparisons, each against a fresh ``Expected`` and read to the end
  (what every check did before bounds were kept per leaf);
* ``first test, as the judge does it``: the same five against one ``Expected`` (its bound made once), the
  trivial answers stopping at their first failing piece (``until_failed``);
* each pass alone: the per-group noise (the atomics-free sums, and ``index_add_`` beside them), the honest
  run's use of the bound, the tally; the host-to-device copy of the parked reference, piece by piece.

Then the profiler's top device operations over one comparison. Each timing is the median of ``--repeats``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from kernel_mcp.taskspec import ToleranceSpec
from kernel_mcp.worker.judge import noise_floor, tolerance
from kernel_mcp.worker.judge.degenerate import TRIVIAL_OUTPUTS, _trivial
from kernel_mcp.worker.judge.parking import park
from kernel_mcp.worker.judge.tally import tally
from kernel_mcp.worker.judge.tolerance import Expected, compare

POLICY = ToleranceSpec()


def _timed(fn, device: str, repeats: int) -> float:
    seconds = []
    for _ in range(repeats):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def _moment(elements: int, device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input, candidate output, float64 reference parked as the judge parks it) of a LeakyReLU, in rows of
    393,216 as KernelBench's (one floor group a row)."""
    width = min(393_216, elements)
    x = torch.rand(max(1, elements // width), width, device=device)
    out = torch.nn.functional.leaky_relu(x, 0.01)
    ref = park(torch.nn.functional.leaky_relu(x.double(), 0.01)) if device.startswith("cuda") else \
        torch.nn.functional.leaky_relu(x.double(), 0.01)
    return x, out, ref


def _first_test(x: torch.Tensor, out: torch.Tensor, ref: torch.Tensor, honest: torch.Tensor, kept: bool) -> bool:
    """The first test's five comparisons: four trivial answers, then the candidate's output."""
    shared = Expected(ref=ref, honest=honest)
    verdicts = []
    for kind in TRIVIAL_OUTPUTS:
        fake = _trivial(kind, honest, x)
        if fake is not None:
            exp = shared if kept else Expected(ref=ref, honest=honest)
            verdicts.append(compare(fake, exp, POLICY, 1.0, until_failed=kept).ok)
        del fake
    verdicts.append(compare(out, shared if kept else Expected(ref=ref, honest=honest), POLICY, 1.0).ok)
    return verdicts[-1]


def _index_add_noise(pieces, u_out: float, size: int) -> None:
    """The per-group sums as index_add_ made them (one atomic add per element), for the side-by-side."""
    groups = max(1, -(-pieces.n // size))
    squares = torch.zeros(groups, dtype=torch.float64, device=pieces.device)
    for start, _, ref, honest, _ in pieces:
        ids = noise_floor.group_ids(start, ref.numel(), size, pieces.device)
        excess = ((honest.to(torch.float64) - ref).abs() - u_out * ref.abs()).clamp(min=0.0)
        squares.index_add_(0, ids, excess.square())
        squares.index_add_(0, ids, ref.square())
        squares.index_add_(0, ids, torch.ones_like(ref))


def _passes(x, out, ref, device: str, repeats: int) -> dict[str, float]:
    exp = Expected(ref=ref, honest=out)
    pieces = tolerance._Pieces(out, exp)
    size = noise_floor.group_size(pieces.shape)
    u = tolerance.unit_roundoff(torch.float32)
    bound, norm_bound, _, _ = tolerance._bound_for(pieces, exp, torch.float32, POLICY, 1.0, 0.0)
    flat = ref.reshape(-1)
    return {
        "copy of the parked reference to the device, piece by piece": _timed(
            lambda: [flat[s:s + tolerance.CHUNK].to(device) for s in range(0, flat.numel(), tolerance.CHUNK)],
            device, repeats),
        "per-group noise (sums a group at a time)": _timed(lambda: noise_floor.honest_noise(pieces, u, size), device,
                                                           repeats),
        "per-group noise (index_add_, as before)": _timed(lambda: _index_add_noise(pieces, u, size), device, repeats),
        "the honest run's use of the bound": _timed(lambda: tolerance._honest_use(pieces, bound), device, repeats),
        "tally": _timed(lambda: tally(pieces, bound, POLICY, "", norm_bound, ""), device, repeats),
    }


def _profile(out, ref, device: str) -> list[dict]:
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        compare(out, Expected(ref=ref, honest=out), POLICY, 1.0)
    key = "self_device_time_total" if device.startswith("cuda") else "self_cpu_time_total"
    rows = sorted(prof.key_averages(), key=lambda e: getattr(e, key, 0.0), reverse=True)[:12]
    return [{"op": e.key, "calls": e.count, "ms": getattr(e, key, 0.0) / 1e3} for e in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=4096 * 393_216)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    x, out, ref = _moment(args.elements, args.device)
    honest = out.clone()
    figures = {"elements": out.numel(), "device": torch.cuda.get_device_name() if args.device.startswith("cuda")
               else "cpu", "reference pinned": ref.is_pinned() if ref.device.type == "cpu" else False}
    _first_test(x, out, ref, honest, kept=True)  # warm: pinned blocks, kernels loaded
    figures["first test, each bound made again (s)"] = _timed(lambda: _first_test(x, out, ref, honest, False),
                                                             args.device, args.repeats)
    figures["first test, as the judge does it (s)"] = _timed(lambda: _first_test(x, out, ref, honest, True),
                                                            args.device, args.repeats)
    figures["passes (s)"] = _passes(x, out, ref, args.device, args.repeats)
    figures["top operations over one comparison"] = _profile(out, ref, args.device)
    text = json.dumps(figures, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
