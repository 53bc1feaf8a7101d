"""Rich tables for people at a terminal; agents read the ``--json`` form of the same results."""
from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table

from kernel_mcp.results import CheckResult, CompileResult, Finding, ProfileResult, RooflineResult, Timing

PROSE_MIN = 6  # a prose column is narrowed to this (its long words folded) before any value is folded
VALUES_FOLD = 3  # the rung of _fit's ladder where values start to fold


class FitTable(Table):
    """A table that fits the terminal without cutting a value. rich's own fitting narrows the widest columns
    first, whatever they hold, and its default overflow cuts a cell to "…": on 80 columns a history showed
    ``0.0088…``. Here no cell is ever cut (overflow "fold"), and when the natural widths do not fit the
    columns are narrowed in an order that keeps values whole: first to their longest word (cells wrap
    between words), then the ``prose`` columns (notes, messages, names) further, folding their long words,
    then the padding between cells goes; only then are values folded across lines, still whole."""

    def __init__(self, *headers: str, prose: Iterable[str] = (), **kwargs):
        super().__init__(**kwargs)
        for header in headers:
            self.add_column(header, overflow="fold")
        prose = set(prose)
        self.prose = [header in prose for header in headers]
        self.roomy = self.padding  # as asked; dropped only where values would fold otherwise

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        sizes = self._natural(console, options)
        self.padding = self.roomy
        widths, rung = _fit(sizes, self.prose, options.max_width - self._overhead())
        if rung >= VALUES_FOLD:  # cells that touch the borders read better than a number over two lines
            self.padding = 0
            widths, _ = _fit(sizes, self.prose, options.max_width - self._overhead())
        for column, width in zip(self.columns, widths or [None] * len(self.columns)):
            column.width = width
        yield from super().__rich_console__(console, options)

    def _overhead(self) -> int:
        """Borders and padding: the characters of a row that are not content."""
        borders = (len(self.columns) + 1 if self.show_edge else len(self.columns) - 1) if self.box else 0
        return borders + len(self.columns) * (self.padding[1] + self.padding[3])

    def _natural(self, console: Console, options: ConsoleOptions) -> list[tuple[int, int]]:
        """Per column: its longest word among the cells (narrower, a value would fold) and its widest line,
        header included (the header may fold: it is no value)."""
        sizes = []
        for column in self.columns:
            cells = [Measurement.get(console, options, cell) for cell in column.cells]
            header = Measurement.get(console, options, column.header).maximum
            sizes.append((max((m.minimum for m in cells), default=1),
                          max([header, *(m.maximum for m in cells)])))
        return sizes


def _fit(sizes: list[tuple[int, int]], prose: list[bool], room: int) -> tuple[list[int] | None, int]:
    """Content widths that fit ``room``, and the rung of the ladder that gave them: 0, the natural widths fit
    (None: rich lays them out); else the first of these floors that fits, each column cut from its natural
    width down to a common level but never below its floor: 1, every word whole; 2, prose folded; 3, values
    folded too; 4, everything folded."""
    if sum(high for _, high in sizes) <= room:
        return None, 0
    shortest = [min(low, PROSE_MIN) for low, _ in sizes]
    ladder = ([low for low, _ in sizes],
              [short if p else low for short, p, (low, _) in zip(shortest, prose, sizes)],
              [short if p else 1 for short, p in zip(shortest, prose)],
              [1] * len(sizes))
    for rung, floors in enumerate(ladder, 1):
        floors = [min(floor, high) for floor, (_, high) in zip(floors, sizes)]
        if sum(floors) <= room:
            return _level([high for _, high in sizes], floors, room), rung
    return None, len(ladder) + 1  # not one character a column: nothing can help, rich does what it can


