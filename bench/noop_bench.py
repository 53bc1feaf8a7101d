"""Is noise ever promoted? (issue 14: 0 of 50 no-op candidates promoted)

    python bench/noop_bench.py OUT_DIR [--problem problems/vector_add] [--start FILE] [--count 50]
                               [--device auto] [--shapes tests|benchmarks] [--timing 2]

A run of the loop on the problem's baseline (or ``--start``: on a CPU a plain-torch kernel keeps each
evaluation to seconds, where a Triton kernel under the interpreter takes a minute); then ``count`` proposals that change nothing the kernel
computes (each adds a different unused module-level constant, so no two share a syntax tree and none is
refused as a repeat) go through the loop's own decision path (``Optimizer.propose``: apply the edit,
evaluate, time against the incumbent interleaved, confirm in a fresh run, promote only if both show a
significant gain). Each should come back "not significantly faster". Prints the promotions (must be 0),
the verdicts, and the no-ops' measured speedups over the incumbent; writes OUT_DIR/noop.json. The run
folder (OUT_DIR/run) is a normal one: ``kernel-mcp report OUT_DIR/run`` renders it.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def noop_edit(source: str, i: int) -> str:
    """The whole file with one more unused constant: the same kernel, a different syntax tree."""
    return f"```python\n{source.rstrip()}\n\n_UNUSED_{i} = {i}  # changes nothing the kernel computes\n```"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--problem", type=Path, default=REPO / "problems" / "vector_add")
    parser.add_argument("--start", type=Path, default=None, help="the kernel to start from (default: baseline.py)")
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--shapes", default=None, help="tests | benchmarks (default: tests on a CPU)")
    parser.add_argument("--timing", type=float, default=2.0, help="timing budget of one evaluation, seconds")
    args = parser.parse_args()
    from kernel_mcp.agent.command import problem_hash
    from kernel_mcp.agent.loop.optimizer import Optimizer
    from kernel_mcp.agent.run.budget import Budget
    from kernel_mcp.agent.run.folder import RunConfig, RunFolder
    from kernel_mcp.worker.resolve import default_shapes
    from kernel_mcp.worker.runners.local import LocalRunner
    shapes = args.shapes or default_shapes(args.device)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    config = RunConfig(problem=str(args.problem.resolve()), problem_hash=problem_hash(args.problem), agent="noop")
    runner, rows, began = LocalRunner(warm=True), [], time.monotonic()
    try:
        with RunFolder.create(args.out_dir / "run", config) as folder:
            start = args.start or args.problem / "baseline.py"
            opt = Optimizer(folder, args.problem, start, "noop", Budget(), device=args.device,
                            budget_s=args.timing, shapes=shapes, runner=runner, tune=False)
            baseline, _ = opt.evaluate(opt.start_source, "baseline", "0")
            opt.promote(baseline, "0", None, how="baseline")
            for i in range(args.count):
                answer, refused = opt.propose("0", noop_edit(opt.start_source, i), f"no-op {i}")
                promoted = opt.state.incumbents["0"] != baseline
                rows.append({"i": i, "answer": answer, "refused": refused, "promoted": promoted})
                print(f"[{i + 1}/{args.count}] {'PROMOTED ' if promoted else ''}{answer}", flush=True)
                if promoted:  # later no-ops would be judged against it: note it and go on from the baseline
                    opt.promote(baseline, "0", None, how="bench: back to the baseline")
            speedups = [d.speedup for d in opt.state.evaluated.values() if d.role == "candidate" and d.speedup]
    finally:
        runner.close()
    summary = {"count": args.count, "promoted": sum(r["promoted"] for r in rows), "refused": sum(r["refused"] for r in rows),
               "seconds": round(time.monotonic() - began, 1), "device": args.device, "shapes": shapes,
               "timing_s": args.timing, "speedup_over_reference": {
                   "median": statistics.median(speedups) if speedups else None,
                   "min": min(speedups, default=None), "max": max(speedups, default=None)}, "rows": rows}
    (args.out_dir / "noop.json").write_text(json.dumps(summary, indent=1))
    print(f"{summary['promoted']} of {args.count} no-op candidates promoted ({summary['refused']} refused before "
          f"evaluation); {summary['seconds']} s; each no-op's own speedup over the reference: "
          f"{summary['speedup_over_reference']}")
    return 0 if summary["promoted"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
