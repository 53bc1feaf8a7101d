"""Candidates judged per hour: ``kernel-mcp judge`` on a set against a loop of one-shot ``kernel-mcp check``
calls on the same set, side by side in one run, and whether every verdict agrees (issue 38).

    python bench/batch_bench.py OUT_DIR PROBLEMS CANDIDATES... [--jobs 12] [--loop-jobs 12] [--limit N] [--builds B]
                                [--device cuda] [--gpus all] [--budget-s 500] [--sides batch,loop]
                                [--skip EARLIER.jsonl ...]

PROBLEMS and CANDIDATES as ``kernel-mcp judge`` takes them (a KernelBench root and a manifest, or one problem
and its candidates). ``--limit``: the first N candidates in a fixed pseudo-random order (a hash of the id), so
a cut-short run is still a fair sample of levels and sources. Both sides judge the same candidates with the
same concurrency; each side gets ``--budget-s`` and its rate counts the candidates it finished in that time.
Check only (no timing): the point is the judging, which a batch does the same way for every candidate.
``--skip``: leave out candidates an earlier run judged (rows with an ``id`` and a ``passed`` that is not null:
a batch's ``results.jsonl``, ``bench/data/generations_judged.jsonl``), so a run's verdicts add new ones.
``--sides``: which to run, in that order: ``batch`` (``kernel-mcp judge``, a problem's candidates sharing their
secret inputs and float64 truth), ``unshared`` (``judge --no-share``), ``loop`` (one-shot checks).
``--gpus`` (a host of several GPUs: "all" or "0,1,3"): the batch judges on a worker per GPU (``judge --gpus``), and
each of the loop's one-shot checks goes to the GPU running the fewest (shown only that one, as a pool's worker is).

Writes OUT_DIR/summary.json (rates, seconds, the verdicts that differ) and prints it; each side's rows go to
OUT_DIR/<side>/results.jsonl as they end. ``per_hour`` is what finished in the budget; ``steady_per_hour`` the
rate with every slot busy (``steady_rate``), the figure a batch of hours approaches; ``cpu_busy`` the share of
the machine's CPU time in use while the side ran (near 1: the builds bound the rate, not the GPU), ``cpu_s`` the
CPU seconds its processes used by kind (cpu_use.py: the compilers of load_inline builds, Python) and ``runs``,
the compiler processes seen (``cicc``: one per CUDA build). A verdict
that differs between the two is listed by id with both verdicts: a fresh-seed flake of a borderline candidate reads the
same in a second run of ``check`` alone; anything else is a bug in the batch.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernel_mcp.batch.ledger import read_rows  # noqa: E402
from kernelbench_bench import read_rows as read_jsonl  # noqa: E402
from kernel_mcp.batch.sources import Item, find_items  # noqa: E402
from cpu_use import CpuUse  # noqa: E402
from kernel_mcp.errors import UsageError  # noqa: E402
from kernel_mcp.worker.runners.pool import parse_gpus, pin_for, visible_gpus  # noqa: E402

CLI = [sys.executable, "-m", "kernel_mcp"]


def side_env(out: Path, side: str) -> dict[str, str]:
    """Each side builds into a kernel store of its own: a side run after another would otherwise load the
    builds the first one kept (the store is keyed by the candidate's bytes), and a load_inline build is most
    of a candidate's time."""
    return {**os.environ, "KERNEL_MCP_CACHE": str(out / f"cache-{side}")}


def sample(items: list[Item], limit: int | None) -> list[Item]:
    ordered = sorted(items, key=lambda i: hashlib.sha1(i.id.encode()).hexdigest())
    return ordered[:limit] if limit else ordered


def write_manifest(items: list[Item], path: Path) -> Path:
    """The sample as a manifest of absolute paths (``problem`` as a file or folder, no level: as given)."""
    path.write_text("".join(json.dumps({"id": i.id, "problem": str(i.problem), "candidate": str(i.candidate)}) + "\n"
                            for i in items))
    return path


@dataclass
class Side:
    verdicts: dict[str, str]  # id -> verdict, of the candidates finished within the budget
    seconds: float  # the side's wall time
    durations: list[float]  # seconds of each finished candidate, start to verdict
    arrivals: list[int] | None = None  # seconds from the side's start at which each row was written (a batch)


def run_loop(items: list[Item], out: Path, device: str, jobs: int, budget_s: float,
             pins: list[dict[str, str]] | None = None) -> Side:
    """One-shot ``kernel-mcp check`` per candidate, ``jobs`` at a time, stopped at ``budget_s`` as the batch is (a
    check still running then is killed and not counted); with ``pins`` (``gpu_pins``), each goes to the GPU running
    the fewest.
    Each verdict is appended to OUT/loop/results.jsonl as it ends (rows ``--skip`` reads)."""
    verdicts: dict[str, str] = {}
    durations: list[float] = []
    lock, began = threading.Lock(), time.monotonic()
    rows = out / "loop" / "results.jsonl"
    rows.parent.mkdir(parents=True, exist_ok=True)
    gpu = GpuTurns(pins or [])

    def one(item: Item) -> None:
        left = budget_s - (time.monotonic() - began)
        if left <= 0:
            return
        started = time.monotonic()
        try:
            with gpu.least_busy() as pin:
                done = subprocess.run([*CLI, "check", str(item.problem), str(item.candidate), "--device", device,
                                       "--json"], cwd=REPO, env={**side_env(out, "loop"), **pin}, capture_output=True,
                                      text=True, timeout=left)
        except subprocess.TimeoutExpired:
            return
        try:
            answer = json.loads(done.stdout)
            verdict, passed = answer["verdict"], answer["passed"]
        except (ValueError, KeyError):
            verdict = "error: usage" if done.returncode == 2 else f"no result (rc {done.returncode})"
            passed = None
        seconds = round(time.monotonic() - started, 2)
        with lock:
            verdicts[item.id] = verdict
            durations.append(seconds)
            with rows.open("a") as f:
                f.write(json.dumps({"id": item.id, "verdict": verdict, "passed": passed, "seconds": seconds}) + "\n")

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, items))
    return Side(verdicts, time.monotonic() - began, durations)