def _level(widths: list[int], floors: list[int], room: int) -> list[int]:
    """``widths`` cut down to the highest common level whose total fits ``room``, none below its floor; the
    few characters left over go to the columns that were cut, left to right."""
    level = max(widths)
    while level > 0 and sum(max(f, min(w, level)) for w, f in zip(widths, floors)) > room:
        level -= 1
    cut = [max(f, min(w, level)) for w, f in zip(widths, floors)]
    spare = room - sum(cut)
    for i, (w, c) in enumerate(zip(widths, cut)):
        if spare and c < w:
            cut[i], spare = c + 1, spare - 1
    return cut


def _findings(findings: list[Finding], console: Console) -> None:
    for finding in findings:
        console.print(f"[yellow]{finding.severity}[/] {finding.code}: {finding.message[:2000]}")


def print_check(result: CheckResult, console: Console) -> None:
    colour = "green" if result.passed else "red"
    console.print(f"[bold {colour}]{result.verdict}[/]  {result.problem} <- {result.candidate} "
                  f"on {result.device} ({result.seconds:.1f} s)")
    if result.cause and not result.passed:
        console.print(f"[red]cause:[/] {result.cause}")
    table = FitTable("case", "result", "max err / bound", "norm err", "detail", prose=("case", "result", "detail"))
    for case in result.cases:
        worst = max(case.comparisons, key=lambda c: c.max_error_in_bounds, default=None)
        failure = f"{case.failure} ({case.cause})" if case.cause else case.failure
        table.add_row(case.name, "[green]ok[/]" if case.passed else f"[red]{failure}[/]",
                      f"{worst.max_error_in_bounds:.3g}" if worst else "-",
                      f"{worst.norm_error:.2e}" if worst else "-", (case.message or "")[:160])
    if result.cases:
        console.print(table)
    for verdict in result.benchmark:
        said = "not reached" if verdict.passed is None else "pass" if verdict.passed else \
            f"fail ({verdict.failed} of {verdict.cases} cases)"
        worst = f", up to {verdict.worst:.3g}x its tolerance" if verdict.worst is not None else ""
        console.print(f"[dim]{verdict.rule} would say:[/] {said}{worst}"
                      + (f" [yellow]({verdict.why})[/]" if verdict.why else ""))
    _findings(result.findings, console)
    memory = result.memory
    if memory and memory.judge_peak_bytes is not None and memory.reference_peak_bytes:
        console.print(f"[dim]device memory: the judge peaked at {memory.judge_peak_bytes / 2**30:.2f} GiB; the "
                      f"reference alone at {memory.reference_peak_bytes / 2**30:.2f} GiB[/dim]")


def duration(ms: float) -> str:
    """A time in the unit that fits it: 12.3 us, 4.56 ms, 32.3 s."""
    if ms < 1.0:
        return f"{ms * 1e3:.3g} us"
    return f"{ms:.3g} ms" if ms < 1000.0 else f"{ms / 1e3:.3g} s"


def _us(t: Timing | None) -> str:
    if t is None:
        return "-"
    ci = f"+-{t.rel_ci_half_width * 100:.1f}%" if t.rel_ci_half_width is not None else "CI n/a"
    return f"{duration(t.median_ms)} {ci} (n={t.samples})"


def _params(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items() if k != "seed")


def print_profile(result: ProfileResult, console: Console) -> None:
    colour = "green" if result.passed and result.trusted else "red"
    speed = f"speedup {result.speedup:.3f}x [{result.speedup_ci[0]:.3f}, {result.speedup_ci[1]:.3f}]" \
        if result.speedup else "no speedup credited"
    console.print(f"[bold {colour}]{result.verdict}[/]  {result.problem} <- {result.candidate} on "
                  f"{result.device_name or result.device}: {speed} ({result.seconds:.1f} s)")
    # device busy time exists on GPUs only (CUPTI): no column for it on a CPU run
    busy = any(t and t.kernel_ms for s in result.shapes for t in (s.candidate, s.reference))
    table = FitTable("shape", "candidate", "reference", "speedup (95% CI)", *(["kernel (cand/ref)"] if busy else []),
                     "note", prose=("note",))
    for shape in result.shapes:
        kernel = "/".join(duration(t.kernel_ms) if t and t.kernel_ms else "-"
                          for t in (shape.candidate, shape.reference))
        speed = f"{shape.speedup:.3f} [{shape.speedup_ci[0]:.3f}, {shape.speedup_ci[1]:.3f}]" if shape.speedup else "-"
        table.add_row(_params(shape.params), _us(shape.candidate), _us(shape.reference), speed,
                      *([kernel] if busy else []), shape.note[:80])
    if result.shapes:
        console.print(table)
    if result.shapes and result.shapes[0].candidate:
        console.print(f"[dim]times: {result.shapes[0].candidate.clock}, median with 95% CI"
                      f"{'; kernel: device busy time from CUPTI' if busy else ''}[/dim]")
    _findings(result.findings, console)


