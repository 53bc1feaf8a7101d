"""``kernel-mcp report RUN``: a run rendered for people, from its folder alone (works on a finished, running
or killed run). Writes RUN/report/report.md, report.html and the plots (report/plots.py), and returns the
Markdown path.

Sections: the outcome (best speedup over the reference with its 95% interval, against the baseline; % of
speed-of-light), progress over evaluations and time (plot), cost (tokens and dollars, per confirmed
improvement), the lineage tree (each evaluation under the incumbent it was proposed against, promotions
and restarts marked), a person's hints with what followed each, the failure mix, the best kernel's diff against
the baseline, the lessons.
"""
from __future__ import annotations

import difflib
import html
import re
from collections import defaultdict
from pathlib import Path

from kernel_mcp.agent.loop.lessons import render_brief
from kernel_mcp.agent.report.decisions import cells
from kernel_mcp.agent.report.plots import plot_progress
from kernel_mcp.agent.report.summary import RunSummary, summarize
from kernel_mcp.agent.run.journal import read
from kernel_mcp.agent.run.records import Record
from kernel_mcp.views.summaries import ratio_text

Block = tuple  # ("p", text) | ("table", header, rows) | ("pre", text) | ("img", file name)


def sections(run: Path, summary: RunSummary, records: list[Record], plots: list[str]) -> list[tuple[str, list[Block]]]:
    best, base = summary.best, summary.baseline
    outcome = [("p", f"Problem `{Path(summary.problem).name}`, agent `{summary.agent}`, {summary.islands} island(s); "
                     f"{summary.evaluations} evaluations in {summary.elapsed_s:.0f} s; "
                     f"{'ended: ' + summary.finished if summary.finished else 'not finished (resume it)'}.")]
    rows = [[name if name == "baseline" else f"best (by {k.how or 'baseline'})", ratio_text(k.speedup, k.speedup_ci),
             f"{k.roofline_percent:.0f}%" if k.roofline_percent else "-", k.hash[:12]]
            for name, k in (("baseline", base), ("best", best)) if k]
    outcome.append(("table", ["kernel", "speedup over the reference (95% CI)", "% of speed-of-light", "hash"], rows))
    if summary.noise_margin is not None:
        outcome.append(("p", f"Noise margin: a gain counts when its 95% lower end exceeds "
                             f"{1 + summary.noise_margin:.3g}x (the baseline timed against itself)."))
    if summary.gain_over_baseline:
        outcome.append(("p", f"Best over baseline: **{summary.gain_over_baseline:.3g}x** (95% lower end "
                             f"{summary.gain_low:.3g}x; the product of the paired ratios that promoted it), "
                             f"{summary.promotions} confirmed improvement(s)."))
    if summary.why_no_gain:
        outcome.append(("p", f"No confirmed improvement: {summary.why_no_gain}."))
    tokens = " / ".join(str(summary.tokens.get(k, 0)) for k in ("input", "output", "cache_read", "cache_write",
                                                               "reasoning"))
    spend = f"${summary.spend_usd:.4f}" + (f" + {summary.unpriced_turns} unpriced turns" if summary.unpriced_turns
                                           else "")
    per_gain = f"${summary.usd_per_improvement:.4f}" if summary.usd_per_improvement is not None else "-"
    cost = [("table", ["model turns", "instrument calls (device runs)",
                       "tokens (input / output / cache read / cache write / reasoning)", "spend",
                       "per confirmed improvement"],
             [[str(summary.turns), f"{summary.instrument_calls} ({summary.instrument_runs})", tokens, spend,
               per_gain]])]
    mix = [("table", ["verdict", "evaluations"], [[v, str(n)] for v, n in sorted(summary.verdicts.items())])]
    lessons = render_brief([r.lesson() for r in records if r.kind == "lesson"])
    return [("Outcome", outcome), ("Progress", [("img", p) for p in plots]), ("Timing decisions", search(summary)),
            ("Cost", cost),
            ("Lineage", [("pre", lineage(records))]), ("Steering", steering(records)), ("Verdicts", mix),
            ("Best kernel against the baseline", [("pre", best_diff(run, summary))]),
            ("Lessons", [("pre", lessons or "(none recorded)")])]


def search(summary: RunSummary) -> list[Block]:
    """Every timing decision: the A/A run that set the margin, each tuner comparison with its interval
    against the margin it had to clear, and whether it counted."""
    if not summary.decisions:
        return [("p", "No timing comparisons were made.")]
    rows = [[str(d.step), d.island, d.what, d.change, *cells(d), f"{d.seconds:.0f}" if d.seconds is not None else "-"]
            for d in summary.decisions]
    return [("p", "Each comparison times two kernels interleaved on fresh inputs; a gain counts when its 95% "
                  "lower end clears 1 + the run's noise margin (from the A/A run)."),
            ("table", ["step", "island", "what", "change", "speedup (95% CI)", "needs lower end", "result",
                       "seconds"], rows)]


FOLLOWED = 5  # evaluations shown after each hint


