"""What bounds a batch's rate: its checks' device memory x time against a GPU's memory, and its CPU seconds against
a host's cores (issue 38). Reads what ``tools/gpu_owed.sh batch`` brings back from a run and says how many
candidates an hour each resource allows, for the GPU it ran on and for others.

    python bench/batch_bounds.py FOLDER --problems KB_ROOT [--memory-gib 79.6 139.8] [--cores 16 112] [--json]

FOLDER holds ``results-batch.jsonl`` (the batch's rows), ``memory.json`` (the peaks its checks recorded,
worker/needs.py) and ``summary.json`` (batch_bench's: CPU seconds by kind and the compiler runs). ``--problems``:
the KernelBench root as the GPU machine named it (a problem's memory record is keyed by its path's digest,
needs.problem_key; the device's copy of the repository sits at the same path as this checkout's).

- **Memory.** Each judged check held its problem's reservation (the recorded peak x ``NEED_MARGIN``, what a later
  check of it reserves) from the moment its judge knew its need (``admitted_at`` after a wait, else
  ``measured_at``) to its verdict. Admitted checks may together reserve ``MEMORY_BUDGET`` of a GPU, so
  ``budget x 3600 / (mean GiB-seconds a check)`` checks an hour is about the most that memory allows, however the
  lease orders them. An estimate from the finished checks, on the optimistic side: checks still running at the
  window's end (often the long, large ones) are not in the rows; a check of a problem measured before holds its
  reservation from its admission, a few seconds before its judge's mark; a first reservation (a share of the device
  until the judge measured) and a check run alone (the whole device) are not modelled; the recorded peak is the
  largest seen. ``without timeouts`` leaves out checks that ran into their call's time limit: one such check held a
  large problem's memory for minutes (23_Softmax, an H100, thirty-sixth session), and whether a sample holds one
  is luck.
- **CPU.** ``compilers / nvcc runs`` CPU-seconds a CUDA build (its C++ file and the C++-only builds counted in:
  high), ``python / judged`` a candidate's judging (judges booted for checks not finished counted in: high), and
  the share of the judged candidates whose source builds CUDA (``cuda_sources``). ``cores x 3600 / (share x build
  + judging)`` an hour is the most the CPU allows with every core busy and nothing else running, on the build path
  measured (more cores are assumed to scale it linearly, which no run has measured).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernel_mcp.worker.lease import MEMORY_BUDGET  # noqa: E402
from kernelbench_bench import read_rows as read_jsonl  # noqa: E402
from kernel_mcp.worker.needs import NEED_MARGIN, problem_key  # noqa: E402

GIB = 1 << 30
TIMEOUT = "timeout"  # the cause of a check whose call ran past its time limit


def reservations(memory: dict[str, int], rows: list[dict], kb_root: Path) -> dict[str, float]:
    """GiB a later check of each row's problem reserves, by problem name (a problem no record names is left out).
    The records of one GPU model: a run's cache holds only the model it ran on (a file of several is refused)."""
    models = {key.rsplit(":", 1)[0] for key in memory}
    if len(models) > 1:
        raise SystemExit(f"memory.json holds the records of {len(models)} GPU models ({', '.join(sorted(models))}): "
                         "give the one run's file")
    by_key = {key.rsplit(":", 1)[-1]: peak for key, peak in memory.items() if isinstance(peak, int)}
    found = {}
    for name in {row["problem"] for row in rows}:
        for path in sorted(kb_root.glob(f"level*/{name}")) or [kb_root / name]:
            peak = by_key.get(problem_key(SimpleNamespace(path=path)))
            if peak is not None:
                found[name] = peak * NEED_MARGIN / GIB
                break
    return found


def held_gib_s(row: dict, reserved_gib: float) -> float:
    """GiB-seconds the check of ``row`` held: its reservation from when its judge knew its need to its verdict."""
    phases = row.get("phases", {})
    since = phases.get("admitted_at", phases.get("measured_at", 0.0))
    return reserved_gib * max(0.0, row["seconds"] - since)


def memory_bound(held: list[float], memory_gib: float) -> int | None:
    """Checks an hour the device's memory allows at a mean of ``held`` GiB-seconds a check."""
    mean = statistics.fmean(held) if held else 0.0
    return round(MEMORY_BUDGET * memory_gib * 3600 / mean) if mean else None


