"""Two candidate files timed against each other by the real ``profile`` tool (interleaved, every output
checked) and the paired speedup of the second over the first (agent/decide.py), or None when the second
failed its check or its timing is not trusted: never a reason to move. ``noise_margin``: a file against
itself (an A/A run), whose true speedup is 1, gives the margin a real gain must clear."""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.agent.decide import MIN_DELTA, combined_speedup, delta_from_aa
from kernel_mcp.problem import Problem
from kernel_mcp.results import ProfileSettings
from kernel_mcp.stats import Ratio
from kernel_mcp.tools.profile import profile


def compare_files(problem: str | Path | Problem, incumbent: Path, candidate: Path, device: str,
                  settings: ProfileSettings, runner=None) -> Ratio | None:
    result = profile(problem, candidate, baseline=incumbent, device=device, settings=settings, runner=runner)
    pairs = [(s.baseline.samples_ms, s.candidate.samples_ms) for s in result.shapes
             if s.baseline and s.candidate and s.credited]
    if not (result.passed and result.trusted and pairs):
        return None
    try:
        return combined_speedup(pairs)
    except ValueError:  # too few paired samples for an interval: no decision
        return None


def noise_margin(problem: str | Path | Problem, kernel: Path, device: str, settings: ProfileSettings,
                 runner=None) -> tuple[Ratio | None, float]:
    """The kernel timed against itself with the comparisons' own settings: (its ratio, the margin delta =
    max(1%, twice its interval's spread)); the 1% floor alone when it could not be timed."""
    ratio = compare_files(problem, kernel, kernel, device, settings, runner)
    return ratio, (delta_from_aa(ratio) if ratio else MIN_DELTA)
