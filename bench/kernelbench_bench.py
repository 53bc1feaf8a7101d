"""KernelBench at its published sizes (issue 13): every problem's own ``Model`` checked as the candidate
(``ModelNew = Model``), which must pass, or (``--candidate zeros``) a ModelNew returning zeros, which must
fail unless the problem is reported degenerate; verdicts, time and device memory per problem.

    python bench/kernelbench_bench.py OUT_DIR [--root DIR] [--levels 1 2 3] [--only SUBSTRING ...]
                                      [--candidate own|zeros] [--jobs 4] [--fresh-seeds 1] [--budget-s 540]
                                      [--skip EARLIER.jsonl ...] [--profile [--profile-budget-s 20]]
    python bench/kernelbench_bench.py OUT_DIR --summarize A.jsonl B.jsonl ...

DIR is KernelBench's ``KernelBench`` folder (level1/, level2/, level3/; default: the team's copy in
../shared/benchmarks). Checks run ``jobs`` at a time, side by side on one GPU as agents would run them
(admitted by the device-memory lease); no new check starts after ``budget-s`` (those are listed as not
run). Writes OUT_DIR/kernelbench_<candidate>.jsonl (one row per problem, appended as each ends) and prints a summary:
passes per level, the verdict mix, and the judge's peak device memory against the reference's own.
``--profile`` runs ``profile`` instead of ``check`` (the check, then the candidate timed against the
reference with every timed output validated): its device memory, and, with the own-model candidate, a
speedup that must come out near 1.0 (the reference timed against itself). ``--skip`` leaves out the problems an earlier run (split over several device calls) already judged;
``--summarize`` renders the summary of the rows of several runs, the last row per problem winning.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = REPO.parent / "shared" / "benchmarks" / "kernelbench" / "KernelBench"
GiB = float(1 << 30)


def problems(root: Path, levels: list[int], only: list[str]) -> list[tuple[int, Path]]:
    return [(level, path) for level in levels for path in sorted((root / f"level{level}").glob("*.py"),
                                                                 key=lambda p: int(p.name.split("_")[0]))
            if any(part in path.name for part in only)]


CANDIDATES = {  # appended to the problem's own source
    "own": "\n\nModelNew = Model\n",  # must pass
    "zeros": ("\n\nclass ModelNew(Model):\n    def forward(self, *args):\n"  # must fail, or the problem is degenerate
              "        return torch.zeros_like(super().forward(*args))\n"),
}


def candidate_file(problem: Path, folder: Path, kind: str) -> Path:
    candidate = folder / f"{kind}_{problem.name}"
    candidate.write_text(problem.read_text() + CANDIDATES[kind])
    return candidate


def row_of(level: int, problem: Path, result) -> dict:
    """A problem's row (run_jobs adds the seconds it took)."""
    check = getattr(result, "check", None)  # a ProfileResult holds its check, and the judge's memory there
    memory = result.memory if check is None and hasattr(result, "memory") else (check.memory if check else None)
    failing = next((f for f in reversed(result.findings) if f.severity == "error" or f.code == "degenerate_problem"),
                   None)
    precision = next((f.message for f in result.findings if f.code == "precision"), "")
    return {"level": level, "problem": problem.name, "verdict": result.verdict, "passed": result.passed,
            "reference_peak": memory.reference_peak_bytes if memory else None,
            "judge_peak": memory.judge_peak_bytes if memory else None,
            "check_need": memory.check_need_bytes if memory else None,
            "finding": f"{failing.code}: {failing.message[:400]}" if failing else "",
            "tf32": "TF32" in precision, "speedup": getattr(result, "speedup", None)}


def run_all(args) -> list[dict]:
    done = {(r["level"], r["problem"]) for r in read_rows(args.skip) if r.get("passed") is not None}
    todo = [(level, p) for level, p in problems(args.root, args.levels, args.only) if (level, p.name) not in done]
    out = args.out_dir / f"kernelbench_{args.candidate}{'_profile' if args.profile else ''}.jsonl"
    folder = Path(tempfile.mkdtemp(prefix="kb-candidates-"))

    def one(item: tuple[int, Path]) -> dict:
        level, problem = item
        from kernel_mcp.batch.judging import PhaseClock
        clock = PhaseClock()  # where its seconds went: waiting for the device, the reference, the cases
        result = run_one(args, problem, candidate_file(problem, folder, args.candidate), clock)
        return {"candidate": args.candidate, **row_of(level, problem, result), "phases": clock.marks}

    return run_jobs([({"level": level, "problem": p.name}, (level, p)) for level, p in todo], one, out, args.jobs,
                    args.budget_s)