def gpu_pins(gpus: str | None) -> list[dict[str, str]]:
    """The variable that shows a one-shot check only its GPU, for each GPU of ``gpus`` (none: as it finds them).
    Raises UsageError for GPUs this machine lacks."""
    if not gpus:
        return []
    count, vendor = visible_gpus()
    return [pin_for(index, vendor) for index in parse_gpus(gpus, count)]


class GpuTurns:
    """The loop's one-shot checks spread over a host's GPUs as the batch's pool spreads its checks: each to the GPU
    running the fewest (no pins: every check as it finds the devices)."""

    def __init__(self, pins: list[dict[str, str]]):
        self.pins, self.running, self.lock = pins, [0] * len(pins), threading.Lock()

    @contextmanager
    def least_busy(self) -> Iterator[dict[str, str]]:
        if not self.pins:
            yield {}
            return
        with self.lock:
            index = self.running.index(min(self.running))
            self.running[index] += 1
        try:
            yield self.pins[index]
        finally:
            with self.lock:
                self.running[index] -= 1


def run_batch(items: list[Item], out: Path, device: str, jobs: int, budget_s: float,
              side: str = "batch", builds: int | None = None, gpus: str | None = None) -> Side:
    """``kernel-mcp judge`` on the sample (``side`` unshared: ``--no-share``), stopped at ``budget_s`` (its rows so
    far count)."""
    manifest = write_manifest(items, out / "sample.jsonl")
    began = time.monotonic()
    results, arrivals = out / side / "results.jsonl", []
    with subprocess.Popen([*CLI, "judge", str(out), str(manifest), "--out", str(out / side), "--jobs", str(jobs),
                           "--no-time", "--device", device, "--json", "--share" if side == "batch" else "--no-share",
                           *(["--builds", str(builds)] if builds is not None else []),
                           *(["--gpus", gpus] if gpus else [])],
                          cwd=REPO, env=side_env(out, side), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          start_new_session=True) as run:
        while run.poll() is None and time.monotonic() - began < budget_s:
            time.sleep(1.0)  # when each row arrives, to the second: the rate once the start-up is over
            count = len(results.read_text().splitlines()) if results.exists() else 0
            arrivals += [round(time.monotonic() - began)] * (count - len(arrivals))
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGTERM)  # its judges and step hosts end with it (tests/test_caller_death.py)
            try:
                run.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(run.pid, signal.SIGKILL)
    seconds = min(time.monotonic() - began, budget_s)
    rows = read_rows(results)
    (out / side / "arrivals.json").write_text(json.dumps(arrivals[:len(rows)]))
    # a slot's time per candidate: its check and the wait for its build ahead (none without builds ahead)
    return Side({row.id: row.verdict for row in rows}, seconds,
                [row.seconds + row.phases.get("waited_s", 0.0) for row in rows], arrivals[:len(rows)])


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of every CPU since boot, from /proc/stat (idle and iowait count as not busy)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4], sum(fields)


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the machine's CPU time spent busy between two ``cpu_times`` readings: near 1 while a side
    runs, its rate is bound by the CPUs (the builds), not by the GPU."""
    total = after[1] - before[1]
    return round((after[0] - before[0]) / total, 3) if total else 0.0


def steady_rate(durations: list[float], jobs: int) -> int | None:
    """Candidates per hour once every slot is busy (Little's law: ``jobs`` at once over the mean seconds one
    takes). ``per_hour`` counts what finished in the budget, start-up included: in a budget of one or two
    candidates' time, most of the first wave is still running when it ends."""
    return round(3600 * jobs / statistics.fmean(durations)) if durations else None


