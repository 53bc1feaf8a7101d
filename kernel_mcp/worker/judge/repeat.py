"""The first test's call made again once every case has passed: in this host and, where the task declares
``deterministic: true``, in a fresh one (judge/determinism.py); on sub-batches in a fresh host where it declares
``batch_invariant`` (judge/batch_invariance.py).

Fresh: a host that has run nothing, so a memo the candidate keeps in its process (rows or outputs it has seen)
cannot answer there (tests/cheats/bi_row_cache.py). A candidate that fails to import in that host fails the
check: it could otherwise skip the measurement by failing there on purpose, noticing a note an earlier host
of the same check left (tests/cheats/det_fresh_import_fails.py).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kernel_mcp.results import CaseResult, CheckResult
from kernel_mcp.worker.judge import batch_invariance, determinism
from kernel_mcp.worker.judge.case import Case, CaseRunner
from kernel_mcp.worker.judge.context import Judging


def after_cases(runner: CaseRunner, cases: list[Case], judging: Judging, result: CheckResult) -> None:
    """Determinism, then batch invariance, each only while nothing has failed."""
    if runner.kept is None:
        return
    spec = runner.rt.problem.spec
    judging.reporter.progress("the first test again: the same bits?", len(cases), len(cases))
    with _fresh(judging, runner, result, "deterministic: true", wanted=spec.deterministic) as fresh:
        determinism.measure(runner, cases, result, fresh)
    if spec.batch_invariant is None or not passing(result):
        return
    judging.reporter.progress("sub-batches in a fresh process: the same rows?", len(cases), len(cases))
    with _fresh(judging, runner, result, "batch_invariant", wanted=True) as fresh:
        if fresh is not None:
            batch_invariance.measure(runner, fresh, cases, result)


def passing(result: CheckResult) -> bool:
    """Nothing has failed so far: every case passed and no finding is an error."""
    return all(c.passed for c in result.cases) and not any(f.severity == "error" for f in result.findings)


@contextlib.contextmanager
def _fresh(judging: Judging, runner: CaseRunner, result: CheckResult, declared: str,
           wanted: bool) -> Iterator[CaseRunner | None]:
    """A runner on a second host given the same candidate (None where not ``wanted``, or where it did not
    start: its import failure is listed as a failing case, its boot failure makes the check a harness error)."""
    if not wanted:
        yield None
        return
    rt = runner.rt
    session = judging.open_session(rt)
    try:
        failure = session.start(rt.problem.spec.timeouts.import_)
        if failure is None:
            scratch = CheckResult(passed=False, verdict="", problem=result.problem, candidate=result.candidate)
            yield CaseRunner(rt, session, scratch, [])
            return
        if failure.kind == "boot":
            result.verdict = "error: harness"
        result.cases.append(CaseResult(name=f"import in a fresh process ({declared})", params={}, passed=False,
                                       failure=f"{failure.kind} on import", message=failure.message[:2000]))
        yield None
    finally:
        session.close()
