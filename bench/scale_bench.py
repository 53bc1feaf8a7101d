"""The unattended search on 1, 2, 4, 8 GPUs (issue 17): ``kernel-mcp optimize --agent tune`` through the
local pool (``--gpus``) and through Ray (``--cluster local``), its evaluations per minute and the best it
reached as the minutes went; then whether timing on every GPU, all busy at once, is as trustworthy as on
one GPU alone.

    python3 bench/scale_bench.py OUT --workers 1,2,4,8 --via pool,ray --budget 10m --timing 4
    python3 bench/scale_bench.py OUT --workers 1 --via pool --trust-rounds 5 --host-load 8   # one GPU

1. Per (via, N): the real CLI, ``optimize PROBLEM --agent tune --budget B --timing T --json``, on the
   first N visible GPUs (pool: ``--gpus 0,..,N-1``; Ray: a local Ray started on CUDA_VISIBLE_DEVICES
   cut to N), each run with a fresh kernel build cache (every N pays its compiles). From its journal:
   * evaluations per minute: the tune's measurements and comparisons (``tune_step`` records: each timed
     once, with its seconds) over the span from the first one's start to the last one's end; also of the
     first halving round alone (a batch of independent measurements: the rate the workers can deliver);
   * the best reached by each minute: the search's own paired comparisons that cleared the run's margin
     (a chain from the start), times the baseline's speedup over the reference; and the run's confirmed
     best (the promotion after the tune, evaluated afresh).
   Ratios against N = 1 of the same route; the issue's goal is at least 0.9 x N.
2. Trust (pool only, unless ``--trust-rounds 0``): the problem's baseline (or ``--kernel``) profiled
   ``--trust-rounds`` times on each GPU alone, one GPU at a time, then on every GPU at once (one thread per
   GPU, all timing together), optionally while ``--host-load`` CPU workers check a Triton-interpreted
   kernel in a loop (the host's cores busy, as compile steps and other workers keep them). Per GPU and
   shape: the median over rounds of each profile's median, together against alone on the same GPU,
   whether it lies within the alone runs' confidence interval, and each GPU alone against GPU 0 alone.

Writes OUT/results.json and prints a Markdown summary. A route that cannot run here (Ray not installed,
fewer GPUs than asked) is reported as skipped, with why.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # optimize_bench

from optimize_bench import cli  # noqa: E402  (its neighbour in bench/: kernel-mcp run, stderr to a log)

from kernel_mcp.agent.run.journal import read  # noqa: E402


# --- 1. the search on N workers ------------------------------------------------------------------------
def visible_gpus() -> list[str]:
    """This process's GPUs as CUDA_VISIBLE_DEVICES names them (or their indices when it is unset)."""
    import torch
    given = [p.strip() for p in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if p.strip()]
    return given or [str(i) for i in range(torch.cuda.device_count())]


def run_search(via: str, workers: int, args, out: Path) -> dict:
    gpus = visible_gpus()
    if workers > len(gpus):
        return {"skipped": f"{len(gpus)} GPU(s) visible, {workers} asked"}
    if via == "ray" and importlib.util.find_spec("ray") is None:
        return {"skipped": "ray is not installed here (pip install 'kernel-mcp[ray]')"}
    folder = out / f"{via}-{workers}"
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "KERNEL_MCP_CACHE": str(folder / "cache")}
    route = ["--gpus", ",".join(str(i) for i in range(workers))]
    if via == "ray":
        env["CUDA_VISIBLE_DEVICES"], route = ",".join(gpus[:workers]), ["--cluster", "local"]
    code, wall, stdout = cli(["optimize", str(args.problem), "--agent", "tune", "--budget", args.budget, "--timing",
                              str(args.timing), "--run", str(folder / "run"), "--json", *route],
                             folder / "stderr.log", args.timeout, env)
    if not (folder / "run" / "journal.jsonl").exists():
        return {"exit": code, "wall_s": round(wall, 1), "error": (folder / "stderr.log").read_text()[-1500:]}
    summary = json.loads(stdout) if stdout.strip() else {}
    return {"exit": code, "wall_s": round(wall, 1), **rates(folder / "run", workers),
            "best_x_reference": (summary.get("best") or {}).get("speedup"),
            "gain_over_baseline": summary.get("gain_over_baseline"), "finished": summary.get("finished")}


