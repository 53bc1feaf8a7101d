"""Evaluations per minute through the pool (kernel_mcp/worker/runners/pool.py) against its number of workers, warm
(spare judges booted ahead) and cold (a judge started per evaluation), configurations alternated in rounds.

    python bench/pool_bench.py [--configs local,cpu:1,cpu:2,cpu:4] [--what check|evaluate] [--evals 12]
                               [--rounds 3] [--problem problems/vector_add] [--budget 1] [--json FILE]

A configuration: ``local`` (one warm LocalRunner: what serve and optimize used before the pool), ``cpu:N``
(N CPU workers), ``gpus:0,1`` (a worker per listed GPU), each optionally ``:cold`` (no spare judges). An
evaluation is a check of a candidate (``check``), or a check and then a profile of it (``evaluate``, as the
orchestrator does; ``--budget`` seconds of timing, the problem's test shapes on a CPU, benchmark shapes on a
GPU). The candidates are the problem's baseline with its BLOCK varied, each a file of its own. Each batch
starts a fresh runner, runs one evaluation per worker unmeasured (warm: the spares are booted; cold: the
fork server and compile caches exist, as in a long run), then ``--evals`` evaluations from as many threads
as workers; evaluations per minute is ``evals / wall``. Every evaluation must pass.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernel_mcp.tools.check import check  # noqa: E402
from kernel_mcp.tools.profile import profile  # noqa: E402
from kernel_mcp.worker.protocol import ProfileSettings  # noqa: E402
from kernel_mcp.worker.runners.local import LocalRunner  # noqa: E402
from kernel_mcp.worker.runners.pool import cpu_pool, gpu_pool  # noqa: E402

BLOCKS = (256, 512, 1024, 2048, 4096)


def make_runner(config: str):
    parts = config.split(":")
    cold = parts[-1] == "cold"
    kind, rest = parts[0], ":".join(parts[1:len(parts) - cold])
    if kind == "local":
        return LocalRunner(warm=not cold), "cpu" if not rest else rest
    if kind == "cpu":
        return cpu_pool(int(rest), warm=not cold), "cpu"
    if kind == "gpus":
        return gpu_pool(rest, warm=not cold), "auto"
    raise SystemExit(f"unknown configuration {config!r}")


def candidates(problem: Path, folder: Path, count: int) -> list[Path]:
    source = (problem / "baseline.py").read_text()
    files = []
    for i in range(count):
        block = BLOCKS[i % len(BLOCKS)]
        path = folder / f"cand_{i}_{block}.py"
        path.write_text(source.replace("BLOCK = 1024", f"BLOCK = {block}"))
        files.append(path)
    return files


def evaluate(problem: Path, candidate: Path, runner, device: str, what: str, budget: float) -> float:
    """Seconds one evaluation took; raises unless it passed."""
    started = time.perf_counter()
    result = check(problem, candidate, device=device, runner=runner)
    if not result.passed:
        raise SystemExit(f"{candidate.name}: {result.verdict} {result.findings[:2]}")
    if what == "evaluate":
        timed = profile(problem, candidate, device=device, runner=runner,
                        settings=ProfileSettings(budget_s=budget, shapes="tests" if device == "cpu" else "benchmarks"))
        if not timed.passed:
            raise SystemExit(f"{candidate.name}: profile {timed.verdict} {timed.findings[:2]}")
    return time.perf_counter() - started


def batch(config: str, problem: Path, files: list[Path], what: str, budget: float) -> dict:
    runner, device = make_runner(config)
    width = getattr(runner, "parallel", 1)
    try:
        warmups = [threading.Thread(target=evaluate, args=(problem, files[i % len(files)], runner, device, what,
                                                           budget)) for i in range(width)]
        for thread in warmups:
            thread.start()
        for thread in warmups:
            thread.join()
        todo, lock, latencies = list(files), threading.Lock(), []

        def submitter() -> None:
            while True:
                with lock:
                    if not todo:
                        return
                    file = todo.pop(0)
                latencies.append(evaluate(problem, file, runner, device, what, budget))
        started = time.perf_counter()
        threads = [threading.Thread(target=submitter) for _ in range(width)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
    finally:
        runner.close()
    if len(latencies) != len(files):
        raise SystemExit(f"{config}: {len(files) - len(latencies)} evaluations lost")
    return {"config": config, "workers": width, "wall_s": wall, "per_min": 60 * len(files) / wall,
            "latency_median_s": statistics.median(latencies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="local,cpu:1,cpu:2,cpu:4")
    parser.add_argument("--what", choices=("check", "evaluate"), default="check")
    parser.add_argument("--evals", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=1.0, help="timing budget of a profile, seconds")
    parser.add_argument("--problem", type=Path, default=REPO / "problems" / "vector_add")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/pool_bench"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    files = candidates(args.problem.resolve(), args.workdir, args.evals)
    configs = args.configs.split(",")
    rows: list[dict] = []
    for round_ in range(args.rounds):
        for config in configs:
            row = batch(config, args.problem.resolve(), files, args.what, args.budget) | {"round": round_}
            rows.append(row)
            print(f"round {round_ + 1} {config}: {row['per_min']:.1f} evaluations/min ({row['wall_s']:.1f} s, "
                  f"median latency {row['latency_median_s']:.2f} s)", flush=True)
    base = statistics.median(r["per_min"] for r in rows if r["config"] == configs[0])
    print(f"\n{args.what} x {args.evals}, {args.rounds} rounds; medians; ratio to {configs[0]}")
    for config in configs:
        rates = [r["per_min"] for r in rows if r["config"] == config]
        print(f"{config:>14}: {statistics.median(rates):6.1f} /min  x{statistics.median(rates) / base:.2f}  "
              f"(rounds: {', '.join(f'{r:.1f}' for r in rates)})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
