"""The unattended loop on one island (islands, CLI agents and the ``optimize`` command come next): a
baseline, then proposals from an agent, each evaluated once, promoted only on a significant, confirmed
gain, the stall ladder deciding when to nudge, start a fresh session, restart from scratch, or stop.

Every decision goes through the run folder's journal first (``run_folder.py``), so a run killed at any
instant resumes where it was: an evaluation whose result was cached is never run again, spend is never
reset, the baseline is never added twice.

Agents: a provider spec (``anthropic:MODEL``, ``openai:MODEL``, ``openai-compatible:URL#MODEL``; the
``tune`` agent, agent/tune, is wired in with the ``optimize`` command), offered one tool, ``propose``: an
edit (search/replace blocks or a whole file) to the incumbent, with the idea behind it; the loop applies
it, evaluates it and answers with the numbers. An edit that does not apply, or an exact repeat of an
evaluated candidate, costs no device time.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from kernel_mcp.agent import decide
from kernel_mcp.agent.compare import compare_files
from kernel_mcp.agent.edits import apply_edit
from kernel_mcp.agent.lessons import Lesson, render_brief
from kernel_mcp.agent.providers.base import ToolSpec, Turn
from kernel_mcp.agent.run_folder import RunFolder, candidate_hash
from kernel_mcp.assets import load_prompt
from kernel_mcp.results import ProfileSettings
from kernel_mcp.stall import RunFacts
from kernel_mcp.stats import Ratio

PROPOSE = ToolSpec(name="propose", description=(
    "Propose a new version of the kernel: `edit` holds SEARCH/REPLACE blocks against the current best "
    "version (or one fenced block with the whole file); `idea` says in a sentence what it should improve "
    "and why. The change is checked and timed; the answer gives the verdict and the speedup."),
    parameters={"type": "object", "properties": {"edit": {"type": "string"}, "idea": {"type": "string"}},
                "required": ["edit", "idea"]})


class Budget(BaseModel):
    evaluations: int | None = None
    seconds: float | None = None
    usd: float | None = None


class Optimizer:
    def __init__(self, folder: RunFolder, problem: str | Path, start: str | Path, agent: str, budget: Budget,
                 device: str = "auto", budget_s: float = 10.0, shapes: str = "benchmarks", runner=None,
                 open_session: Callable | None = None, say: Callable[[str], None] | None = None):
        self.folder, self.problem, self.agent, self.budget = folder, Path(problem), agent, budget
        self.device, self.budget_s, self.shapes, self.runner = device, budget_s, shapes, runner
        self.workspace = folder.path / "workspace"
        self.workspace.mkdir(exist_ok=True)
        self.start_source = Path(start).read_text()
        self.say = say or (lambda _: None)
        if open_session is None:
            from kernel_mcp.agent.providers import open_session
        self.open_session = open_session
        self.started = time.monotonic()

    # --- state, from the journal ---------------------------------------------------------------------
    @property
    def state(self):
        return self.folder.state

    def incumbent_source(self) -> str:
        key = self.state.incumbents.get("0")
        return self.source_of(key) if key else self.start_source

    def path_of(self, key: str) -> Path:
        return self.workspace / "candidates" / f"{key}.py"

    def source_of(self, key: str) -> str:
        return self.path_of(key).read_text()

    def file_of(self, source: str) -> tuple[str, Path]:
        key = candidate_hash(source.encode())
        path = self.path_of(key)
        path.parent.mkdir(exist_ok=True)
        if not path.exists():
            path.write_text(source)
        return key, path

    # --- one evaluation, durable ---------------------------------------------------------------------
    def evaluate(self, source: str, role: str, idea: str = "") -> tuple[str, dict]:
        """Evaluate ``source`` once (intent, the evaluate tool, cache, done): its key and result summary."""
        from kernel_mcp.tools.evaluate import evaluate
        key, path = self.file_of(source)
        if key in self.state.evaluated:
            return key, self.state.evaluated[key]
        if key not in self.state.pending:
            self.folder.record("intent", candidate_hash=key, role=role, island="0", idea=idea)
        result = self.folder.cached(key)
        if result is None:
            self.say(f"evaluating {role} {key[:8]}")
            r = evaluate(self.workspace, self.problem, path, device=self.device, budget_s=self.budget_s,
                         author=self.agent, note=idea, shapes=self.shapes, runner=self.runner)
            result = {"verdict": r.verdict, "passed": r.passed, "trusted": r.trusted, "speedup": r.speedup,
                      "speedup_ci": r.snapshot.speedup_ci, "roofline_percent": r.snapshot.roofline_percent,
                      "snapshot": r.snapshot.id}
            self.folder.cache(key, result)
        self.folder.record("done", candidate_hash=key, role=role, island="0", **result)
        return key, result

    def better(self, key: str) -> Ratio | None:
        """The candidate against the incumbent, timed interleaved, then again in a fresh run on new inputs
        (the winner's curse): the second speedup when both show a significant gain, else None."""
        incumbent, candidate = self.path_of(self.state.incumbents["0"]), self.path_of(key)
        settings = ProfileSettings(budget_s=self.budget_s, shapes=self.shapes)
        ratio = None
        for _ in range(2):
            ratio = compare_files(self.problem, incumbent, candidate, self.device, settings, self.runner)
            if ratio is None or not decide.significant(ratio):
                return None
        return ratio

    def promote(self, key: str, speedup: Ratio | None) -> None:
        self.folder.record("promotion", island="0", candidate_hash=key,
                           speedup=[speedup.value, speedup.lo, speedup.hi] if speedup else None)

    # --- the run -------------------------------------------------------------------------------------
    def run(self) -> str:
        if self.state.finished:
            return self.state.finished
        if self.state.baseline_hash is None or "0" not in self.state.incumbents:
            key, _ = self.evaluate(self.start_source, "baseline")
            if "0" not in self.state.incumbents:
                self.promote(key, None)
        for key, intent in list(self.state.pending.items()):  # in flight when the last process died
            _, summary = self.evaluate(self.source_of(key), intent.get("role", "candidate"), intent.get("idea", ""))
            self.judge(key, summary, intent.get("idea", ""))
        reason = self.converse()
        self.folder.record("finished", reason=reason)
        return reason

    def out_of_budget(self) -> str:
        b, s = self.budget, self.state
        if b.evaluations is not None and len(s.evaluated) >= b.evaluations:
            return f"budget: {len(s.evaluated)} evaluations"
        if b.seconds is not None and time.monotonic() - self.started >= b.seconds:
            return f"budget: {b.seconds:.0f} s"
        if b.usd is not None and s.spend_usd >= b.usd:
            return f"budget: ${s.spend_usd:.2f}"
        return ""

    def converse(self) -> str:
        from kernel_mcp.agent.conversation import Conversation
        return Conversation(self).run()

    def facts(self) -> RunFacts:
        return RunFacts(spend_usd=self.state.spend_usd, budget_usd=self.budget.usd)

    def brief(self) -> str:
        lessons = [Lesson.model_validate(r.model_extra) for r in self.folder.log.of_kind("lesson")]
        return render_brief(lessons)

    def record_turn(self, turn: Turn) -> None:
        self.folder.record("turn", island="0", model=turn.model, usage=turn.usage.model_dump(),
                           cost_usd=turn.cost_usd, reported_cost_usd=turn.reported_cost_usd)

    def system_prompt(self) -> str:
        return load_prompt("system").format(problem=self.problem.name)

    def propose(self, edit: str, idea: str) -> tuple[str, bool]:
        """Apply, evaluate, decide; the answer to the model and whether it was an error."""
        applied = apply_edit(self.incumbent_source(), edit)
        if not applied.ok:
            return "the edit was not applied: " + "; ".join(applied.errors), True
        key = candidate_hash(applied.source.encode())
        if key in self.state.evaluated:
            earlier = self.state.evaluated[key]
            return f"this exact kernel was evaluated before: {earlier['verdict']}; propose something different", True
        key, summary = self.evaluate(applied.source, "candidate", idea)
        return self.judge(key, summary, idea), False

    def judge(self, key: str, summary: dict, idea: str) -> str:
        """After a candidate's evaluation: promote it on a confirmed significant gain over the incumbent,
        record the lesson; the answer for the model."""
        text = f"verdict {summary['verdict']}"
        if summary["speedup"]:
            text += f", speedup over the reference {summary['speedup']:.3g}x"
        verdict, ratio = "failed", None
        if summary["passed"] and summary["trusted"]:
            ratio = self.better(key)
            verdict = "worked" if ratio else "no gain"
            text += (f"; {ratio.value:.3g}x over the best so far [{ratio.lo:.3g}, {ratio.hi:.3g}]: now the best"
                     if ratio else "; not significantly faster than the best so far: the best is unchanged")
            if ratio:
                self.promote(key, ratio)
        self.folder.record("lesson", **Lesson(hypothesis=idea, change=idea[:80], verdict=verdict,
                                              speedup=ratio.value if ratio else None,
                                              speedup_ci=[ratio.lo, ratio.hi] if ratio else None,
                                              failure="" if summary["passed"] else summary["verdict"],
                                              evaluation=len(self.state.evaluated)).model_dump())
        return text