def builds_cuda(row: dict) -> bool | None:
    """Does the candidate of ``row`` build a CUDA extension (None: its source is not on this machine)?"""
    try:
        return "cuda_sources" in Path(row["candidate"]).read_text(errors="replace")
    except OSError:
        return None


def cpu_costs(summary: dict, rows: list[dict]) -> dict[str, float] | None:
    """CPU-seconds a CUDA build and a candidate's judging, and the share of candidates that build CUDA."""
    cpu = summary.get("batch", {}).get("cpu_s", {})
    nvcc, judged = cpu.get("runs", {}).get("nvcc", 0), len(rows)
    known = [b for b in map(builds_cuda, rows) if b is not None]
    share = sum(known) / len(known) if known else None
    if not judged or share is None or (share and not nvcc):  # candidates built CUDA, but no build was seen
        return None
    return {"cuda_build_s": cpu["compilers"] / nvcc if nvcc else 0.0, "judging_s": cpu["python"] / judged,
            "cuda_share": share}


def cpu_bound(costs: dict[str, float], cores: int) -> int:
    return round(cores * 3600 / (costs["cuda_share"] * costs["cuda_build_s"] + costs["judging_s"]))


def bounds(folder: Path, kb_root: Path, memory_gibs: list[float], cores: list[int]) -> dict:
    rows = read_jsonl([folder / "results-batch.jsonl"], key=lambda row: row["id"])
    summary = json.loads((folder / "summary.json").read_text())
    reserved = reservations(json.loads((folder / "memory.json").read_text()), rows, kb_root)
    costs = cpu_costs(summary, rows)
    held = sorted(((held_gib_s(r, reserved[r["problem"]]), r["id"], r["problem"], r.get("cause") == TIMEOUT)
                   for r in rows if r["problem"] in reserved), reverse=True)
    every, untimed = [h[0] for h in held], [h[0] for h in held if not h[3]]
    return {"judged": len(rows), "per_hour": summary.get("batch", {}).get("per_hour"),
            "problems_without_record": sorted({r["problem"] for r in rows} - set(reserved)),
            "gib_s": round(sum(every)), "largest": [[round(h), i, p] for h, i, p, _ in held[:3]],
            "memory_per_hour": {str(g): memory_bound(every, g) for g in memory_gibs},
            "memory_per_hour_without_timeouts": {str(g): memory_bound(untimed, g) for g in memory_gibs},
            "cpu": None if costs is None else {k: round(v, 2) for k, v in costs.items()},
            "cpu_per_hour": None if costs is None else {str(c): cpu_bound(costs, c) for c in cores}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--problems", type=Path, required=True, help="the KernelBench root the batch judged")
    parser.add_argument("--memory-gib", type=float, nargs="+", default=[79.6, 139.8],
                        help="GPU memory sizes to bound for (GiB; an H100 80GB, an H200)")
    parser.add_argument("--cores", type=int, nargs="+", default=[16, 112], help="host core counts to bound for")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    missing = [name for name in ("results-batch.jsonl", "memory.json", "summary.json")
               if not (args.folder / name).is_file()]
    if missing:
        parser.error(f"{args.folder} lacks {', '.join(missing)} (what tools/gpu_owed.sh batch brings back)")
    found = bounds(args.folder, args.problems, args.memory_gib, args.cores)
    if args.json:
        print(json.dumps(found, indent=1))
        return 0
    print(f"{found['judged']} judged ({found['per_hour']} an hour); {found['gib_s']} GiB-s held; largest: "
          + "; ".join(f"{p} {h} GiB-s" for h, _, p in found["largest"]))
    for gib, rate in found["memory_per_hour"].items():
        print(f"memory, {gib} GiB GPU: {rate} an hour ({found['memory_per_hour_without_timeouts'][gib]} without "
              "checks that timed out)")
    for cores, rate in (found["cpu_per_hour"] or {}).items():
        print(f"CPU, {cores} cores: {rate} an hour ({found['cpu']})")
    if found["problems_without_record"]:
        print(f"no memory record (not counted): {', '.join(found['problems_without_record'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
