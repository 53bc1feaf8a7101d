"""The tune agent on a real candidate: its parameters from the source (params.py), each configuration
written as its own file, compared with the real ``profile`` tool (the two timed interleaved in one
session, every output checked), the search of search.py between them.

``compare(a, b)`` profiles b with a as the baseline and takes the paired speedup over every timed shape
(agent/decide.py); a configuration that fails its check, or whose timing is not trusted, is None: never
chosen. ``measure`` (for successive halving) profiles configurations alone at a budget that doubles each
round.

With a ``memo`` (the run folder's evaluation cache), every comparison and measurement is kept by the
content of the files and settings involved; the search is deterministic given them, so a tune resumed
after ``kill -9`` replays what was measured from the memo and times only what was not.

With a runner of several workers (a pool of GPUs, a Ray cluster: ``runner.parallel``), measurements and
comparisons run that many at once, each on one device to itself, and the search takes its wide forms
(search.py). ``on_step`` hears of each one timed (not those replayed from the memo): what, the
configurations, the result, its seconds; the loop keeps them in the run's journal (evaluations per
minute, the best as the search went: bench/scale_bench.py).
"""
from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from kernel_mcp.agent.compare import compare_files
from kernel_mcp.agent.decide import significant
from kernel_mcp.agent.run.folder import write_once
from kernel_mcp.agent.tune import priors
from kernel_mcp.agent.tune.params import Config, Param, apply, change_between, find_params
from kernel_mcp.agent.tune.search import DELTA, tune
from kernel_mcp.problem import Problem, load_problem
from kernel_mcp.results import ProfileSettings
from kernel_mcp.stats import Ratio, geometric_mean
from kernel_mcp.tools.profile import profile
from kernel_mcp.worker import guess_kind


class TuneResult(BaseModel):
    params: dict[str, list[int]]  # name -> values searched
    start: dict[str, int]
    best: dict[str, int]
    best_file: str  # the winning configuration's source (the start's own file when nothing beat it)
    speedup: list[float] | None = None  # [value, low, high] of the best over the start, confirmed afresh
    comparisons: int = 0
    measured: int = 0
    failed: int = 0  # configurations that failed their check or their timing


# Launch options Triton's interpreter (TRITON_INTERPRET=1, kernels on a CPU) ignores: searching them there
# would time noise only.
GPU_ONLY = ("num_warps", "num_stages", "num_ctas", "maxnreg")


class Memo(Protocol):
    def cached(self, key: str) -> dict[str, Any] | None: ...

    def cache(self, key: str, result: dict[str, Any]) -> None: ...