def rate_after(arrivals: list[int], seconds: float) -> dict | None:
    """Rows an hour from the first verdict to the end of the window: the rate once the start-up (the headers, the
    first builds ahead) is over, the one a batch of hours approaches; and the rows written by each minute."""
    if len(arrivals) < 2 or seconds - arrivals[0] <= 0:
        return None
    return {"first_row_at_s": arrivals[0], "per_hour": round(3600 * (len(arrivals) - 1) / (seconds - arrivals[0])),
            "rows_by_minute": [sum(a <= m * 60 for a in arrivals) for m in range(1, int(seconds // 60) + 1)]}


def phase_medians(rows) -> dict[str, float | None]:
    """Median seconds of a batch row's phases: up to the candidate's import (judge, lease, reference), the
    import (with any build), the cases (and the verdict); of the builds ahead, and of a slot's wait for one."""
    def median(values: list[float]) -> float | None:
        return round(statistics.median(values), 2) if values else None
    timed = [r for r in rows if "cases_at" in r.phases]
    return {"before_import": median([r.phases["import_at"] for r in timed]),
            "import": median([r.phases["cases_at"] - r.phases["import_at"] for r in timed]),
            "cases": median([r.seconds - r.phases["cases_at"] for r in timed]),
            "whole": median([r.seconds for r in rows]),
            "prebuild": median([r.phases["prebuild_s"] for r in rows if r.phases.get("prebuild_s")]),
            "waited_for_build": median([r.phases["waited_s"] for r in rows if "waited_s" in r.phases]),
            # the device's memory admission: how many checks waited for it, and until when into their check
            "checks_that_waited_for_device": sum("admitted_at" in r.phases for r in rows),
            "measured_at": median([r.phases["measured_at"] for r in rows if "measured_at" in r.phases]),
            "admitted_at": median([r.phases["admitted_at"] for r in rows if "admitted_at" in r.phases]),
            "waited_for_measure": median([r.phases["measure_wait_s"] for r in rows if "measure_wait_s" in r.phases])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("problems", type=Path)
    parser.add_argument("candidates", type=Path, nargs="+")
    parser.add_argument("--jobs", type=int, default=12)
    parser.add_argument("--loop-jobs", type=int, default=None, help="default: --jobs")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--budget-s", type=float, default=500.0, help="seconds for each side")
    parser.add_argument("--builds", type=int, default=None, help="judge's --builds (default: its own)")
    parser.add_argument("--gpus", default=None, help="a host's GPUs to judge on: all | 0,1,3 (default: one)")
    parser.add_argument("--sides", default="batch,loop", help="of batch, unshared, loop; run in this order")
    parser.add_argument("--skip", type=Path, nargs="*", default=[], help="JSONL rows of candidates judged before")
    args = parser.parse_args()
    sides_asked = args.sides.split(",")
    if not sides_asked or set(sides_asked) - {"batch", "unshared", "loop"}:
        parser.error("--sides: a comma list of batch, unshared, loop")
    try:
        pins = gpu_pins(args.gpus)  # a GPU this machine lacks is a usage error now, not a side that judges nothing
    except UsageError as exc:
        parser.error(str(exc))
    out = args.out_dir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    judged = {r["id"] for r in read_jsonl(args.skip, key=lambda r: r["id"]) if r.get("passed") is not None}
    items = sample([i for i in find_items(args.problems, args.candidates) if i.id not in judged], args.limit)
    sides = {}
    busy, cpu_s = {}, {}
    for side in sides_asked:
        before = cpu_times()
        with CpuUse() as use:
            if side == "loop":
                sides[side] = run_loop(items, out, args.device, args.loop_jobs or args.jobs, args.budget_s, pins)
            else:
                sides[side] = run_batch(items, out, args.device, args.jobs, args.budget_s, side, args.builds, args.gpus)
        busy[side], cpu_s[side] = busy_share(before, cpu_times()), {**use.seconds(), "runs": use.compiler_runs()}
        done = sides[side]
        print(f"{side}: {len(done.verdicts)} judged in {done.seconds:.0f} s: "
              f"{3600 * len(done.verdicts) / done.seconds:.0f} per hour", flush=True)
    summary = {"candidates": len(items), "device": args.device, "gpus": args.gpus, "jobs": args.jobs,
               "sides": sides_asked}
    for side, done in sides.items():
        jobs = args.loop_jobs or args.jobs if side == "loop" else args.jobs
        summary[side] = {"judged": len(done.verdicts), "seconds": round(done.seconds, 1),
                         "per_hour": round(3600 * len(done.verdicts) / done.seconds),
                         "steady_per_hour": steady_rate(done.durations, jobs), "cpu_busy": busy[side],
                         "cpu_s": cpu_s[side]}
        if side != "loop":
            summary[side]["phases_median_s"] = phase_medians(read_rows(out / side / "results.jsonl"))
            summary[side]["after_start_up"] = rate_after(done.arrivals or [], done.seconds)
    first, *others = sides_asked
    summary["verdicts_differ"] = {
        other: {i: {first: sides[first].verdicts[i], other: sides[other].verdicts[i]}
                for i in sorted(set(sides[first].verdicts) & set(sides[other].verdicts))
                if sides[first].verdicts[i] != sides[other].verdicts[i]}
        for other in others}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
