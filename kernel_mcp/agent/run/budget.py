"""What a run may spend: wall time, evaluations, dollars; any of them ends it (the first reached).

``parse("30m")``, ``parse("200evals")``, ``parse("5usd")`` or several joined by commas
(``"30m,5usd"``). Time is the run's own active time, summed over every process that drove it (a resumed
run does not start its clock again; agent/run/state.py), so is spend.
"""
from __future__ import annotations

import re

from pydantic import BaseModel

UNITS_S = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_PART = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z$]+)\s*$")


class Budget(BaseModel):
    evaluations: int | None = None
    seconds: float | None = None
    usd: float | None = None

    def text(self) -> str:
        parts = [f"{self.seconds / 60:g} min" if self.seconds is not None else "",
                 f"{self.evaluations} evaluations" if self.evaluations is not None else "",
                 f"${self.usd:g}" if self.usd is not None else ""]
        return ", ".join(p for p in parts if p) or "unlimited"


def parse(text: str) -> Budget:
    """A budget from its command-line form; ValueError with the accepted forms on anything else."""
    fields: dict[str, float] = {}
    for part in text.lower().split(","):
        match = _PART.match(part)
        if not match:
            raise ValueError(f"budget {part.strip()!r}: use e.g. 30m, 90s, 2h, 200evals, 5usd (comma-separated)")
        value, unit = float(match[1]), match[2]
        if value <= 0:
            raise ValueError(f"budget {part.strip()!r} must be positive")
        if unit in UNITS_S:
            fields["seconds"] = value * UNITS_S[unit]
        elif unit in ("evals", "eval", "evaluations"):
            fields["evaluations"] = int(value)
        elif unit in ("usd", "$", "dollars"):
            fields["usd"] = value
        else:
            raise ValueError(f"budget unit {unit!r}: use s, m, h, evals or usd")
    return Budget.model_validate(fields)
