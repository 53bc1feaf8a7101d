"""Lessons: one structured record per idea tried, rendered into a short brief for a fresh session (a soft or
hard restart gets the brief, never the code of a hard restart's past; docs/orchestrator.md, "Lessons").

Every claim keeps its numbers: a speedup is quoted with its 95% CI, a failure with its verdict. The brief
has five sections (worked, did not work, insights, open avenues, closed avenues) and is cut to a budget
(BRIEF_CHARS, about 2,000 tokens) by keeping the most informative records of each section: the largest
gains, the most recent failures.
"""
from __future__ import annotations

from pydantic import BaseModel, Field

from kernel_mcp.agent.run.records import Lesson

BRIEF_CHARS = 8000  # ~2,000 tokens at ~4 characters per token


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
