"""Judge a batch: every candidate through the same check (and, timed, the same profile) as the one-shot
commands, ``jobs`` at a time, each in its own fresh judge and candidate processes; a row appended to the
ledger as each ends; candidates the ledger already holds are not judged again.

Timing: a candidate that passes is profiled against the reference as written (eager) and, in the same
run, interleaved with torch.compile of the reference (batch/contestants.py), so both speedups come from
one instrument on one machine state.
"""
from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kernel_mcp.batch.contestants import compiled_reference
from kernel_mcp.batch.ledger import Judged, Ledger
from kernel_mcp.batch.prebuild import Prebuilds, builds_allowed, lease_device
from kernel_mcp.batch.sharing import BatchSharing, scheduled
from kernel_mcp.batch.sources import Item
from kernel_mcp.batch.survey import Survey, default_width
from kernel_mcp.errors import UsageError
from kernel_mcp.results import CheckResult, ProfileResult, ProfileSettings
from kernel_mcp.tools.check import check
from kernel_mcp.tools.profile import profile
from kernel_mcp.worker import Runner, build_headers, default_shapes, guess_kind, header_flag_sets
from kernel_mcp.worker.protocol import SharedReference


def judge_batch(items: list[Item], folder: Path, runner: Runner, device: str = "auto", jobs: int = 4,
                timed: bool = True, budget_s: float = 2.0, shapes: str | None = None,
                on_row: Callable[[Judged], None] | None = None, share: bool = True,
                builds: int | None = None) -> Ledger:
    """Judge every item the ledger in ``folder`` lacks; returns the ledger (every row, earlier ones too).
    ``shapes``: what timing runs on (default: the tests on a CPU, the benchmarks on a GPU); ``share``: the
    candidates of a problem get the same secret inputs and one float64 truth (batch/sharing.py); ``builds``:
    load_inline candidates built that many at a time ahead of their checks (batch/prebuild.py; default
    ``default_builds``; 0, or where ``builds_allowed`` says no: each builds inside its check). On a GPU each problem
    this machine never measured is measured first, beside the builds (batch/survey.py)."""
    ledger = Ledger(folder)
    todo = scheduled([item for item in items if not settled(ledger.rows.get(item.id))], jobs)
    settings = ProfileSettings(budget_s=budget_s, shapes=shapes or default_shapes(device))
    contestants = folder / "contestants"
    sharing = BatchSharing(folder, [item.problem for item in todo]) if share else None
    headers = precompile_headers(todo, device, folder / "headers.json")
    builds = builds_allowed(runner, default_builds() if builds is None else builds)
    resolved = lease_device(device) if guess_kind(device) == "cuda" else None
    # builds ahead start at once, beside the headers' own (one made before its entry keeps its flags: header_cache)
    prebuilds = Prebuilds(todo, runner, builds, ahead=builds + jobs, device=resolved if builds else None)
    survey = Survey([(item.problem, item.candidate) for item in todo], runner, device, resolved,
                    default_width(runner))

    def one(item: Item, built_s: float, waited_s: float) -> None:
        measure_s = survey.claim(item.problem)
        shared, lane = sharing.take(item.problem) if sharing else (None, None)
        try:
            row = judge_one(item, runner, device, settings if timed else None, contestants, shared)
        finally:
            if sharing:
                sharing.done(item.problem, lane)
        # where a slot's time went before the check: the build it waited for, how long it waited, and for its
        # problem's measure
        before = {"prebuild_s": built_s, "waited_s": waited_s} if builds else {}
        before.update({"measure_wait_s": measure_s} if measure_s else {})
        row = row.model_copy(update={"phases": {**row.phases, **before}})
        ledger.append(row)
        if on_row:
            on_row(row)

    def slot() -> None:  # one of ``jobs``: candidates in the order their builds end
        while True:
            waiting = time.monotonic()
            if (next_one := prebuilds.take()) is None:
                return
            one(*next_one, round(time.monotonic() - waiting, 2))

    try:
        with ThreadPoolExecutor(max(1, jobs)) as pool:
            for future in [pool.submit(slot) for _ in range(max(1, jobs))]:
                future.result()  # re-raises the first unexpected exception
    finally:
        survey.close()
        prebuilds.close()
        if sharing:
            sharing.close()
        if headers:
            headers.join()  # its compiler runs in a session of its own: never left running past the batch
    return ledger


def default_builds() -> int:
    """Builds ahead at once: one per core of this machine (a load_inline build keeps one or two busy, its C++ and
    CUDA files compiling side by side, and waits on nothing else: fewer leave cores idle; on a 2-core machine one
    at a time judged 151 an hour where two builds inside two checks judged 193, BENCHMARKS.md)."""
    return max(1, os.cpu_count() or 1)


