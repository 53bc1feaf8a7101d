"""The unattended search on a GPU (issue 14): ``kernel-mcp optimize --agent tune`` on bundled problems, the
share of the device's measured roof reached as the run went, and the result against torch eager and
torch.compile, all timed in the same run by the same instrument.

    python3 bench/optimize_bench.py OUT --problems matmul_bf16 softmax rmsnorm --budget 8m --timing 4

1. ``kernel-mcp calibrate`` once (unless ``--no-calibrate``): the roofline's ceilings become this device's
   measured ones (bandwidth: best of three read/write mixes; matmul: cuBLAS at 8192^3).
2. Per problem, the real CLI: ``kernel-mcp optimize PROBLEM --agent tune --budget B --timing T --json``;
   its wall time; the run folder under OUT/PROBLEM/run.
3. The run's journal: each promotion's seconds since the run began, its speedup over the reference and
   its best % of the roof (what the loop itself recorded when it evaluated that kernel).
4. Unless ``--no-roofline``: ``roofline`` (check, then timing, then placement under the measured roofs)
   of four contestants, one after the other: the bundled baseline, the run's best, torch eager (the
   problem's own ``ref_kernel``) and ``torch.compile(ref_kernel)`` (default mode; its first call compiles,
   inside the candidate host).
   Per shape: each contestant's median time, % of the binding roof, and speed relative to the reference.

Writes OUT/results.json (everything) and prints a Markdown summary. A contestant that fails its check is
reported as failing, never timed.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kernel_mcp.agent.report.summary import summarize  # noqa: E402
from kernel_mcp.agent.run.journal import read  # noqa: E402
from kernel_mcp.agent.run.state import derive  # noqa: E402
from kernel_mcp.results import ProfileSettings  # noqa: E402


def cli(args: list[str], log: Path, timeout: float, env: dict[str, str] | None = None) -> tuple[int, float, str]:
    """Run ``kernel-mcp ARGS`` (in ``env``, default this process's); (exit code, wall seconds, stdout). Its
    stderr (progress) goes to ``log``."""
    began = time.monotonic()
    with open(log, "w") as err:
        done = subprocess.run([sys.executable, "-m", "kernel_mcp", *args], stdout=subprocess.PIPE, stderr=err,
                              text=True, timeout=timeout, cwd=ROOT, env=env)
    return done.returncode, time.monotonic() - began, done.stdout


def timeline(run: Path) -> list[dict]:
    """Each promotion of the run: seconds since its first record, how, speedup and % of roof."""
    records = read(run / "journal.jsonl")
    state = derive(records)
    start = records[0].at if records else 0.0
    points = []
    for record in records:
        if record.kind != "promotion":
            continue
        done = state.evaluated.get(record.candidate_hash)
        points.append({"t_s": round(record.at - start, 1), "how": record.how,
                       "speedup": done.speedup if done else None, "speedup_ci": done.speedup_ci if done else None,
                       "roofline_percent": done.roofline_percent if done else None})
    return points


def tuner_work(run: Path) -> dict:
    """How many measurements and comparisons the tuner made, and over how many seconds (its memo's files)."""
    files = sorted((run / "cache").glob("tune-*.json"), key=lambda f: f.stat().st_mtime)
    if not files:
        return {"measurements": 0, "comparisons": 0}
    return {"measurements": sum("-measure-" in f.name for f in files),
            "comparisons": sum("-measure-" not in f.name for f in files),
            "first_to_last_s": round(files[-1].stat().st_mtime - files[0].stat().st_mtime, 1)}


def contestants(problem: Path, best: str | None, folder: Path) -> dict[str, Path]:
    """The four files to time: baseline, the run's best, eager reference, torch.compile of it."""
    reference = (problem / "reference.py").read_text()
    eager, compiled = folder / "torch_eager.py", folder / "torch_compile.py"
    eager.write_text(reference + "\n\ncustom_kernel = ref_kernel  # the reference itself, eager\n")
    compiled.write_text(reference + "\n\ncustom_kernel = torch.compile(ref_kernel)  # default mode\n")
    found = {"baseline": problem / "baseline.py", "torch eager": eager, "torch.compile": compiled}
    if best:
        found["best of the run"] = Path(best)
    return found


def placed(problem: Path, file: Path, device: str, budget_s: float) -> dict:
    """One contestant through ``roofline``: per shape its median, % of the binding roof, and speedup."""
    from kernel_mcp.errors import UsageError
    from kernel_mcp.tools.roofline import roofline
    try:
        result = roofline(problem, file, device=device, settings=ProfileSettings(budget_s=budget_s))
    except UsageError as exc:  # e.g. no roofline on a CPU
        return {"verdict": "not placed", "message": str(exc), "shapes": []}
    prof = result.profile
    shapes = []
    for shape, timed in zip(result.shapes, prof.shapes):
        mine = next((p for p in shape.points if p.who == "candidate"), None)
        ref = next((p for p in shape.points if p.who == "reference"), None)
        shapes.append({"params": {k: v for k, v in shape.params.items() if k != "seed"},
                       "median_ms": mine.time_ms if mine else None,
                       "percent_of_roof": mine.percent_of_bound if mine else None,
                       "reference_percent_of_roof": ref.percent_of_bound if ref else None,
                       "speedup": timed.speedup, "speedup_ci": timed.speedup_ci})
    return {"verdict": prof.verdict, "passed": prof.passed, "trusted": prof.trusted, "speedup": prof.speedup,
            "ceilings": result.ceilings_source, "message": result.message, "shapes": shapes}


def one_problem(name: str, args: argparse.Namespace) -> dict:
    problem = ROOT / "problems" / name
    folder = args.out / name
    folder.mkdir(parents=True, exist_ok=True)
    run = folder / "run"
    code, wall, out = cli(["optimize", str(problem), "--agent", "tune", "--budget", args.budget, "--timing",
                           str(args.timing), "--device", args.device, "--run", str(run), "--json"],
                          folder / "optimize.log", args.timeout)
    row: dict = {"problem": name, "exit": code, "wall_s": round(wall, 1)}
    if not (run / "journal.jsonl").exists():
        return {**row, "error": out[-2000:]}
    summary = summarize(run)
    row.update(summary=summary.model_dump(), timeline=timeline(run), tuner=tuner_work(run))
    best = summary.best.file if summary.best else None
    if not args.no_roofline:
        row["contestants"] = {who: placed(problem, file, args.device, args.roofline_budget)
                              for who, file in contestants(problem, best, folder).items()}
    return row


def markdown(rows: list[dict]) -> str:
    lines = []
    for row in rows:
        s = row.get("summary") or {}
        lines.append(f"\n#### {row['problem']}: optimize exit {row['exit']}, {row['wall_s']} s wall, "
                     f"{s.get('evaluations')} evaluations, gain over baseline {s.get('gain_over_baseline')}, "
                     f"tuner: {row.get('tuner')}")
        for point in row.get("timeline", []):
            lines.append(f"- {point['t_s']:>6} s {point['how']}: {point['speedup']} x reference, "
                         f"{point['roofline_percent']} % of roof")
        lines.append("\n| contestant | verdict | shape | median ms | % of roof | speedup over reference |")
        lines.append("|---|---|---|---|---|---|")
        for who, c in row.get("contestants", {}).items():
            for shape in c["shapes"] or [{"params": "-", "median_ms": None, "percent_of_roof": None, "speedup": None}]:
                lines.append(f"| {who} | {c['verdict']} | {shape['params']} | {_num(shape['median_ms'], '.4g')} | "
                             f"{_num(shape['percent_of_roof'], '.1f')} | {_num(shape['speedup'], '.3f')} |")
    return "\n".join(lines)


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--problems", nargs="+", default=["matmul_bf16", "softmax", "rmsnorm"])
    parser.add_argument("--budget", default="8m", help="optimize's --budget per problem")
    parser.add_argument("--timing", type=float, default=4.0, help="optimize's --timing (s per evaluation)")
    parser.add_argument("--roofline-budget", type=float, default=5.0, help="timing budget of each contestant, s")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds before an optimize run is cut")
    parser.add_argument("--no-calibrate", action="store_true")
    parser.add_argument("--no-roofline", action="store_true",
                        help="skip step 4 (a device call too short for both a long run and the placements)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    if not args.no_calibrate:
        code, wall, out = cli(["calibrate", "--json"], args.out / "calibrate.log", 900)
        rows.append({"calibrate": {"exit": code, "wall_s": round(wall, 1), "result": out[-4000:]}})
        print(f"calibrate: exit {code}, {wall:.0f} s", flush=True)
    for name in args.problems:
        rows.append(one_problem(name, args))
        (args.out / "results.json").write_text(json.dumps(rows, indent=1, default=str))
        print(markdown(rows[-1:]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
