"""The roofline chart (matplotlib, PNG): the roofs, and reference and candidate per shape."""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.results import RooflineResult


def draw(result: RooflineResult, path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt

    bandwidth, peak = result.bandwidth_bytes_per_s, result.peak_flops_per_s
    intensities = [s.intensity for s in result.shapes] or [1.0]
    lo, hi = min(intensities + [peak / bandwidth]) / 8, max(intensities + [peak / bandwidth]) * 8
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    ax.loglog(xs, [min(peak, x * bandwidth) / 1e12 for x in xs], color="black", lw=1.5,
              label=f"roof: {bandwidth / 1e12:.2f} TB/s, {peak / 1e12:.0f} TFLOP/s ({result.unit})")
    styles = {"reference": ("o", "tab:blue"), "candidate": ("*", "tab:red")}
    for i, shape in enumerate(result.shapes):
        for point in shape.points:
            marker, colour = styles[point.who]
            ax.scatter(shape.intensity, point.tflops, marker=marker, color=colour, s=70 if marker == "*" else 40,
                       label=point.who if i == 0 else None, zorder=3)
        ax.annotate(f"shape {i}", (shape.intensity, max(p.tflops for p in shape.points) if shape.points else 0),
                    textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title(f"{result.problem} on {result.device_name}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.text(0.01, 0.01, f"ceilings: {result.ceilings_source[:110]}", fontsize=6, color="gray")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path
