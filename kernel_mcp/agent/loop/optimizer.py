"""The unattended loop (``kernel-mcp optimize``): a baseline, the tune agent on it, then proposals from a
model on one or more islands, each evaluated once, promoted only on a significant, confirmed gain, the
stall ladder deciding when to nudge, start a fresh session, restart from scratch, or stop.

Every decision goes through the run folder's journal first (``run/folder.py``), so a run killed at any
instant resumes where it was: an evaluation whose result was cached is never run again, spend is never
reset, the baseline is never added twice.

Agents: ``tune`` (agent/tune: no model; its search runs on the baseline and after every structural win of a
model) or a provider spec (``anthropic:MODEL``, ``openai:MODEL``, ``openai-compatible:URL#MODEL``) offered
one tool, ``propose``: an edit (search/replace blocks or a whole file) to its island's incumbent, with the
idea behind it; the loop applies it, evaluates it and answers with the numbers. An edit that does not
apply, or a repeat of an evaluated candidate (the same syntax tree), costs no device time.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from kernel_mcp.agent import decide
from kernel_mcp.agent.compare import noise_margin
from kernel_mcp.agent.edits import apply_edit
from kernel_mcp.agent.loop.feedback import feedback_of
from kernel_mcp.agent.loop.islands import run_islands
from kernel_mcp.agent.loop.lessons import render_brief
from kernel_mcp.agent.loop.promotion import decide_promotion
from kernel_mcp.agent.loop.statement import problem_statement
from kernel_mcp.agent.loop.tune_step import promote_winner, tune_incumbent
from kernel_mcp.agent.providers import open_session as open_model_session
from kernel_mcp.agent.providers.base import Turn
from kernel_mcp.agent.run.budget import Budget
from kernel_mcp.agent.run.facts import epochs_without_gain
from kernel_mcp.agent.run.folder import RunFolder, candidate_hash, write_once
from kernel_mcp.agent.run.records import Lesson, Outcome
from kernel_mcp.agent.tune.params import change_between
from kernel_mcp.files import load_prompt
from kernel_mcp.history.novelty import structure_hash
from kernel_mcp.history.stall import RunFacts
from kernel_mcp.problem import load_problem
from kernel_mcp.results import ProfileSettings
from kernel_mcp.stats import Ratio
from kernel_mcp.tools._request import evaluate_request
from kernel_mcp.tools.evaluate import evaluate


class Optimizer:
    def __init__(self, folder: RunFolder, problem: str | Path, start: str | Path, agent: str, budget: Budget,
                 device: str = "auto", budget_s: float = 10.0, shapes: str = "benchmarks", runner=None,
                 open_session: Callable | None = None, say: Callable[[str], None] | None = None,
                 tune: bool = True, until_sol: float | None = None):
        self.folder, self.agent, self.budget = folder, agent, budget
        self.problem = load_problem(problem)  # once per run: every instrument call below is handed the object
        self.device, self.budget_s, self.shapes, self.runner = device, budget_s, shapes, runner
        self.tune, self.until_sol = tune, until_sol
        self.islands = [str(i) for i in range(max(1, folder.config.islands))]
        self.candidates = folder.path / "workspace" / "candidates"
        self.candidates.mkdir(parents=True, exist_ok=True)
        self.start_source = Path(start).read_text()
        self.say = say or (lambda _: None)
        self.open_session = open_session or open_model_session
        self._evaluating: dict[str, threading.Lock] = {}  # one evaluation per candidate, whichever island asks
        self._guard = threading.Lock()
        self.tuning: set[str] = set()  # incumbents being tuned now (by any island)

    # --- state, from the journal ---------------------------------------------------------------------
    @property
    def state(self):
        return self.folder.state

    def workspace(self, island: str) -> Path:
        """The island's snapshot store (git): its own history, so its stall signals are its own."""
        path = self.folder.path / "workspace" / f"island-{island}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def incumbent(self, island: str) -> str:
        return self.state.incumbents[island]

    def incumbent_source(self, island: str) -> str:
        key = self.state.incumbents.get(island)
        return self.source_of(key) if key else self.start_source

    def path_of(self, key: str) -> Path:
        return self.candidates / f"{key}.py"

    def source_of(self, key: str) -> str:
        return self.path_of(key).read_text()

    def file_of(self, source: str) -> tuple[str, Path]:
        key = candidate_hash(source.encode())
        path = self.path_of(key)
        write_once(path, source.encode())
        return key, path

    # --- one evaluation, durable ---------------------------------------------------------------------
    def evaluate(self, source: str, role: str, island: str, idea: str = "") -> tuple[str, Outcome]:
        """Evaluate ``source`` once (intent, the evaluate tool, cache, done): its key and result summary."""
        key, path = self.file_of(source)
        with self._guard:
            lock = self._evaluating.setdefault(key, threading.Lock())
        with lock:
            if key in self.state.evaluated:
                return key, self.state.evaluated[key].outcome()
            if key not in self.state.pending:
                self.folder.record("intent", candidate_hash=key, role=role, island=island, idea=idea,
                                   parent=self.state.incumbents.get(island), structure=structure_hash(source))
            cached = self.folder.cached(key)
            result = Outcome.model_validate(cached) if cached is not None else self._measure(path, role, island, idea)
            if cached is None:
                self.folder.cache(key, result.model_dump())
            intent = self.state.pending.get(key, {})
            self.folder.record("done", candidate_hash=key, role=role, island=island, idea=idea,
                               parent=intent.get("parent"), structure=intent.get("structure"), **result.model_dump())
        return key, result

    def _measure(self, path: Path, role: str, island: str, idea: str) -> Outcome:
        self.say(f"island {island}: evaluating {role} {path.stem[:8]}")
        local = self.workspace(island) / "candidates" / path.name  # the snapshot store takes files inside it
        local.parent.mkdir(exist_ok=True)
        local.write_bytes(path.read_bytes())
        r = evaluate(evaluate_request(root=self.workspace(island), problem=self.problem.path, candidate=local,
                                      device=self.device, budget_s=self.budget_s, shapes=self.shapes,
                                      author=self.agent, note=idea), self.runner)
        return Outcome(verdict=r.verdict, passed=r.passed, trusted=r.trusted, speedup=r.speedup,
                       speedup_ci=r.snapshot.speedup_ci, roofline_percent=r.snapshot.roofline_percent,
                       snapshot=r.snapshot.id, feedback=feedback_of(r))

    @property
    def delta(self) -> float:
        """The margin a gain must clear: from the run's A/A timing, 1% until it is measured."""
        return self.state.delta if self.state.delta is not None else decide.MIN_DELTA

    def measure_noise(self) -> None:
        """Once per run, before any comparison: the baseline timed against itself (delta from an A/A
        run); kept in the run folder's cache first, so a kill before its record re-times nothing."""
        if self.state.delta is not None or self.out_of_budget():  # nothing left to compare: no margin needed
            return
        key = f"noise-{self.state.baseline_hash}"
        found = self.folder.cached(key)
        if found is None:
            self.say("timing the baseline against itself (the run's noise margin)")
            settings = ProfileSettings(budget_s=self.budget_s, shapes=self.shapes)
            ratio, delta = noise_margin(self.problem, self.path_of(self.state.baseline_hash), self.device, settings,
                                        self.runner)
            found = {"ratio": [ratio.value, ratio.lo, ratio.hi] if ratio else None, "delta": delta}
            self.folder.cache(key, found)
        self.folder.record("noise", **found)

    def promote(self, key: str, island: str, speedup: Ratio | list[float] | None, how: str = "") -> None:
        if isinstance(speedup, Ratio):
            speedup = [speedup.value, speedup.lo, speedup.hi]
        self.folder.record("promotion", island=island, candidate_hash=key, speedup=speedup, how=how,
                           previous=self.state.incumbents.get(island))

    # --- the run -------------------------------------------------------------------------------------
    def run(self) -> str:
        if self.state.finished:
            return self.state.finished
        if self.state.baseline_hash is None or len(self.state.incumbents) < len(self.islands):
            key, summary = self.evaluate(self.start_source, "baseline", "0")
            if not summary.believed:  # nothing could ever be shown faster than it
                reason = f"stop: the starting kernel did not pass: {summary.verdict}"
                self.folder.record("finished", reason=reason)
                return reason
            for island in self.islands:
                if island not in self.state.incumbents:
                    self.promote(key, island, None, how="baseline")
        self.measure_noise()
        self.finish_what_was_in_flight()
        reason = self.out_of_budget() or self.search()
        self.folder.record("finished", reason=reason)
        return reason

    def finish_what_was_in_flight(self) -> None:
        """After a kill: evaluations without a result, candidates evaluated but never judged, a tune's winner
        recorded but not promoted. (A new run has none of these.)"""
        for key, intent in list(self.state.pending.items()):
            self.evaluate(self.source_of(key), intent.get("role", "candidate"), intent.get("island", "0"),
                          intent.get("idea", ""))
        for key, done in list(self.state.evaluated.items()):
            if done.role == "candidate" and done.passed is not None and key not in self.state.judged:
                self.judge(done.island, key, done.outcome(), done.idea)
        for island in self.islands:
            winner = self.state.tuned.get(self.incumbent(island))
            if winner and winner != self.incumbent(island) and winner in self.state.evaluated:
                tuned = next(r.fields() for r in reversed(self.folder.log.of_kind("tuned"))
                             if r.start_hash == self.incumbent(island))
                promote_winner(self, island, winner, tuned["speedup"], change_between(tuned["start"], tuned["best"]))

    def search(self) -> str:
        if self.tune or self.agent == "tune":
            tune_incumbent(self, "0")
            tuned = self.incumbent("0")
            for island in self.islands[1:]:  # the tuned baseline is every island's start (not a later win's)
                if self.incumbent(island) == self.state.baseline_hash and tuned != self.state.baseline_hash:
                    self.promote(tuned, island, None, how="tuned start")
            for island in self.islands[1:]:  # a tune after a win, cut short by a kill
                tune_incumbent(self, island)
        if self.agent == "tune":
            return self.out_of_budget() or "tuned: the search over the kernel's parameters is done"
        return run_islands(self)

    def start_of_epoch(self) -> str:
        """What a hard restart goes back to: the baseline, as tuned if it was."""
        return self.state.tuned.get(self.state.baseline_hash) or self.state.baseline_hash

    def out_of_budget(self) -> str:
        b, s = self.budget, self.state
        if b.evaluations is not None and len(s.evaluated) + s.probes >= b.evaluations:  # instrument runs count
            return f"budget: {len(s.evaluated) + s.probes} evaluations"
        if b.seconds is not None and self.elapsed_s() >= b.seconds:
            return f"budget: {b.seconds:.0f} s"
        if b.usd is not None and s.spend_usd >= b.usd:
            return f"budget: ${s.spend_usd:.2f}"
        if self.until_sol is not None:  # --until-sol: any island's best at that share of speed-of-light
            reached = max((s.evaluated[k].roofline_percent or 0.0 for k in s.incumbents.values() if k in s.evaluated),
                          default=0.0)
            if reached >= 100 * self.until_sol:
                return f"speed-of-light: the best is at {reached:.0f}% (asked for {100 * self.until_sol:.0f}%)"
        return ""

    def elapsed_s(self) -> float:
        """Active seconds over every process that drove the run, up to now."""
        return self.state.elapsed_s()

    def facts(self, island: str = "0") -> RunFacts:
        """What only the run knows, for the ladder of ``island`` (kernel_mcp/history/stall.py)."""
        return RunFacts(spend_usd=self.state.spend_usd, budget_usd=self.budget.usd, until_sol=self.until_sol,
                        epochs_without_gain=epochs_without_gain(self.folder.log.records, island))

    def brief(self) -> str:
        lessons = [r.lesson() for r in self.folder.log.of_kind("lesson")]
        return render_brief(lessons)

    def record_turn(self, turn: Turn, island: str) -> None:
        self.folder.record("turn", island=island, model=turn.model, usage=turn.usage.model_dump(),
                           cost_usd=turn.cost_usd, reported_cost_usd=turn.reported_cost_usd)

    def system_prompt(self) -> str:
        baseline = self.state.evaluated.get(self.state.baseline_hash)
        statement = problem_statement(self.problem, self.shapes, baseline.feedback if baseline else "")
        return load_prompt("system").format(problem=self.problem.name, statement=statement)

    def propose(self, island: str, edit: str, idea: str) -> tuple[str, bool]:
        """Apply, evaluate, decide; the answer to the model and whether it was an error."""
        applied = apply_edit(self.incumbent_source(island), edit)
        if not applied.ok:
            return "the edit was not applied: " + "; ".join(applied.errors), True
        structure = structure_hash(applied.source)
        with self.folder.lock:  # other islands add results meanwhile
            earlier = next((d for d in self.state.evaluated.values() if d.structure == structure), None)
        if earlier is not None:  # the same syntax tree (comments, names aside): its result is known
            return (f"this kernel was evaluated before (the same code up to comments and names): "
                    f"{earlier.verdict}; propose something different"), True
        key, summary = self.evaluate(applied.source, "candidate", island, idea)
        return self.judge(island, key, summary, idea), False

    def judge(self, island: str, key: str, summary: Outcome, idea: str) -> str:
        """After a candidate's evaluation: promote it on a confirmed significant gain over the island's
        incumbent that holds on shapes it was never shown (then tune it), record the lesson; the answer for
        the model."""
        text = summary.feedback or f"verdict: {summary.verdict}"  # a run folder from before feedback was kept
        decision = decide_promotion(self, island, key, summary)
        text += f"\ndecision: {decision.said}" if decision.said else ""
        ratio = decision.ratio
        if ratio:  # the promotion first: a kill before the lesson leaves it promoted, and judged again as such
            self.promote(key, island, ratio, how="proposal")
        self.folder.record("lesson", island=island, candidate_hash=key, **Lesson(
            hypothesis=idea, change=idea[:80], verdict=decision.verdict, speedup=ratio.value if ratio else None,
            speedup_ci=[ratio.lo, ratio.hi] if ratio else None, failure=decision.failure,
            evaluation=len(self.state.evaluated)).model_dump())
        if ratio and self.tune:
            tuned = tune_incumbent(self, island)
            if tuned:
                text += f"; then its parameters were tuned: {tuned}"
        return text
