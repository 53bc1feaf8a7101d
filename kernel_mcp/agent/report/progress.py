"""The live view of a run in a terminal (rich): one row per island, its incumbent's speedup over the
reference with its 95% interval, % of speed-of-light, the last verdict, and below it the run's
evaluations, spend and time, and what is happening now. Fed by the run folder's records (a listener) and
the loop's progress lines; it only reads state, so it can never change what the run decides."""
from __future__ import annotations

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from kernel_mcp.agent.run.records import Record
from kernel_mcp.agent.run.state import RunState
from kernel_mcp.views.render import FitTable
from kernel_mcp.views.summaries import ratio_text


class LiveView:
    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.state: RunState | None = None
        self.last: dict[str, str] = {}  # island -> last verdict
        self.now = ""
        self.live = Live(self._render(), console=self.console, refresh_per_second=4, transient=False)

    def __enter__(self) -> LiveView:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.now = ""
        self.live.update(self._render())
        self.live.__exit__(*exc)
        self.console.print()

    def on_record(self, record: Record, state: RunState) -> None:
        self.state = state
        fields = record.fields()
        if record.kind == "done":
            self.last[str(fields.get("island", "0"))] = fields.get("verdict", "?")
        self.live.update(self._render())

    def say(self, text: str) -> None:
        self.now = text
        self.live.update(self._render())

    def _render(self) -> Group:
        table = FitTable("island", "best (speedup over reference, 95% CI)", "% of speed-of-light", "last verdict",
                         prose=["last verdict"], title="kernel-mcp optimize", title_justify="left")
        state = self.state
        for island, key in sorted((state.incumbents if state else {}).items()):
            done = state.evaluated.get(key)
            sol = done.roofline_percent if done else None
            best = ratio_text(done.speedup, done.speedup_ci) if done else "-"
            table.add_row(island, best, f"{sol:.0f}%" if sol is not None else "-", self.last.get(island, "-"))
        totals = Text("starting", style="dim")
        if state:
            spend = f"${state.spend_usd:.2f}" + (f" (+{state.unpriced_turns} unpriced turns)"
                                                 if state.unpriced_turns else "")
            extra = (f" (+{state.probes} instrument runs)" if state.probes else "") + (
                f", {len(state.hints)} hints" if state.hints else "")
            totals = Text(f"{len(state.evaluated)} evaluations{extra}, {len(state.restarts)} restarts, {state.turns} "
                          f"model turns, {spend}, {state.elapsed_s():.0f} s", style="dim")
        return Group(table, totals, Text(self.now, style="cyan"))