def run_jobs(todo: list[tuple[dict, object]], judge, out: Path, jobs: int, budget_s: float) -> list[dict]:
    """``judge(item)`` for each (key, item) of ``todo``, ``jobs`` at a time; a row per item, keyed by ``key``,
    appended to ``out`` as each ends and printed with a count; no new item starts after ``budget_s``."""
    lock, rows, started = threading.Lock(), [], time.monotonic()

    def one(entry: tuple[dict, object]) -> None:
        key, item = entry
        if time.monotonic() - started > budget_s:
            row = {**key, "verdict": "not run (budget)", "passed": None}
        else:
            begun = time.monotonic()
            try:
                row = {**key, **judge(item)}
            except Exception as exc:  # noqa: BLE001  (a usage error is a row too)
                row = {**key, "verdict": f"raised {type(exc).__name__}", "passed": False, "finding": str(exc)[:400]}
            row["seconds"] = round(time.monotonic() - begun, 2)
        with lock:
            rows.append(row)
            with open(out, "a") as handle:
                handle.write(json.dumps(row) + "\n")
            name = " ".join(str(v) for v in key.values())
            print(f"[{len(rows)}/{len(todo)}] {name}: {row['verdict']} ({row.get('seconds', 0)} s) "
                  f"{row.get('finding', '')[:160]}", flush=True)

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, todo))
    return rows


def run_one(args, problem: Path, candidate: Path, clock=None):
    if args.profile:
        from kernel_mcp.results import ProfileSettings
        from kernel_mcp.tools.profile import profile
        return profile(problem, candidate, device=args.device, settings=ProfileSettings(budget_s=args.profile_budget_s))
    from kernel_mcp.tools.check import check
    return check(problem, candidate, device=args.device, fresh_seeds=args.fresh_seeds, on_progress=clock)


def read_rows(files: list[Path], key=lambda row: (row["level"], row["problem"])) -> list[dict]:
    """Rows of earlier runs, the last per ``key`` (a problem, by default) kept."""
    rows = {}
    for file in files:
        for row in map(json.loads, file.read_text().splitlines()):
            rows[key(row)] = row
    return list(rows.values())


def summary(rows: list[dict]) -> str:
    lines = ["| level | problems | passed | not run | verdicts (other than pass) |", "|---|---|---|---|---|"]
    for level in sorted({r["level"] for r in rows}):
        mine = [r for r in rows if r["level"] == level]
        ran = [r for r in mine if r["passed"] is not None]
        mix = Counter(r["verdict"] for r in ran if not r["passed"])
        lines.append(f"| {level} | {len(mine)} | {sum(bool(r['passed']) for r in ran)} | {len(mine) - len(ran)} | "
                     + ", ".join(f"{v} x{n}" for v, n in mix.most_common()) + " |")
    big = [r for r in rows if r.get("reference_peak") and r.get("judge_peak") and r["reference_peak"] >= GiB]
    if big:
        ratios = sorted(r["judge_peak"] / r["reference_peak"] for r in big)
        worst = max(big, key=lambda r: r["judge_peak"] / r["reference_peak"])
        lines += ["", f"judge peak / reference's own peak, {len(big)} problems whose reference peaks at >= 1 GiB: "
                  f"median {statistics.median(ratios):.2f}, max {ratios[-1]:.2f} ({worst['problem']}: judge "
                  f"{worst['judge_peak'] / GiB:.1f} GiB, reference {worst['reference_peak'] / GiB:.1f} GiB)"]
    timed = [r["seconds"] for r in rows if r.get("seconds")]
    if timed:
        lines.append(f"seconds per check: median {statistics.median(timed):.1f}, max {max(timed):.1f}")
        waited = [r["phases"]["admitted_at"] for r in rows if r.get("seconds") and "admitted_at" in r.get("phases", {})]
        lines.append(f"checks that waited for the device: {len(waited)} of {len(timed)}"
                     + (f", median wait {statistics.median(waited):.1f} s (up to the first step after it)"
                        if waited else ""))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--only", nargs="+", default=[""], help="substrings of problem file names")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--fresh-seeds", type=int, default=1)
    parser.add_argument("--budget-s", type=float, default=540.0)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--candidate", choices=sorted(CANDIDATES), default="own")
    parser.add_argument("--skip", type=Path, nargs="*", default=[])
    parser.add_argument("--summarize", type=Path, nargs="*", default=None)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--profile-budget-s", type=float, default=20.0)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.summarize is not None:
        print(summary(read_rows(args.summarize)))
        return
    started = time.monotonic()
    rows = run_all(args)
    ran = sum(r["passed"] is not None for r in rows)
    text = summary(rows) + f"\n{ran} checks in {time.monotonic() - started:.0f} s, {args.jobs} jobs"
    (args.out_dir / f"kernelbench_{args.candidate}{'_profile' if args.profile else ''}_summary.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
