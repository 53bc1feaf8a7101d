"""evaluate: compile -> check -> profile -> roofline (-> sanitize, when asked) -> snapshot in one call, the one
agents use most."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from kernel_mcp.errors import NoKernelFound, UsageError
from kernel_mcp.problem import load_problem
from kernel_mcp.evaluation import EvaluateRequest, EvaluateResult
from kernel_mcp.results import RooflineResult
from kernel_mcp.tools import snapshot as snapshots
from kernel_mcp.tools.compile import compile as compile_candidate
from kernel_mcp.tools.roofline import roofline
from kernel_mcp.tools.sanitize import sanitize
from kernel_mcp.views.roofline_chart import draw
from kernel_mcp.worker import Runner
from kernel_mcp.worker.protocol import ProgressFn


def evaluate(request: EvaluateRequest, runner: Runner | None = None,
             on_progress: ProgressFn | None = None) -> EvaluateResult:
    """Every instrument on one candidate, and a snapshot of it with all the numbers. A compile error stops
    before timing (and is snapshotted too: the history keeps failures). ``settings.shapes="tests"`` times
    the small test shapes instead of the benchmarks (quick runs, CPU). The problem is loaded once, here."""
    root, candidate = request.root.resolve(), request.candidate
    problem = load_problem(request.problem)
    keep = dict(author=request.author, note=request.note, parent=request.parent)
    problem_name = request.problem.name
    evaluated = _read(candidate)  # what the snapshot keeps: exactly the bytes every instrument below used
    built = None
    try:
        built = compile_candidate(candidate, problem=problem, on_progress=on_progress, runner=runner)
    except NoKernelFound:  # plain torch candidates have nothing to compile
        pass
    if built is not None and not built.ok:
        _unchanged(candidate, evaluated)
        snap = snapshots.snapshot(root, problem_name, candidate, compile=built, candidate_bytes=evaluated, **keep)
        return EvaluateResult(verdict="compile failed", passed=False, trusted=False, compile=built, snapshot=snap)
    roof = roofline(problem, candidate, device=request.device, settings=request.settings, on_progress=on_progress,
                    runner=runner)
    prof = roof.profile
    checked = sanitize(problem, candidate, device=request.device, runner=runner) if request.sanitize else None
    _unchanged(candidate, evaluated)
    snap = snapshots.snapshot(root, problem_name, candidate, compile=built, profile=prof, roofline=roof,
                              attachments=_chart(roof), candidate_bytes=evaluated, **keep)
    return EvaluateResult(verdict=prof.verdict, passed=prof.passed, trusted=prof.trusted, speedup=prof.speedup,
                          compile=built, roofline=roof, sanitize=checked, snapshot=snap)


def _read(candidate: str | Path) -> bytes:
    try:
        return Path(candidate).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the candidate {candidate}: {exc.strerror}") from None


def _unchanged(candidate: str | Path, evaluated: bytes) -> None:
    """The instruments each read the file when they start: if it changed meanwhile (another agent, an
    editor), they may have measured different code, and no snapshot may claim their numbers."""
    if _read(candidate) != evaluated:
        raise UsageError(f"{candidate} changed while it was being evaluated (saved by an editor or another "
                         "agent?); nothing was snapshotted: evaluate it again once it is saved")


def _chart(roof: RooflineResult) -> dict[str, bytes]:
    """The roofline chart kept with the snapshot (the server serves the best one as a resource)."""
    if not roof.shapes or not roof.bandwidth_bytes_per_s:
        return {}
    try:
        with tempfile.TemporaryDirectory(prefix="kmcp-chart-") as scratch:
            return {"roofline.png": draw(roof, Path(scratch) / "roofline.png").read_bytes()}
    except Exception as exc:  # noqa: BLE001  (a chart is not worth losing the evaluation's snapshot)
        print(f"kernel_mcp: roofline chart not drawn: {exc!r}", file=sys.stderr)
        return {}
