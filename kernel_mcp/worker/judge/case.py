"""One case of a check, inside the judge: fresh inputs, the reference's expected outputs, one call of the
candidate, and its output judged (form, inputs left alone, values), with the benchmark's own contract beside."""
from __future__ import annotations

import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernel_mcp.results import CaseResult, CheckResult, Finding
from kernel_mcp.worker import tensors, trace
from kernel_mcp.worker.judge import causes, contract, degenerate, shapes
from kernel_mcp.worker.judge.outputs import judge_values, output_integrity, problem_check, resolve_input_refs
from kernel_mcp.worker.judge.parking import release_device_memory
from kernel_mcp.worker.judge.reference import ReferenceRuntime
from kernel_mcp.worker.judge.session import CandidateSession

KEEP_BYTES = 1 << 29  # an output kept for the determinism repeat: a larger one would outgrow the memory measured
LATE = ("the output changed after the call returned: work that writes it was left running, on a stream the "
        "caller's stream does not wait for (join side streams before returning: current_stream().wait_stream(s)) "
        "or in a thread, so a caller reading it when the call returns reads it unfinished")


@dataclass
class Case:
    name: str
    params: dict[str, Any]  # what generate_input gets (a fresh seed stays in the judge)
    shown: dict[str, Any]  # what the result shows
    signed: bool = False  # KernelBench: inputs of one sign get random signs (kernelbench.signed)
    rng_seed: int | None = None  # the RNG seed its runs start from (None: a fresh one when served)


def fresh_seed(_: str) -> int:
    return secrets.randbits(31)


def plan_cases(tests: list[dict], fresh_seeds: int, seed: Callable[[str], int] = fresh_seed) -> list[Case]:
    """Each listed test, each followed by copies with fresh secret seeds: every shape is served at least
    twice with different values, so an answer cached by pointer, shape or sampled values is caught.
    ``seed(name)``: each secret and RNG seed (fresh; a batch's checks derive theirs from its secret)."""
    cases = []
    for i, test in enumerate(tests):
        cases.append(Case(f"test {i}", dict(test), dict(test), rng_seed=seed(f"test {i} rng")))
        for j in range(fresh_seeds):
            name = f"test {i} (secret seed {j + 1})"
            cases.append(Case(name, {**test, "seed": seed(name)}, {**test, "seed": "secret"}, signed=True,
                              rng_seed=seed(f"{name} rng")))
    return cases


def random_shapes(rt: ReferenceRuntime, result: CheckResult) -> list[Case]:
    """Shapes drawn afresh in the task's ranges (taskspec.RandomShapes); one the problem refuses (its
    generate_input or reference raises) is dropped with a finding."""
    spec = rt.problem.spec.random_shapes
    if spec is None or not rt.problem.tests:
        return []
    cases, refused = [], []
    for i, params in enumerate(shapes.drawn(rt.problem.tests[0], spec.ranges, spec.count, _secret_rng(rt, "random"))):
        (cases if _accepted(rt, params) else refused).append(Case(f"random shape {i}", params, shapes.shown(params)))
    if refused:
        result.findings.append(Finding(code="random_shape_refused", severity="warning", message=(
            "the problem itself refused drawn shapes (generate_input or the reference raised): "
            + "; ".join(str({k: v for k, v in c.shown.items() if k != "seed"}) for c in refused))[:1000]))
    return cases


def undeclared_shape(rt: ReferenceRuntime, result: CheckResult) -> list[Case]:
    """The first variant of the task's shapes (judge/shapes.py) that generate_input and the reference accept, as
    one more case; else a finding saying why the problem could not be varied."""
    if rt.problem.kind == "kernelbench":
        why = "KernelBench fixes a problem's shapes in its file (get_inputs takes no parameters)"
    else:
        tried = shapes.variants(rt.problem.tests, rt.problem.benchmarks, _secret_rng(rt, "undeclared"))
        params = _first_accepted(rt, tried)
        if params is not None:
            return [Case("undeclared shape", params, shapes.shown(params))]
        why = (f"generate_input or the reference refused each of the {len(tried)} variants of its sizes tried"
               if tried else "no integer parameter differs between the task's tests and benchmarks")
    result.findings.append(Finding(code="shape_not_varied", severity="info", message=(
        f"only the listed shapes were served: {why}, so a kernel correct on those alone is not caught")))
    return []


def at_benchmark_scale(rt: ReferenceRuntime) -> dict | None:
    """A size no one listed near the problem's smallest benchmark that generate_input and the reference accept
    (judge/shapes.py), for ``profile`` to judge one call at; None where the problem cannot be varied there."""
    if rt.problem.kind == "kernelbench":
        return None
    return _first_accepted(rt, shapes.variants(rt.problem.tests, rt.problem.benchmarks, _secret_rng(rt, "at scale"),
                                               at_scale=True))


def _secret_rng(rt: ReferenceRuntime, purpose: str) -> random.Random | None:
    """Secret draws of shapes: the same in every check of a batch (from its secret), else fresh (None)."""
    return rt.shared.rng(f"{purpose} shapes") if rt.shared else None


def _first_accepted(rt: ReferenceRuntime, tried: list[dict]) -> dict | None:
    """The first of the variants tried (most moved first) that the problem takes, if any."""
    return next((params for params in tried if _accepted(rt, params)), None)


def _accepted(rt: ReferenceRuntime, params: dict) -> bool:
    try:
        rt.ref_kernel(rt.generate(params))
    except Exception:  # noqa: BLE001  (a size the problem does not take: try the next)
        return False
    return True