def precompile_headers(items: list[Item], device: str, report: Path) -> threading.Thread | None:
    """Precompiled torch headers for the load_inline flags most candidates use (worker/isolation/header_cache.py),
    built beside the first checks: a candidate that starts before its entry exists builds as it always did.
    ``report``: which flag sets were asked for, the entries there once built, and the seconds it took."""
    sources = []
    for item in items:
        try:
            sources.append(item.candidate.read_text(errors="replace"))
        except OSError:
            continue  # its check says what is wrong with the file
    flag_sets = header_flag_sets(sources)
    if not flag_sets:
        return None

    def build() -> None:
        began = time.monotonic()
        entries = build_headers(flag_sets, guess_kind(device) == "cuda")
        report.write_text(json.dumps({"flag_sets": flag_sets, "entries": [str(e) for e in entries],
                                      "seconds": round(time.monotonic() - began, 1)}, indent=1) + "\n")

    thread = threading.Thread(target=build, name="precompiled-headers")
    thread.start()
    return thread


def judge_one(item: Item, runner: Runner, device: str, settings: ProfileSettings | None, contestants: Path,
              shared: SharedReference | None = None) -> Judged:
    """One candidate's row: its check, and its timing when ``settings`` and it passed. A file that cannot
    be judged (not a candidate, a broken problem) is a row that says why, not a stopped batch."""
    began = time.monotonic()
    base = {"id": item.id, "level": item.level, "problem": item.problem.name, "candidate": str(item.candidate)}
    clock = PhaseClock()
    try:
        result = check(item.problem, item.candidate, device=device, runner=runner, on_progress=clock, shared=shared)
        row = Judged(**base, **_verdict(result))
        if settings is not None and result.passed:
            baseline = compiled_reference(item.problem, contestants)
            row = row.model_copy(update=_timing(profile(item.problem, item.candidate, baseline=baseline,
                                                        device=device, settings=settings, runner=runner)))
    except UsageError as exc:
        row = Judged(**base, verdict="error: usage", error=str(exc)[:500])
    except Exception as exc:  # noqa: BLE001  (our failure, not the candidate's: a row, judged again next run)
        row = Judged(**base, verdict="error: harness", error=f"{type(exc).__name__}: {str(exc)[:500]}")
    return row.model_copy(update={"seconds": round(time.monotonic() - began, 2), "phases": clock.marks})


class PhaseClock:
    """Where a check's seconds go, from its progress messages: ``import_at`` (the judge booted, the lease
    granted, the reference run and measured; the candidate's import, with any build it does, begins) and
    ``cases_at`` (the import done, the first case begins), in seconds from the start; ``measured_at`` where the
    judge measured the reference (a large one, or on a GPU: its judge booted, admitted to the device, the
    reference run once); ``admitted_at`` where the
    check waited for the device (worker/lease.py says so while it waits): the first message after the wait."""

    def __init__(self):
        self.began, self.marks, self.waiting = time.monotonic(), {}, False

    def __call__(self, message: str, done: int = 0, total: int = 0) -> None:
        at = round(time.monotonic() - self.began, 2)
        if message.startswith("waiting for"):
            self.waiting = True
            return
        if self.waiting:
            self.marks["admitted_at"], self.waiting = at, False
        if message.startswith("the reference measured"):
            self.marks.setdefault("measured_at", at)
        elif message.startswith("importing the candidate"):
            self.marks.setdefault("import_at", at)
        elif "import_at" in self.marks:
            self.marks.setdefault("cases_at", at)


def settled(row: Judged | None) -> bool:
    """Whether a candidate's row stands: a harness error (ours, perhaps passing) is judged again on the
    next run of the batch, whose row then replaces it."""
    return row is not None and row.verdict != "error: harness"


def _verdict(result: CheckResult) -> dict:
    rules = {b.rule: b.passed for b in result.benchmark}
    return {"verdict": result.verdict, "passed": result.passed, "cause": result.cause,
            "kernelbench": rules.get("KernelBench"), "kernelbench_v01": rules.get("KernelBench v0.1"),
            "why": next((b.why for b in result.benchmark if b.why), "")}


def _timing(prof: ProfileResult) -> dict:
    """The timed run's numbers; a pass that timing shows wrong (an output produced while timed) is a failure."""
    update = {"trusted": prof.trusted, "speedup": prof.speedup, "speedup_ci": prof.speedup_ci,
              "speedup_compiled": prof.speedup_vs_baseline}
    if not prof.passed:
        update.update(passed=False, verdict=prof.verdict)
    return update