def print_roofline(result: RooflineResult, console: Console) -> None:
    if result.message:
        console.print(f"[yellow]{result.message}[/]")
    if result.bandwidth_bytes_per_s:
        console.print(f"{result.device_name}: {result.bandwidth_bytes_per_s / 1e12:.2f} TB/s, "
                      f"{result.peak_flops_per_s / 1e12:.1f} TFLOP/s ({result.unit}); {result.ceilings_source}")
    table = FitTable("shape", "FLOP/B", "who", "us", "TFLOP/s", "GB/s", "% of roof", "bound", "headroom us",
                     prose=("bound",))
    for shape in result.shapes:
        for p in shape.points:
            table.add_row(_params(shape.params), f"{shape.intensity:.2f}",
                          p.who, f"{p.time_ms * 1e3:.2f}", f"{p.tflops:.2f}", f"{p.gbytes_per_s:.0f}",
                          f"{p.percent_of_bound:.1f}", p.bound, f"{p.headroom_ms * 1e3:.2f}")
    if result.shapes:
        console.print(table)
    if result.png:
        console.print(f"chart: {result.png}")
    print_profile(result.profile, console)


def _known(value: object) -> str:
    """A figure the build may not report (a build that failed, a target without it): '-', never 'None'."""
    return "-" if value is None else str(value)


def _registers(build) -> str:
    """NVIDIA's one register count, or AMD's VGPR/AGPR/SGPR; '-' where the build reports none."""
    if build.registers is not None:
        return str(build.registers)
    amd = (build.vgprs, build.agprs, build.sgprs)
    return "-" if all(x is None for x in amd) else "/".join(_known(x) for x in amd)


def print_compile(result: CompileResult, console: Console) -> None:
    colour = "green" if result.ok else "red"
    console.print(f"[bold {colour}]{'ok' if result.ok else 'failed'}[/]  {result.candidate} ({result.language}) for "
                  f"{', '.join(result.targets)}{' (cached)' if result.cached else ''} ({result.seconds:.2f} s)")
    table = FitTable("kernel", "target", "ok", "regs (VGPR/AGPR/SGPR)", "spill B", "shared B", "warps x stages",
                     "occupancy", "instructions", prose=("kernel", "occupancy", "instructions"))
    for b in result.builds:
        occ = f"{b.occupancy.percent:.0f}% ({b.occupancy.limited_by})" if b.occupancy else "-"
        top = ", ".join(f"{k} {v}" for k, v in sorted(b.instructions.items(), key=lambda kv: -kv[1])[:5])
        config = " ".join(f"{k}={v}" for k, v in b.constants.items())
        table.add_row(f"{b.kernel} {config}".strip(), b.target, "[green]yes[/]" if b.ok else "[red]no[/]",
                      _registers(b), _known(b.spill_bytes), _known(b.shared_bytes),
                      f"{b.num_warps} x {b.num_stages}" if b.num_warps else "-", occ, top)
    if result.builds:
        console.print(table)
    for b in result.builds:
        if not b.ok:
            console.print(f"[red]{b.kernel} on {b.target}[/] {b.file}:{b.line}\n{b.error[:1500]}")
        if b.asm:
            console.print(f"[dim]{b.kernel} on {b.target}, main loop:[/]\n{b.asm}")
    _findings(result.findings, console)
