"""Facts a run's journal establishes, shared by the loop (which island's kernel is the best parent, whether
restarts still gain) and the report (which kernel is the run's best): confirmed gains over the baseline and
how they rank, and the count of hard restarts that gained nothing."""
from __future__ import annotations

from kernel_mcp.agent.run.records import Record


def confirmed_gains(records: list[Record]) -> dict[str, tuple[float, float]]:
    """Each promoted kernel's gain over the baseline as confirmed: the product of the paired, interleaved
    ratios of the promotions that led to it (value, and the product of their 95% lower ends). Speedups
    against the reference from separate evaluations are not used: they are not paired and would rank
    within their noise."""
    gains: dict[str, tuple[float, float]] = {}
    for r in records:
        if r.kind != "promotion":
            continue
        fields = r.fields()
        key, ratio, previous = fields["candidate_hash"], fields.get("speedup"), fields.get("previous")
        if fields.get("how") in ("baseline", "hard restart") and key not in gains:
            gains[key] = (1.0, 1.0)
        elif ratio and previous in gains:
            base = gains[previous]
            gains[key] = max(gains.get(key, (0.0, 0.0)), (base[0] * ratio[0], base[1] * ratio[1]), key=lambda g: g[1])
        # a migration or a tuned start carries its kernel's gain as it was
    return gains


def epochs_without_gain(records: list[Record], island: str) -> int:
    """How many of ``island``'s latest hard restarts, in a row, ended without beating the run's best: an
    epoch runs from one ``epoch_started`` of the island to its next; it gained if a kernel the island
    promoted in it has a confirmed lower bound above the best any island had confirmed before. Two such
    epochs stop the run (the ladder's L4). The epoch still running is not counted."""
    gains = confirmed_gains(records)
    best, in_epoch, gained, count = 0.0, False, False, 0
    for r in records:
        fields = r.fields()
        if r.kind == "promotion" and fields.get("how") in ("proposal", "tune"):
            low = gains.get(fields["candidate_hash"], (0.0, 0.0))[1]
            gained |= in_epoch and str(fields.get("island")) == island and low > best
            best = max(best, low)
        elif r.kind == "epoch_started" and str(fields.get("island")) == island:
            if in_epoch:  # the island's previous epoch ends here
                count = 0 if gained else count + 1
            in_epoch, gained = True, False
    return count


def gain_rank(gain: tuple[float, float]) -> tuple[float, float]:
    """How confirmed gains (value, lower end) are ranked: the lower end first, the value breaking ties."""
    return gain[1], gain[0]
