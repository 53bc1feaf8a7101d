"""Lessons: one structured record per idea tried, rendered into a short brief for a fresh session (a soft or
hard restart gets the brief, never the code of a hard restart's past; ORCHESTRATOR.md, "Lessons").

Every claim keeps its numbers: a speedup is quoted with its 95% CI, a failure with its verdict. The brief
has five sections (worked, did not work, insights, open avenues, closed avenues) and is cut to a budget
(BRIEF_CHARS, about 2,000 tokens) by keeping the most informative records of each section: the largest
gains, the most recent failures.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

BRIEF_CHARS = 8000  # ~2,000 tokens at ~4 characters per token


class Lesson(BaseModel):
    hypothesis: str  # what the idea was meant to do ("bigger tiles amortise the loads")
    change: str  # what was changed ("BLOCK_M 64 -> 128")
    verdict: Literal["worked", "no gain", "slower", "failed", "rejected"]
    speedup: float | None = None  # against the incumbent of the time
    speedup_ci: list[float] | None = None
    bottleneck: str = ""  # what the roofline or counters said before ("memory-bound at 41% of DRAM")
    failure: str = ""  # the verdict's words when it failed ("fail: mismatch")
    size_delta: int = 0  # lines added (negative: removed)
    evaluation: int = 0  # its number in the run, for recency
    insight: str = ""  # what it taught beyond its own result
    avenue: Literal["open", "closed", ""] = ""  # whether the direction is worth more tries


def _line(lesson: Lesson) -> str:
    number = ""
    if lesson.speedup is not None:
        ci = f" [{lesson.speedup_ci[0]:.2f}, {lesson.speedup_ci[1]:.2f}]" if lesson.speedup_ci else ""
        number = f" -> {lesson.speedup:.2f}x{ci}"
    why = f" ({lesson.failure})" if lesson.failure else ""
    where = f"; before: {lesson.bottleneck}" if lesson.bottleneck else ""
    return f"- {lesson.change}: {lesson.hypothesis}{number}{why}{where}"


def render_brief(lessons: list[Lesson], budget_chars: int = BRIEF_CHARS) -> str:
    """The brief, within ``budget_chars``; sections without records are left out."""
    worked = sorted((x for x in lessons if x.verdict == "worked"), key=lambda x: -(x.speedup or 0))
    not_worked = sorted((x for x in lessons if x.verdict != "worked"), key=lambda x: -x.evaluation)
    sections = [
        ("What worked (speedup over the incumbent of the time, 95% CI)", [_line(x) for x in worked]),
        ("What did not work", [_line(x) for x in not_worked]),
        ("Insights", [f"- {x.insight}" for x in sorted(lessons, key=lambda x: -x.evaluation) if x.insight]),
        ("Open avenues (worth more tries)", [f"- {x.change}: {x.hypothesis}" for x in lessons if x.avenue == "open"]),
        ("Closed avenues (do not retry)", [f"- {x.change}" for x in lessons if x.avenue == "closed"]),
    ]
    sections = [(title, lines) for title, lines in sections if lines]
    if not sections:
        return ""
    share = max(200, budget_chars // len(sections))  # each section its share; unused share is not lent
    parts = []
    for title, lines in sections:
        kept, used = [], len(title) + 4
        for line in lines:
            if used + len(line) + 1 > share:
                kept.append(f"- ... {len(lines) - len(kept)} more")
                break
            kept.append(line)
            used += len(line) + 1
        parts.append(f"## {title}\n" + "\n".join(kept))
    return "\n\n".join(parts)[:budget_chars]


class LessonBook(BaseModel):
    """The run's lessons, shared by every island (code migrates only as confirmed incumbents)."""

    lessons: list[Lesson] = Field(default_factory=list)

    def add(self, lesson: Lesson) -> None:
        self.lessons.append(lesson)

    def brief(self, budget_chars: int = BRIEF_CHARS) -> str:
        return render_brief(self.lessons, budget_chars)
