"""Two candidate files timed against each other by the real ``profile`` tool (interleaved, every output
checked) and the paired speedup of the second over the first (agent/decide.py), or None when the second
failed its check or its timing is not trusted: never a reason to move."""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.agent.decide import combined_speedup
from kernel_mcp.results import ProfileSettings
from kernel_mcp.stats import Ratio


def compare_files(problem: str | Path, incumbent: Path, candidate: Path, device: str, settings: ProfileSettings,
                  runner=None, call_timeout_s: float | None = None) -> Ratio | None:
    from kernel_mcp.tools.profile import profile
    result = profile(str(problem), candidate, baseline=incumbent, device=device, settings=settings, runner=runner,
                     call_timeout_s=call_timeout_s)
    pairs = [(s.baseline.samples_ms, s.candidate.samples_ms) for s in result.shapes
             if s.baseline and s.candidate and s.credited]
    if not (result.passed and result.trusted and pairs):
        return None
    try:
        return combined_speedup(pairs)
    except ValueError:  # too few paired samples for an interval: no decision
        return None
