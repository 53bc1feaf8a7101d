"""Timing benchmarks for BENCHMARKS.md (issue 3). Run on the GPU machine from the repo root:

    python bench/timing_bench.py OUT_DIR [--parts repeat,fidelity,cost,roof [LIST]]

LIST (comma-separated) replaces a part's default problems (repeat, cost) or vector sizes (fidelity).

repeat    5 independent `profile` runs of the same kernels: max/min of their medians (goal <= 1.02)
fidelity  our op-time median and CUPTI kernel time vs Nsight Compute's median gpu__time_duration over 10
          calls, vector_add at several sizes (goal: within 3% for kernels >= 10 us)
cost      wall time for `profile` to reach +-1% on each bundled problem, side by side with a fixed protocol
          (100 calls, L2 flush, CUDA events, same input: the usual harness practice) and its spread
roof      `calibrate`, then % of the measured bandwidth or matmul rate each bundled baseline reaches
Writes OUT_DIR/<part>.json and prints a markdown table per part.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
PROBLEMS = REPO / "problems"

from kernel_mcp import stats  # noqa: E402
from kernel_mcp.tools._request import settings_from  # noqa: E402
from kernel_mcp.tools.profile import profile  # noqa: E402


def _listed(default: list) -> list:
    """argv[4], comma-separated, overrides a part's default list (problems, or sizes for fidelity)."""
    if len(sys.argv) <= 4:
        return default
    return [type(default[0])(item) for item in sys.argv[4].split(",")]


def _problems() -> list[Path]:
    return sorted(p for p in PROBLEMS.iterdir() if (p / "task.yml").exists())


def _baseline(name: str) -> tuple[Path, Path]:
    return PROBLEMS / name, PROBLEMS / name / "baseline.py"


def part_repeat(out: Path) -> list[dict]:
    rows = []
    for name in _listed(["vector_add", "matmul_bf16"]):
        medians: dict[int, list[float]] = {}
        for _ in range(5):
            result = profile(*_baseline(name), device="cuda", settings=settings_from(budget_s=10))
            for i, shape in enumerate(result.shapes):
                medians.setdefault(i, []).append(shape.candidate.median_ms)
        for i, values in medians.items():
            rows.append({"problem": name, "shape": i, "medians_us": [round(v * 1e3, 3) for v in values],
                         "max_over_min": max(values) / min(values)})
    _table(rows, ["problem", "shape", "medians_us", "max_over_min"])
    return rows


def _vector_add_sized(tmp: Path, n: int) -> Path:
    folder = tmp / f"vector_add_{n}"
    if not folder.exists():
        import shutil
        shutil.copytree(PROBLEMS / "vector_add", folder)
        task = yaml.safe_load((folder / "task.yml").read_text())
        task["benchmarks"] = [{"n": n, "itemsize": 4, "seed": 7}]
        (folder / "task.yml").write_text(yaml.safe_dump(task))
    return folder


NCU_CALLS = 12  # ncu witness: calls profiled per size; the first two are dropped (first-touch effects)
KERNEL_CALLS = 11  # CUPTI calls per shape in the fidelity profile (profile's default is 3)


def ncu_median_us(problem: Path, candidate: Path, params: dict, out: Path) -> tuple[float | None, str]:
    """(median gpu__time_duration in us per call, note): ncu times NCU_CALLS calls of the candidate with only
    that metric collected (a single pass; the counter set of `profile --counters` replays the kernel several
    times and reads the duration in one of those passes), --clock-control none, caches flushed by ncu."""
    import subprocess

    from kernel_mcp.counters.ncu import M_DURATION, ncu_command, parse_ncu_csv
    spec = {"problem": str(problem), "candidate": str(candidate), "params": params, "calls": NCU_CALLS}
    log = out / f"ncu_{problem.name}.csv"
    target = [sys.executable, "-m", "kernel_mcp.worker.steps.counter_target", json.dumps(spec)]
    done = subprocess.run(ncu_command(target, log, metrics=(M_DURATION,)), capture_output=True, text=True,
                          timeout=600, cwd=REPO)
    kernels = parse_ncu_csv(log.read_text()) if log.exists() else []
    if done.returncode or len(kernels) < NCU_CALLS:
        return None, f"ncu rc {done.returncode}, {len(kernels)} kernels: {(done.stderr or done.stdout)[-300:]}"
    per_call = len(kernels) // NCU_CALLS
    durations = [sum(k.duration_us or 0 for k in kernels[i:i + per_call]) for i in range(0, len(kernels), per_call)]
    return stats.median(durations[2:]), f"{len(kernels)} kernels, {per_call} per call"