class Tuner:
    def __init__(self, problem: str | Path | Problem, candidate: str | Path, workdir: str | Path, device: str = "auto",
                 settings: ProfileSettings | None = None, only: list[str] | None = None, runner=None,
                 on_progress: Callable[[str], None] | None = None, memo: Memo | None = None,
                 stop: Callable[[], bool] | None = None, interpreted: bool | None = None,
                 on_step: Callable[..., None] | None = None):
        self.problem, self.device, self.runner = load_problem(problem), device, runner  # loaded once per search
        self.source = Path(candidate).read_text()
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        if interpreted is None:  # kernels run by Triton's interpreter: on a CPU
            interpreted = guess_kind(device) == "cpu"
        self.params: list[Param] = [p for p in find_params(self.source) if (not only or p.name in only)
                                    and not (interpreted and p.name.rsplit(".", 1)[-1] in GPU_ONLY)]
        self.settings = settings or ProfileSettings(budget_s=10.0)
        self.say = on_progress or (lambda _: None)
        self.failed = 0
        self.memo = memo
        self.stop = stop or (lambda: False)  # True once the run's budget is spent: no more timing
        self.on_step = on_step or (lambda **_: None)
        self.width = max(1, getattr(runner, "parallel", 1))  # evaluations worth running at once
        self._failed_lock = threading.Lock()  # comparisons run on several threads

    def file_of(self, config: Config) -> Path:
        """The configuration's source, written once under the work folder (named by its content), whole or
        not at all: a file torn by a kill would be measured under another memo key and fail for good."""
        data = apply(self.source, self.params, config).encode()
        path = self.workdir / f"tuned_{hashlib.sha256(data).hexdigest()[:12]}.py"
        write_once(path, data, durable=False)  # the memo, not this file, is what a resume relies on
        return path

    def _memo_key(self, what: str, files: list[Path], settings: ProfileSettings) -> str:
        digest = hashlib.sha256(what.encode() + settings.model_dump_json().encode())
        for file in files:
            digest.update(b"\0" + file.read_bytes())
        return f"tune-{what}-{digest.hexdigest()[:24]}"

    def _remembered(self, key: str, measure: Callable[[], dict[str, Any]], none: dict[str, Any],
                    even_if_stopped: bool = False, **step: Any) -> dict[str, Any]:
        """A measurement from the memo, or made now (kept, and told to ``on_step`` with ``step``); ``none``
        (a failure, not kept) once stopped, unless ``even_if_stopped``."""
        found = self.memo.cached(key) if self.memo else None
        if found is None:
            if self.stop() and not even_if_stopped:
                return none
            began = time.monotonic()
            found = measure()
            if self.memo:
                self.memo.cache(key, found)
            self.on_step(**step, **found, seconds=round(time.monotonic() - began, 2))
        return found

    def _at_once(self, work: Callable[[Any], Any], items: list) -> list:
        """``work`` over ``items``, as many at once as the runner has workers, results in order."""
        width = min(len(items), self.width)
        if width <= 1:
            return [work(item) for item in items]
        with ThreadPoolExecutor(width, thread_name_prefix="tune") as pool:
            return list(pool.map(work, items))

    def compare(self, a: Config, b: Config, what: str = "compare", even_if_stopped: bool = False) -> Ratio | None:
        """b's speedup over a; ``what`` keeps a confirmation apart from the search's own comparison of the
        same pair in the memo (a confirmation must be a fresh run). A confirmation, and the halving's winner
        against the start (``even_if_stopped``), run even once the run's budget is spent: without them a
        search cut off by the budget would throw away every gain it found (the overrun is two comparisons;
        a Ray run on the H200 lost a whole halving that way, 2026-12-03)."""
        self.say(f"tune: {change_between(a, b)}")
        files = [self.file_of(a), self.file_of(b)]

        def run() -> dict[str, Any]:
            ratio = compare_files(self.problem, *files, self.device, self.settings, self.runner)
            return {"ratio": [ratio.value, ratio.lo, ratio.hi] if ratio else None}
        found = self._remembered(self._memo_key(what, files, self.settings), run, {"ratio": None},
                                 even_if_stopped=even_if_stopped or what == "confirm", what=what, config=b,
                                 against=a)["ratio"]
        self._count_failed(found is None)
        return Ratio(*found) if found else None

    def _count_failed(self, count: int) -> None:
        with self._failed_lock:
            self.failed += count

    def compare_many(self, a: Config, bs: list[Config]) -> list[Ratio | None]:
        """``compare(a, b)`` for each of ``bs``, as many at once as the runner has workers."""
        return self._at_once(lambda b: self.compare(a, b), bs)

    def measure(self, configs: list[Config], effort: float) -> list[float | None]:
        """Each configuration timed alone; at once on as many devices as the runner has workers (a pool of
        GPUs: runners/pool.py), each on one device to itself."""
        settings = self.settings.model_copy(update={"budget_s": self.settings.budget_s * effort / 4})

        def one(config: Config) -> float | None:
            file = self.file_of(config)
            return self._remembered(self._memo_key("measure", [file], settings),
                                    lambda: {"ms": self._time_alone(file, settings)}, {"ms": None},
                                    what="measure", config=config, effort=effort)["ms"]
        times = self._at_once(one, configs)
        self._count_failed(sum(t is None for t in times))
        return times

    def _time_alone(self, file: Path, settings: ProfileSettings) -> float | None:
        result = profile(self.problem, file, device=self.device, settings=settings, runner=self.runner)
        medians = [s.candidate.median_ms for s in result.shapes if s.candidate and s.credited]
        return geometric_mean(medians) if result.passed and result.trusted and medians else None

    def run(self, delta: float = DELTA, samples: int = 16, seed: int = 0) -> TuneResult:
        """Search, then confirm: the winner timed once more against the start in a fresh profile run on new
        inputs, and kept only if it still wins significantly (the winner's curse at small effects)."""
        start = {p.name: p.current for p in self.params}
        trace = tune(self.params, self.compare, self.measure, delta=delta, samples=samples, seed=seed,
                     seeds=priors.seeds(self.params), width=self.width, compare_many=self.compare_many,
                     settle=lambda a, b: self.compare(a, b, even_if_stopped=True))
        best, speedup = trace.best, None
        if best != start:
            confirmed = self.compare(start, best, what="confirm")
            if confirmed is not None and significant(confirmed, delta):
                speedup = [confirmed.value, confirmed.lo, confirmed.hi]
            else:
                self.say("tune: the winner did not hold up when timed again; keeping the start")
                best = start
        return TuneResult(params={p.name: list(p.values) for p in self.params}, start=start, best=best,
                          best_file=str(self.file_of(best)), speedup=speedup, comparisons=trace.comparisons,
                          measured=trace.measured, failed=self.failed)
