"""A batch's rows summed up: per level, fast_p against eager and against torch.compile (KernelBench's metric:
the share of candidates that are correct and more than p times faster), the verdicts' counts; a Markdown
table for the terminal and an HTML page with a row per candidate.

A speedup counts only where its timing is trusted (no integrity finding), so fast_p never credits a
kernel whose time cannot be believed; fast_0 is the share that passed.
"""
from __future__ import annotations

import html
from collections import Counter
from pathlib import Path

from kernel_mcp.batch.ledger import Judged

P_VALUES = (0.0, 1.0, 1.5, 2.0)


def fast_p(rows: list[Judged], p: float, compiled: bool = False) -> float | None:
    """Share of ``rows`` that passed and, for p > 0, were timed trusted at more than p x the baseline."""
    if not rows:
        return None
    if p == 0:
        return sum(r.passed for r in rows) / len(rows)
    speedups = [(r.speedup_compiled if compiled else r.speedup) for r in rows if r.passed and r.trusted]
    return sum(1 for s in speedups if (s or 0) > p) / len(rows)


def by_level(rows: list[Judged]) -> dict[str, list[Judged]]:
    groups: dict[str, list[Judged]] = {}
    for row in rows:
        groups.setdefault(f"level {row.level}" if row.level is not None else row.problem, []).append(row)
    return dict(sorted(groups.items()))


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def markdown(rows: list[Judged]) -> str:
    """Per level (or problem): candidates, fast_p against eager and torch.compile, verdicts other than pass."""
    head = " | ".join(f"fast_{p:g}" for p in P_VALUES)
    lines = [f"| group | candidates | {head} (eager) | fast_1 / fast_2 (torch.compile) | failures |",
             "|---|---|" + "---|" * len(P_VALUES) + "---|---|"]
    groups = by_level(rows)
    if len(groups) > 1:
        groups["all"] = rows
    for name, mine in groups.items():
        eager = " | ".join(_percent(fast_p(mine, p)) for p in P_VALUES)
        compiled = f"{_percent(fast_p(mine, 1.0, True))} / {_percent(fast_p(mine, 2.0, True))}"
        failures = Counter(r.verdict for r in mine if not r.passed)
        said = ", ".join(f"{verdict} {n}" for verdict, n in failures.most_common(6)) or "none"
        lines.append(f"| {name} | {len(mine)} | {eager} | {compiled} | {said} |")
    return "\n".join(lines)


def _ratio(value: float | None, ci: list[float] | None = None) -> str:
    if value is None:
        return ""
    return f"{value:.3g}x" + (f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else "")


def html_page(rows: list[Judged], title: str) -> str:
    """A self-contained page: the summary table, then every candidate (verdict, cause, speedups)."""
    esc = html.escape
    cells = ["<tr><th>id</th><th>problem</th><th>verdict</th><th>cause</th><th>KernelBench's rule</th>"
             "<th>x eager</th><th>x torch.compile</th><th>trusted</th><th>seconds</th></tr>"]
    for r in sorted(rows, key=lambda r: (r.level or 0, r.problem, r.id)):
        rule = "" if r.kernelbench is None else ("pass" if r.kernelbench else "fail")
        cells.append(f"<tr class=\"{'pass' if r.passed else 'fail'}\"><td>{esc(r.id)}</td><td>{esc(r.problem)}</td>"
                     f"<td>{esc(r.verdict)}</td><td>{esc(r.cause or r.error[:120])}</td><td>{rule}</td>"
                     f"<td>{_ratio(r.speedup, r.speedup_ci)}</td><td>{_ratio(r.speedup_compiled)}</td>"
                     f"<td>{'' if r.trusted is None else r.trusted}</td><td>{r.seconds:.1f}</td></tr>")
    summary = _markdown_as_html(markdown(rows))
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{esc(title)}</title><style>"
            "body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
            "tr.pass td:nth-child(3){color:#070}tr.fail td:nth-child(3){color:#a00}</style></head><body>"
            f"<h1>{esc(title)}</h1>{summary}<h2>Candidates ({len(rows)})</h2><table>{''.join(cells)}</table>"
            "</body></html>\n")


def _markdown_as_html(table: str) -> str:
    lines = [line for line in table.splitlines() if not set(line) <= set("|-")]
    rows = [[html.escape(c.strip()) for c in line.strip("|").split("|")] for line in lines]
    head = "".join(f"<th>{c}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows[1:])
    return f"<table><tr>{head}</tr>{body}</table>"


def write_summary(rows: list[Judged], folder: Path, title: str) -> tuple[Path, Path]:
    """summary.md and index.html in ``folder``."""
    md, page = folder / "summary.md", folder / "index.html"
    md.write_text(f"# {title}\n\n{markdown(rows)}\n")
    page.write_text(html_page(rows, title))
    return md, page
