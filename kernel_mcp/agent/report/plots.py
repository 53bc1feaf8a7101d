"""The report's plots (matplotlib, PNG), against the search's steps and against time. A step is each
evaluation, the A/A run and each tuner comparison, in journal order (agent/report/decisions.py numbers them).

Top panel: every evaluation's speedup over the reference (failures at the bottom), and the run's best so far
with its 95% interval, drawn from the first step to the last (so one evaluation already shows its line and
band). Bottom panel, where the run timed comparisons: each one's speedup over what it was compared with and
its 95% interval, coloured by whether it counted, beside the margin a gain had to clear. Restarts as
vertical lines; cumulative spend where a model was paid.
"""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.agent.report.decisions import STEP_KINDS, Decision, decisions
from kernel_mcp.agent.run.facts import confirmed_gains, gain_rank
from kernel_mcp.agent.run.records import Record


def progress_series(records: list[Record]) -> dict[str, list]:
    """Per evaluation (in order): its number, its step, seconds since the start, its own speedup (None:
    failed), the run's best so far (its speedup over the reference, low, high), cumulative spend; and the
    steps at which restarts happened. "Best" is ranked as the summary ranks it, by the lower end of the
    confirmed gain over the baseline (the paired comparisons that promoted it): two kernels' intervals
    against the reference come from separate evaluations, and ranking on them could crown another kernel
    than the summary's best."""
    start = records[0].at if records else 0.0
    gains = confirmed_gains(records)
    evaluated: dict[str, dict] = {}
    best: str | None = None
    step, spend = 0, 0.0
    series: dict[str, list] = {k: [] for k in ("n", "step", "t", "own", "best", "lo", "hi", "usd", "restarts")}
    for r in records:
        fields = r.fields()
        step += r.kind in STEP_KINDS
        if r.kind == "turn":
            spend += fields.get("cost_usd") or 0.0
        elif r.kind == "restart":
            series["restarts"].append(step)
        elif r.kind == "done":
            evaluated[fields["candidate_hash"]] = fields
            series["n"].append(len(evaluated))
            series["step"].append(step)
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
    series["last_step"], series["last_t"] = [step], [(records[-1].at - start) if records else 0.0]
    return series


def plot_progress(records: list[Record], out: Path) -> list[str]:
    """progress.png (against steps) and progress_time.png (against seconds); their file names."""
    import matplotlib
    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt
    s, timed = progress_series(records), decisions(records)
    if not s["n"] and not timed:
        return []
    names = []
    for by_step, name in ((True, "progress.png"), (False, "progress_time.png")):
        rows = 2 if timed else 1
        fig, axes = plt.subplots(rows, 1, figsize=(8, 6.5 if timed else 4.5), sharex=True, squeeze=False,
                                 gridspec_kw={"height_ratios": [3, 2][:rows]})
        _evaluations(axes[0][0], s, by_step)
        if timed:
            _comparisons(axes[1][0], timed, by_step)
        _x_axis(axes[-1][0], s, by_step)
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        names.append(name)
    return names


def _evaluations(ax, s: dict[str, list], by_step: bool) -> None:
    x = s["step"] if by_step else s["t"]
    ok = [(xi, y) for xi, y in zip(x, s["own"]) if y is not None]
    bad = [xi for xi, y in zip(x, s["own"]) if y is None]
    if ok:
        ax.scatter([p[0] for p in ok], [p[1] for p in ok], s=18, color="tab:gray", zorder=3, label="each evaluation")
    if bad:
        ax.scatter(bad, [0] * len(bad), marker="x", color="tab:red", zorder=3, label="failed evaluation")
    known = [i for i, b in enumerate(s["best"]) if b is not None]
    if known:  # the best so far held from its step to the run's last one: a line and band however few points
        end = s["last_step"][0] if by_step else s["last_t"][0]
        xs = [x[i] for i in known] + [max(end, x[known[-1]] + (1 if by_step else 0))]
        best = [s["best"][i] for i in known]
        ax.step(xs, best + best[-1:], where="post", color="tab:blue", linewidth=2, label="best so far")
        lo, hi = [s["lo"][i] for i in known], [s["hi"][i] for i in known]
        if all(v is not None for v in lo + hi):
            ax.fill_between(xs, lo + lo[-1:], hi + hi[-1:], step="post", alpha=0.2, color="tab:blue",
                            label="its 95% interval")
    for restart in s["restarts"] if by_step else []:
        ax.axvline(restart + 0.5, color="tab:orange", linestyle="--", linewidth=1)
    if s["usd"] and s["usd"][-1] > 0:
        twin = ax.twinx()
        twin.plot(x, s["usd"], color="tab:green", linewidth=1)
        twin.set_ylabel("spend (USD)", color="tab:green")
    ax.set_ylabel("speedup over the reference")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", fontsize=8)


def _comparisons(ax, timed: list[Decision], by_step: bool) -> None:
    """Each comparison's speedup over what it was compared with and its interval; the margin it needed."""
    def x_of(d: Decision) -> float:
        return d.step if by_step else d.at_s
    kinds = (("counted", "tab:green", lambda d: d.counted), ("under the margin", "tab:gray",
             lambda d: d.what in ("compare", "confirm") and not d.counted),
             ("A/A run (the baseline against itself)", "tab:orange", lambda d: d.what == "noise"))
    for label, color, chosen in kinds:
        points = [d for d in timed if chosen(d) and d.ratio]
        if points:
            ax.errorbar([x_of(d) for d in points], [d.ratio[0] for d in points],
                        yerr=[[d.ratio[0] - d.ratio[1] for d in points], [d.ratio[2] - d.ratio[0] for d in points]],
                        fmt="o", markersize=5, capsize=3, color=color, label=label, zorder=3)
    failed = [d for d in timed if d.failed and d.what != "noise"]
    if failed:
        ax.scatter([x_of(d) for d in failed], [1.0] * len(failed), marker="x", color="tab:red", zorder=3,
                   label="configuration failed")
    margin = [d for d in timed if d.needs]
    if margin:
        pad = 0.5 if by_step else 0.0  # the margin in force over each comparison's whole step
        xs = [x_of(d) - pad for d in margin] + [x_of(margin[-1]) + pad]
        ax.step(xs, [d.needs for d in margin] + [margin[-1].needs], where="post", color="tab:red",
                linestyle="--", linewidth=1, label="a gain counts when its lower end is above")
    ax.axhline(1.0, color="black", linewidth=0.5)
    ax.set_ylabel("speedup over what it\nwas compared with")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", fontsize=7)


def _x_axis(ax, s: dict[str, list], by_step: bool) -> None:
    from matplotlib.ticker import MaxNLocator
    if by_step:
        ax.set_xlabel("step of the search (each evaluation, A/A run and comparison)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(0.5, max(s["last_step"][0], 1) + 0.5)
    else:
        ax.set_xlabel("seconds since the start")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(0, max(s["last_t"][0], 1.0) * 1.03)