def steering(records: list[Record]) -> list[Block]:
    """Each hint a person gave (``kernel-mcp steer``), with the evaluations that came after it."""
    hints = [r for r in records if r.kind == "hint"]
    if not hints:
        return [("p", "No hints were given (kernel-mcp steer RUN \"text\").")]
    promoted = {r.candidate_hash for r in records if r.kind == "promotion" and r.how in ("proposal", "tune")}
    blocks: list[Block] = []
    for hint in hints:
        after = [r for r in records if r.kind == "done" and r.seq > hint.seq and r.role != "baseline"][:FOLLOWED]
        rows = [[r.island, r.idea[:80] or "-", r.verdict, ratio_text(r.speedup, r.speedup_ci),
                 "yes" if r.candidate_hash in promoted else ""] for r in after]
        blocks.append(("p", f"Hint (record {hint.seq}): {hint.text}"))
        blocks.append(("table", ["island", "idea that followed", "verdict", "speedup over the reference",
                                 "promoted"], rows) if rows else ("p", "Nothing was evaluated after it yet."))
    return blocks


def lineage(records: list[Record]) -> str:
    """Each evaluation under the incumbent it was proposed against; * promoted, restarts on their own line."""
    children: dict[str | None, list[dict]] = defaultdict(list)
    promoted = {r.candidate_hash for r in records if r.kind == "promotion"
                and r.how not in ("baseline", "hard restart") and "migrated" not in r.how}
    events: dict[str | None, list[str]] = defaultdict(list)  # restarts, shown under the incumbent of the time
    incumbents: dict[str, str] = {}
    for r in records:
        fields = r.fields()
        if r.kind == "done":
            children[fields.get("parent")].append(fields)
        elif r.kind == "promotion":
            incumbents[str(fields["island"])] = fields["candidate_hash"]
        elif r.kind == "restart":
            events[incumbents.get(str(fields["island"]))].append(
                f"-- island {fields['island']}: restart L{fields['level']} ({str(fields.get('why', ''))[:80]})")
    lines: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        for event in events.pop(parent, []):
            lines.append("  " * depth + event)
        for child in children.get(parent, []):
            key = child["candidate_hash"]
            mark = "*" if key in promoted else " "
            speedup = ratio_text(child.get("speedup"), child.get("speedup_ci"))
            lines.append(f"{'  ' * depth}{mark} {key[:10]} [{child.get('role')}, island {child.get('island')}] "
                         f"{child.get('verdict')}, {speedup}  {str(child.get('idea', ''))[:70]}")
            if key != parent:
                walk(key, depth + 1)
    walk(None, 0)
    return "\n".join(lines) or "(no evaluations)"


def best_diff(run: Path, summary: RunSummary) -> str:
    if not (summary.best and summary.baseline) or summary.best.hash == summary.baseline.hash:
        return "(the best kernel is the baseline)"
    old, new = Path(summary.baseline.file).read_text(), Path(summary.best.file).read_text()
    return ("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "baseline", "best"))
            or "(identical)")


def to_markdown(title: str, parts: list[tuple[str, list[Block]]]) -> str:
    out = [f"# {title}"]
    for heading, blocks in parts:
        out.append(f"\n## {heading}\n")
        for block in blocks:
            if block[0] == "p":
                out.append(block[1] + "\n")
            elif block[0] == "table":
                out += ["| " + " | ".join(block[1]) + " |", "|" + "---|" * len(block[1])]
                out += ["| " + " | ".join(row) + " |" for row in block[2]] + [""]
            elif block[0] == "pre":
                out.append("```\n" + block[1] + "\n```\n")
            elif block[0] == "img":
                out.append(f"![{block[1]}]({block[1]})\n")
    return "\n".join(out) + "\n"


def inline_html(text: str) -> str:
    """The inline Markdown the report's paragraphs use (**bold**, `code`) as HTML, the rest escaped."""
    text = html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", text)


def to_html(title: str, parts: list[tuple[str, list[Block]]]) -> str:
    e = html.escape
    out = [f"<!doctype html><meta charset='utf-8'><title>{e(title)}</title>",
           "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}pre{background:#f6f6f6;padding:1em;"
           "overflow:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em}</style>",
           f"<h1>{e(title)}</h1>"]
    for heading, blocks in parts:
        out.append(f"<h2>{e(heading)}</h2>")
        for block in blocks:
            if block[0] == "p":
                out.append(f"<p>{inline_html(block[1])}</p>")
            elif block[0] == "table":
                out.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in block[1]) + "</tr>"
                           + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in block[2])
                           + "</table>")
            elif block[0] == "pre":
                out.append(f"<pre>{e(block[1])}</pre>")
            elif block[0] == "img":
                out.append(f"<img src='{e(block[1])}' alt='{e(block[1])}' style='max-width:100%'>")
    return "\n".join(out) + "\n"


def report(run: str | Path) -> Path:
    """Write RUN/report/{report.md, report.html, *.png}; the Markdown file's path."""
    run = Path(run)
    if not (run / "run.json").is_file():
        raise FileNotFoundError(f"{run} holds no run (no run.json)")
    summary, records = summarize(run), read(run / "journal.jsonl")
    out = run / "report"
    out.mkdir(exist_ok=True)
    plots = plot_progress(records, out)
    parts = sections(run, summary, records, plots)
    title = f"kernel-mcp run {run.name}"
    (out / "report.html").write_text(to_html(title, parts))
    (out / "report.md").write_text(to_markdown(title, parts))
    return out / "report.md"
