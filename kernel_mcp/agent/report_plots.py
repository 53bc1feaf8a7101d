"""The report's plots (matplotlib, PNG): the best speedup over the reference with its 95% interval as the
run went (against evaluations and against time), every evaluation as a point (failures at the bottom),
restarts as vertical lines, and cumulative spend where a model was paid."""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.agent.runlog import Record
from kernel_mcp.agent.summary import confirmed_gains, gain_rank


def progress_series(records: list[Record]) -> dict[str, list]:
    """Per evaluation (in order): its number, seconds since the start, its own speedup (None: failed), the
    run's best so far (its speedup over the reference, low, high), cumulative spend; and the evaluation
    numbers at which restarts happened. "Best" is ranked as the summary ranks it, by the lower end of the
    confirmed gain over the baseline (the paired comparisons that promoted it): two kernels' intervals
    against the reference come from separate evaluations, and ranking on them could crown another kernel
    than the summary's best."""
    start = records[0].at if records else 0.0
    gains = confirmed_gains(records)
    evaluated: dict[str, dict] = {}
    best: str | None = None
    spend, series = 0.0, {"n": [], "t": [], "own": [], "best": [], "lo": [], "hi": [], "usd": [], "restarts": []}
    for r in records:
        fields = r.model_extra or {}
        if r.kind == "turn":
            spend += fields.get("cost_usd") or 0.0
        elif r.kind == "restart":
            series["restarts"].append(len(evaluated))
        elif r.kind == "done":
            evaluated[fields["candidate_hash"]] = fields
            series["n"].append(len(evaluated))
            series["t"].append(r.at - start)
            series["own"].append(fields.get("speedup") if fields.get("passed") else None)
            series["usd"].append(spend)
            for name in ("best", "lo", "hi"):
                series[name].append(series[name][-1] if series[name] else None)
        elif r.kind == "promotion" and series["n"]:  # it follows its evaluation: that point shows it
            key = fields["candidate_hash"]
            done = evaluated.get(key) or {}
            rank = gain_rank(gains.get(key, (0.0, 0.0)))
            if done.get("passed") and (best is None or rank > gain_rank(gains[best])):
                best = key
                ci = done.get("speedup_ci") or [None, None]
                series["best"][-1], series["lo"][-1], series["hi"][-1] = done.get("speedup"), ci[0], ci[1]
    return series


def plot_progress(records: list[Record], out: Path) -> list[str]:
    """progress.png (against evaluations) and progress_time.png (against seconds); their file names."""
    import matplotlib
    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    s = progress_series(records)
    if not s["n"]:
        return []
    names = []
    for axis_key, label, name in (("n", "evaluation", "progress.png"), ("t", "seconds since the start", "progress_time.png")):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        x = s[axis_key]
        ok = [(xi, y) for xi, y in zip(x, s["own"]) if y is not None]
        bad = [xi for xi, y in zip(x, s["own"]) if y is None]
        ax.scatter([p[0] for p in ok], [p[1] for p in ok], s=14, color="tab:gray", label="each evaluation")
        if bad:
            ax.scatter(bad, [0] * len(bad), marker="x", color="tab:red", label="failed")
        ax.step(x, [b or 0 for b in s["best"]], where="post", color="tab:blue", label="best so far")
        ax.fill_between(x, [v or 0 for v in s["lo"]], [v or 0 for v in s["hi"]], step="post", alpha=0.2,
                        color="tab:blue", label="its 95% CI")
        if axis_key == "n":
            for restart in s["restarts"]:
                ax.axvline(restart + 0.5, color="tab:orange", linestyle="--", linewidth=1)
        if s["usd"][-1] > 0:
            twin = ax.twinx()
            twin.plot(x, s["usd"], color="tab:green", linewidth=1)
            twin.set_ylabel("spend (USD)", color="tab:green")
        ax.set_xlabel(label)
        if axis_key == "n":
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("speedup over the reference")
        ax.legend(loc="upper left", fontsize=8)
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        names.append(name)
    return names