@dataclass
class CaseRunner:
    """Cases through one started session, each with its own call id (``calls`` so far), judged with the
    benchmark's own ``rules`` beside ours."""

    rt: ReferenceRuntime
    session: CandidateSession
    result: CheckResult
    rules: list[contract.Rule]
    calls: int = 0
    diagnose: bool = True  # name a mismatch's cause from its values (off for the diagnostic re-runs)
    keep: str = ""  # the case whose output (and RNG seed) is kept for a repeat (judge/determinism.py)
    kept: tuple[Any, int] | None = None

    def judge(self, case: Case, serialize: bool = False) -> CaseResult:
        rt, call_id = self.rt, self.calls
        self.calls += 1
        release_device_memory(rt.device, rt.tight_memory)  # the last case's shared inputs, once dropped
        served = rt.case(case.params, signed=case.signed, rng_seed=case.rng_seed)
        trace.mark(f"{case.name}: inputs made, their roles measured")
        pristine = served.data  # generated for this case alone and never given out: no copy needed (memory)
        reference = rt.expected(served, case.params)
        trace.mark(f"{case.name}: expected outputs made")
        known = {f.code for f in self.result.findings}
        self.result.findings.extend(f for f in reference.findings if f.code not in known)
        if call_id == 0:
            degenerate.probe(rt, reference, served, case.params, self.result)
        shared = rt.share_copy(pristine)
        release_device_memory(rt.device, rt.tight_memory)  # the float64 run's blocks, for the candidate
        trace.mark(f"{case.name}: inputs shared")
        reply = self.session.call(call_id, shared, rt.call_timeout, served.rng_seed, serialize)
        judged = CaseResult(name=case.name, params=case.shown, passed=False)
        benchmark = contract.serves(rt, case.signed)
        if reply.kind != "output":
            judged.failure, judged.message = reply.kind, reply.message
            contract.not_reached(judged, self.rules, benchmark)
            return judged
        late = bool(reply.figures and reply.figures.get("late"))
        try:
            received = resolve_input_refs(reply.output, shared)
        except ValueError as exc:
            judged.failure, judged.message = "forged", str(exc)
            return judged
        failure, message, answer = output_integrity(received, served, shared)
        checked = self._benchmark(judged, failure, answer.output if answer else received, served, reference, benchmark)
        if failure:
            judged.failure, judged.message = failure, message
            return judged
        late = late or _changed_since_sent(answer.output, reply.figures)
        del received, reply  # the candidate's own memory: only the judge's copy is compared
        trace.mark(f"{case.name}: output copied and its integrity checked")
        if case.name == self.keep and tensors.nbytes(answer.output) <= KEEP_BYTES:
            self.kept = (answer.output, served.rng_seed)
        failure, message, judged.comparisons = judge_values(answer, reference, rt, case.params, pristine, checked)
        trace.mark(f"{case.name}: output compared")
        if late:
            failure, message = "mismatch", f"{LATE}{f'; {message}' if message else ''}"
            judged.cause = "unordered_stream"
        elif failure == "mismatch" and self.diagnose:
            judged.cause, why = causes.probed(rt, served, answer, reference, judged)
            message = f"{message}; {why}" if why else message
        judged.passed, judged.failure, judged.message = not failure, failure, message
        return judged

    def _benchmark(self, judged: CaseResult, failure: str, output: Any, served: Any, reference: Any,
                   benchmark: bool) -> tuple[str, str] | None:
        """The benchmark's own contract on this output (CaseResult.benchmark), where it would serve the case;
        returns the problem's check_implementation verdict on it, so that it runs once."""
        if failure == "structure":
            contract.not_reached(judged, self.rules, benchmark)
            return None
        checked = problem_check(self.rt, served.data, output)
        if benchmark and self.rules:
            judged.benchmark = contract.judge(self.rules, output, reference.leaves, checked)
        return checked

    def call(self, data: Any, rng_seed: int) -> Any | None:
        """One call of the candidate on ``data`` outside the cases (a sub-batch): the judge's copy of
        its output, or None where it gave none (a crash, an exception, a reply that does not fit)."""
        call_id = self.calls
        self.calls += 1
        shared = self.rt.share_copy(data)
        reply = self.session.call(call_id, shared, self.rt.call_timeout, rng_seed)
        if reply.kind != "output":
            return None
        try:
            return tensors.clone(resolve_input_refs(reply.output, shared))
        except ValueError:
            return None

    def rerun(self, case: Case, signed: bool | None = None, serialize: bool = False) -> CaseResult | None:
        """The case again (its parameters and seed), for a diagnosis: not listed among the results, its values
        not diagnosed in turn; None where the host is gone or cannot be believed."""
        self.diagnose = False
        try:
            again = self.judge(Case(f"{case.name} (diagnosis)", case.params, case.shown,
                                    case.signed if signed is None else signed, case.rng_seed), serialize=serialize)
        except Exception:  # noqa: BLE001  (a diagnosis that cannot run names no cause)
            return None
        finally:
            self.diagnose = True
        return None if again.failure in ("crash", "timeout", "forged") else again


def _changed_since_sent(copy: Any, figures: dict | None) -> bool:
    """The judge's copy of the output differs from the digest the host took once the call's device work was
    done: something wrote it in between (a thread the call left running, waiting for it to be shared)."""
    sent = figures.get("digest") if figures else None
    return bool(sent) and tensors.digest(copy) != sent  # [] where the host could not take one