def part_fidelity(out: Path) -> list[dict]:
    """Each size: `profile` (op time from events, kernel time from CUPTI), then ncu's median duration."""
    from kernel_mcp.problem import load_problem
    rows = []
    for n in _listed([1 << 22, 1 << 23, 1 << 24, 1 << 26]):
        folder = _vector_add_sized(out / "problems", n)
        candidate = PROBLEMS / "vector_add" / "baseline.py"
        result = profile(folder, candidate, device="cuda", settings=settings_from(budget_s=6, kernel_calls=KERNEL_CALLS))
        shape = result.shapes[0] if result.shapes else None
        ncu, note = ncu_median_us(folder, candidate, load_problem(folder).benchmarks[0], out)
        row = {"n": n, "op_us": shape.candidate.median_ms * 1e3 if shape else None,
               "kernel_us": (shape.candidate.kernel_ms or 0) * 1e3 if shape else None, "ncu_us": ncu, "ncu": note}
        if ncu and shape:
            row["op_vs_ncu"] = row["op_us"] / ncu
            row["kernel_vs_ncu"] = row["kernel_us"] / ncu
        rows.append(row)
    _table(rows, ["n", "op_us", "kernel_us", "ncu_us", "op_vs_ncu", "kernel_vs_ncu", "ncu"])
    return rows


def fixed_protocol_ms(problem: Path, candidate: Path, params: dict, calls: int = 100) -> tuple[float, float]:
    """(median ms, wall s) of the usual practice: one input, 100 calls, each with an L2 flush and events."""
    import importlib.util

    import torch

    from kernel_mcp.problem import load_problem
    from kernel_mcp.worker.judge.reference import ReferenceRuntime
    started = time.perf_counter()
    runtime = ReferenceRuntime(load_problem(problem), "cuda")
    spec = importlib.util.spec_from_file_location(f"bench_{candidate.parent.name}", candidate)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = runtime.generate(params)
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, dtype=torch.int32, device="cuda")
    for _ in range(3):
        module.custom_kernel(data)
    samples = []
    for _ in range(calls):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        flush.zero_()
        begin.record()
        module.custom_kernel(data)
        end.record()
        end.synchronize()
        samples.append(begin.elapsed_time(end))
    return stats.median(samples), time.perf_counter() - started


def part_cost(out: Path) -> list[dict]:
    from kernel_mcp.problem import load_problem
    rows = []
    for folder in [PROBLEMS / name for name in _listed([p.name for p in _problems()])]:
        started = time.perf_counter()
        result = profile(folder, folder / "baseline.py", device="cuda", settings=settings_from(budget_s=20))
        ours_s = time.perf_counter() - started
        params = load_problem(folder).benchmarks[0]
        fixed = [fixed_protocol_ms(folder, folder / "baseline.py", params) for _ in range(5)]
        medians = [m for m, _ in fixed]
        shape = result.shapes[0] if result.shapes else None
        rows.append({"problem": folder.name, "profile_wall_s": round(ours_s, 1),
                     "profile_timing_s": round(result.seconds, 1),
                     "samples_shape0": shape.candidate.samples if shape else None,
                     "ci_shape0": shape.candidate.rel_ci_half_width if shape else None,
                     "median_us_shape0": round(shape.candidate.median_ms * 1e3, 2) if shape else None,
                     "fixed_wall_s": round(stats.median([w for _, w in fixed]), 2),
                     "fixed_median_us": round(stats.median(medians) * 1e3, 2),
                     "fixed_spread": round(max(medians) / min(medians), 4)})
    _table(rows, list(rows[0]))
    return rows


def part_roof(out: Path) -> list[dict]:
    from kernel_mcp.problem import load_problem
    from kernel_mcp.tools.calibrate import calibrate
    from kernel_mcp.tools.roofline import roofline_from
    cal = calibrate()
    rows = [{"problem": "calibration", **{f"{k} TB/s": v / 1e12 for k, v in cal.bandwidth_by_mix.items()},
             **{f"{k} TFLOP/s": v / 1e12 for k, v in cal.matmul_flops_per_s.items()}}]
    print(rows[0], flush=True)
    for folder in _problems():
        prof = profile(folder, folder / "baseline.py", device="cuda", settings=settings_from(budget_s=10))
        roof = roofline_from(prof, load_problem(folder).spec.unit, png=out / f"roofline_{folder.name}.png")
        for i, shape in enumerate(roof.shapes):
            for point in shape.points:
                rows.append({"problem": folder.name, "shape": i, "who": point.who, "us": point.time_ms * 1e3,
                             "percent_of_measured_roof": point.percent_of_bound, "bound": point.bound,
                             "unit": roof.unit})
    _table(rows[1:], ["problem", "shape", "who", "us", "percent_of_measured_roof", "bound", "unit"])
    return rows


def _table(rows: list[dict], columns: list[str]) -> None:
    print("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    for row in rows:
        cells = [f"{row.get(c):.4g}" if isinstance(row.get(c), float) else str(row.get(c, "")) for c in columns]
        print("| " + " | ".join(cells) + " |")
    sys.stdout.flush()


PARTS = {"repeat": part_repeat, "fidelity": part_fidelity, "cost": part_cost, "roof": part_roof}


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    chosen = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[2] == "--parts" else list(PARTS)
    for name in chosen:
        print(f"\n## {name}\n", flush=True)
        started = time.perf_counter()
        rows = PARTS[name](out)
        (out / f"{name}.json").write_text(json.dumps(rows, indent=1, default=str))
        print(f"\n({name}: {time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