def rates(run: Path, workers: int) -> dict:
    """Evaluations per minute and the best by minute, from the run's journal."""
    records = read(run / "journal.jsonl")
    steps = [(r.at - r.model_extra["seconds"], r.at, r.model_extra) for r in records if r.kind == "tune_step"]
    if not steps:
        return {"steps": 0}
    first, last = min(s for s, _, _ in steps), max(e for _, e, _ in steps)
    busy = sum(e - s for s, e, _ in steps)
    batch = [(s, e) for s, e, f in steps if f["what"] == "measure" and f.get("effort") == 1.0]
    out = {"steps": len(steps), "span_s": round(last - first, 1),
           "per_min": round(60 * len(steps) / (last - first), 2),
           "busy": round(busy / (workers * (last - first)), 3),  # share of worker-seconds spent timing
           "step_s_median": round(statistics.median(e - s for s, e, _ in steps), 2)}
    if len(batch) > 1:
        span = max(e for _, e in batch) - min(s for s, _ in batch)
        out.update(first_round=len(batch), first_round_per_min=round(60 * len(batch) / span, 2))
    out["best_by_minute"] = best_by_minute(records, steps)
    return out


def best_by_minute(records, steps) -> list[dict]:
    """By each minute of the run: the best the search had shown over its start (a chain of its paired
    comparisons that cleared the run's margin), times the baseline's speedup over the reference; and the
    run's confirmed best so far (promotions)."""
    start_at = records[0].at
    delta = next((r.model_extra["delta"] for r in records if r.kind == "noise"), 0.01)
    baseline = next((r.model_extra.get("speedup") for r in records if r.kind == "done"
                     and r.model_extra.get("role") == "baseline"), None) or 1.0
    found: list[tuple[float, float]] = []  # (when, estimated speedup over the start)
    estimate: dict[str, float] = {}
    for _, ended, step in sorted(steps, key=lambda s: s[1]):
        ratio = step.get("ratio")
        if step["what"] == "measure" or not ratio or ratio[1] <= 1 + delta:
            continue
        against = json.dumps(step["against"], sort_keys=True)
        value = estimate.get(against, 1.0) * ratio[0]
        estimate[json.dumps(step["config"], sort_keys=True)] = value
        found.append((ended - start_at, value))
    confirmed = [(r.at - start_at, r.model_extra["speedup"][0]) for r in records
                 if r.kind == "promotion" and r.model_extra.get("speedup")]
    end = records[-1].at - start_at
    rows = []
    for minute in range(1, int(end // 60) + 2):
        t = min(60.0 * minute, end)
        shown = max([v for at, v in found if at <= t], default=1.0)
        gained = [v for at, v in confirmed if at <= t]
        rows.append({"minute": round(t / 60, 2), "search_x_reference": round(baseline * shown, 3),
                     "confirmed_x_reference": round(baseline * gained[-1], 3) if gained else round(baseline, 3)})
    return rows


# --- 2. trust: every GPU busy at once against each alone -------------------------------------------------
def trust(args, workers: int) -> dict:
    from kernel_mcp.tools._request import settings_from
    from kernel_mcp.tools.profile import profile
    from kernel_mcp.worker.runners.pool import gpu_pool
    settings = settings_from(budget_s=args.timing)
    kernel = str(args.kernel or Path(args.problem) / "baseline.py")
    pool = gpu_pool(",".join(str(i) for i in range(workers)))

    def medians(gpu: int) -> list[list] | None:
        """Per shape: [its median, CI low, CI high (ms), its parameters as text]; None if it failed."""
        result = profile(str(args.problem), kernel, device=f"cuda:{gpu}", settings=settings, runner=pool)
        if not (result.passed and result.trusted):
            return None
        return [[s.candidate.median_ms, s.candidate.ci_low_ms, s.candidate.ci_high_ms,
                 ",".join(f"{k}={v}" for k, v in s.params.items() if k != "seed")] for s in result.shapes]
    try:
        for gpu in range(workers):
            medians(gpu)  # unmeasured: each worker's caches and CUPTI warm
        alone = {gpu: [medians(gpu) for _ in range(args.trust_rounds)] for gpu in range(workers)}
        load = _HostLoad(args.host_load) if args.host_load else None
        together: dict[int, list] = {gpu: [] for gpu in range(workers)}
        try:
            for _ in range(args.trust_rounds):
                threads = [threading.Thread(target=lambda g=g: together[g].append(medians(g))) for g in range(workers)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
        finally:
            host_checks = load.stop() if load else 0
    finally:
        pool.close()
    return {"kernel": kernel, "rounds": args.trust_rounds, "host_load_workers": args.host_load,
            "host_load_checks": host_checks, "gpus": _against_gpu0([_compare(g, alone[g], together[g]) for g in alone])}


def _against_gpu0(gpus: list[dict]) -> list[dict]:
    """Each GPU's alone median over GPU 0's, per shape: the spread between GPUs, which the halving's ranking
    (configurations timed on different GPUs) takes as noise; every move is a paired comparison on one GPU."""
    first = gpus[0].get("shapes") if gpus else None
    for gpu in gpus:
        for i, shape in enumerate(gpu.get("shapes", [])):
            shape["vs_gpu0"] = round(shape["alone_ms"] / first[i]["alone_ms"], 4) if first else None
    return gpus


def _compare(gpu: int, alone: list, together: list) -> dict:
    """Per shape: median over rounds of the alone and together medians, and whether together lies within
    the alone runs' interval (median of their CI ends)."""
    if any(r is None for r in alone + together):
        return {"gpu": gpu, "error": "a profile failed its check or was not trusted"}
    shapes = []
    for i in range(len(alone[0])):
        solo = statistics.median(r[i][0] for r in alone)
        low, high = statistics.median(r[i][1] for r in alone), statistics.median(r[i][2] for r in alone)
        busy = statistics.median(r[i][0] for r in together)
        shapes.append({"shape": alone[0][i][3], "alone_ms": round(solo, 5), "ci": [round(low, 5), round(high, 5)],
                       "together_ms": round(busy, 5), "ratio": round(busy / solo, 4), "within_ci": low <= busy <= high})
    return {"gpu": gpu, "shapes": shapes}


class _HostLoad:
    """CPU workers checking an interpreted Triton kernel in a loop: the host's cores kept busy."""

    def __init__(self, workers: int):
        from kernel_mcp.tools.check import check
        from kernel_mcp.worker.runners.pool import cpu_pool
        self.pool, self.done, self.checks, counting = cpu_pool(workers), threading.Event(), 0, threading.Lock()
        problem = ROOT / "problems" / "vector_add"

        def loop() -> None:
            while not self.done.is_set():
                check(str(problem), str(problem / "baseline.py"), device="cpu", runner=self.pool)
                with counting:
                    self.checks += 1
        self.threads = [threading.Thread(target=loop, daemon=True) for _ in range(workers)]
        for thread in self.threads:
            thread.start()
        time.sleep(10)  # the workers booted and checking before timing starts

    def stop(self) -> int:
        self.done.set()
        for thread in self.threads:
            thread.join(timeout=120)
        self.pool.close()
        return self.checks


# --- the report ------------------------------------------------------------------------------------------
def markdown(results: dict) -> str:
    header = ("| route | workers | evaluations | per min | x N=1 | first round per min | x N=1 | busy "
              "| best x ref (search, min by min) | confirmed best x ref |")
    lines = [header, "| --- " * 10 + "|"] if results["search"] else []
    for via, runs in results["search"].items():
        one = runs.get("1", {})
        for n, run in runs.items():
            if "per_min" not in run:
                lines.append(f"| {via} | {n} | {run.get('skipped') or run.get('error', '')[:80]} |")
                continue
            curve = ", ".join(f"{row['search_x_reference']:.3g}" for row in run["best_by_minute"])
            lines.append(f"| {via} | {n} | {run['steps']} in {run['span_s']} s | {run['per_min']} | "
                         f"{_x(run.get('per_min'), one.get('per_min'))} | {run.get('first_round_per_min', '-')} | "
                         f"{_x(run.get('first_round_per_min'), one.get('first_round_per_min'))} | {run['busy']} | "
                         f"{curve} | {run.get('best_x_reference')} |")
    if results.get("trust"):
        t = results["trust"]
        lines += ["", f"Trust: {t['rounds']} rounds, host load {t['host_load_workers']} CPU workers "
                      f"({t['host_load_checks']} checks)", "",
                  "| GPU | shape | alone ms [CI] | together ms | ratio | within CI | alone vs GPU 0 |", "| --- " * 7 + "|"]
        for gpu in t["gpus"]:
            if "error" in gpu:
                lines.append(f"| {gpu['gpu']} | {gpu['error']} |")
            for s in gpu.get("shapes", []):
                lines.append(f"| {gpu['gpu']} | {s['shape']} | {s['alone_ms']} [{s['ci'][0]}, {s['ci'][1]}] | "
                             f"{s['together_ms']} | {s['ratio']} | {s['within_ci']} | {s.get('vs_gpu0')} |")
    return "\n".join(lines)


def _x(value, base) -> str:
    return f"{value / base:.2f}" if value and base else "-"


def _listed(allowed=None):
    """An argparse type: comma-separated positive integers, or names from ``allowed`` (empty: none)."""
    def parse(text: str) -> list:
        items = [t.strip() for t in text.split(",") if t.strip()]
        wrong = [t for t in items if (t not in allowed if allowed else not (t.isdigit() and int(t) > 0))]
        if wrong:
            raise argparse.ArgumentTypeError(f"{wrong[0]!r}: give " + (" and/or ".join(allowed) if allowed
                                                                      else "GPU counts like 1,2,4"))
        return items if allowed else [int(t) for t in items]
    return parse


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--problem", type=Path, default=ROOT / "problems" / "matmul_bf16")
    parser.add_argument("--workers", type=_listed(), default="1,2,4,8", help="GPU counts, comma-separated")
    parser.add_argument("--via", type=_listed(("pool", "ray")), default="pool,ray",
                        help="pool, ray, both, or '' (the trust part only)")
    parser.add_argument("--budget", default="10m", help="each optimize run's budget")
    parser.add_argument("--timing", type=float, default=4.0, help="seconds of timing per evaluation")
    parser.add_argument("--timeout", type=float, default=1800, help="a run's wall-clock limit, seconds")
    parser.add_argument("--trust-rounds", type=int, default=3, help="0: no trust part")
    parser.add_argument("--host-load", type=int, default=0, help="CPU workers checking while every GPU times")
    parser.add_argument("--kernel", type=Path, help="what the trust part times (default: the baseline)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict = {"args": {k: str(v) for k, v in vars(args).items()}, "search": {}}
    for via in args.via:
        for n in args.workers:
            print(f"{via} x{n}: optimize ...", file=sys.stderr, flush=True)
            results["search"].setdefault(via, {})[str(n)] = run_search(via, n, args, args.out)
            (args.out / "results.json").write_text(json.dumps(results, indent=1))
    usable = [n for n in args.workers if n <= len(visible_gpus())]
    if args.trust_rounds and not usable:
        print(f"trust: skipped, {len(visible_gpus())} GPU(s) visible here", file=sys.stderr, flush=True)
    elif args.trust_rounds:
        print(f"trust on {max(usable)} GPU(s) ...", file=sys.stderr, flush=True)
        results["trust"] = trust(args, max(usable))
        (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(markdown(results))


if __name__ == "__main__":
    main()
