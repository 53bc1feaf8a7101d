"""``check`` inside the judge: every test (plus secret-seeded copies) through the candidate, judged here."""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from kernel_mcp import tensors
from kernel_mcp.problem import load_problem
from kernel_mcp.results import CaseResult, CheckResult, Finding, MemoryUse
from kernel_mcp.tolerance import CHUNK
from kernel_mcp.worker import footprint, lease, numerics, trace
from kernel_mcp.worker.outputs import judge_values, output_integrity, resolve_input_refs
from kernel_mcp.worker.host_memory import release_device_memory
from kernel_mcp.worker.reference_runtime import Reference, ReferenceRuntime
from kernel_mcp.worker.session import CandidateSession

if TYPE_CHECKING:
    from kernel_mcp.worker.judge import Judging

STOPPING_FAILURES = {"crash", "timeout", "forged"}  # the candidate process is gone or cannot be believed


@dataclass
class Case:
    name: str
    params: dict[str, Any]  # what generate_input gets (a fresh seed stays in the judge)
    shown: dict[str, Any]  # what the result shows


def plan_cases(tests: list[dict], fresh_seeds: int) -> list[Case]:
    """Each listed test, each followed by copies with fresh secret seeds: every shape is served at least
    twice with different values, so an answer cached by pointer, shape or sampled values is caught."""
    cases = []
    for i, test in enumerate(tests):
        cases.append(Case(f"test {i}", dict(test), dict(test)))
        for j in range(fresh_seeds):
            cases.append(Case(f"test {i} (secret seed {j + 1})", {**test, "seed": secrets.randbits(31)},
                              {**test, "seed": "secret"}))
    return cases


def run_check(judging: Judging) -> CheckResult:
    result, runtime = prepare(judging)
    if runtime is None:
        return result
    session = open_session(judging, runtime, Path(judging.request.candidate))
    try:
        check_on(session, runtime, judging, result)
    finally:
        result.log_tail = session.log_tail()
        session.close()
    return result


def prepare(judging: Judging) -> tuple[CheckResult, ReferenceRuntime | None]:
    """Load the problem and its reference in this (the judge's) process, and run the reference once
    before any candidate code exists: lazy imports in reference.py happen now. The runtime is None when
    the problem itself is broken (the result then says why)."""
    request, device = judging.request, judging.device.torch
    problem = load_problem(request.problem)
    result = CheckResult(passed=False, verdict="", problem=problem.name, candidate=request.candidate,
                         device=device, findings=list(problem.warnings))
    contract = numerics.apply(problem.spec.precision or "strict", device)
    if contract:
        result.findings.append(Finding(code="precision", severity="info", message=contract))
    reserved = request.memory_cap_bytes
    capped = footprint.hold_to(max(lease.MIN_NEED, reserved - lease.CONTEXTS_BYTES) if reserved else None, device)
    try:
        runtime = ReferenceRuntime(problem, device)
        needs = footprint.measure(runtime, problem.tests[0])
    except torch.OutOfMemoryError as exc:
        if not capped:
            raise  # the judge's out-of-memory report (judge.py): says nothing of the problem or candidate
        return _outgrew(result, reserved, None, exc), None
    except Exception as exc:  # noqa: BLE001  (a broken reference is the problem's fault, reported as such)
        result.verdict = "error: problem"
        result.findings.append(Finding(code="problem_error", message=f"the reference ({problem.reference_file.name}) "
                                       f"failed before any candidate ran: {type(exc).__name__}: {str(exc)[:2000]}"))
        return result, None
    refused = _fit(judging, runtime, needs, result)
    if refused:
        result.verdict = "error: too large"
        result.findings.append(Finding(code="too_large", message=refused))
        return result, None
    if capped:
        need = result.memory.check_need_bytes if result.memory else None
        if need and lease.need_from_measure(need) > reserved:
            return _outgrew(result, reserved, need, None), None
        footprint.hold_to(None, device)  # the caller's reservation now covers the measured need
    return result, runtime


def _outgrew(result: CheckResult, reserved: int, need: int | None, exc: Exception | None) -> CheckResult:
    """The check of a never-measured problem needs more than its first reservation: the caller runs it
    again with the measured need, or alone (``runner``); no candidate ran."""
    result.verdict = "error: out of memory"
    what = (f"needs about {need / footprint.GiB:.1f} GiB" if need else
            f"ran out of memory ({str(exc).splitlines()[0][:200]})")
    result.findings.append(Finding(code=lease.OUTGREW, message=(
        f"the check {what} beyond the {reserved / footprint.GiB:.1f} GiB first reserved for a problem never "
        "measured on this device: it is to run again with its measured need")))
    return result


def _fit(judging: Judging, runtime: ReferenceRuntime, needs: footprint.Footprint, result: CheckResult) -> str:
    """Size the run from the reference's measured footprint: where float64 references wait, how long a
    call may take, what the caller reserves of the device and waits for. Returns why the problem cannot
    be checked on this device ('' when it can)."""
    problem = runtime.problem
    total = footprint.device_total(runtime.device)
    runtime.tight_memory = needs.tight(total)
    need = needs.need(parked=runtime.tight_memory) if needs.reference_peak else None
    result.memory = MemoryUse(reference_peak_bytes=needs.reference_peak or None, check_need_bytes=need,
                              float64_in_host_memory=runtime.tight_memory)
    declared = judging.request.call_timeout_s or problem.spec.timeouts.call
    # a timeout the caller gave holds as given; the task's is lengthened for a slow reference (footprint.py)
    runtime.call_timeout = judging.request.call_timeout_s or needs.call_timeout(declared)
    cases = len(problem.tests) * (1 + (judging.request.fresh_seeds or problem.spec.fresh_seeds))
    seconds = needs.run_seconds(cases, declared)
    seconds = seconds if seconds > problem.spec.timeouts.total else None  # the declared budget holds otherwise
    if need or seconds:
        memory = f", a check needs about {need / footprint.GiB:.1f} GiB of device memory" if need else ""
        judging.reporter.needs(f"the reference measured: {needs.reference_seconds:.1f} s{memory}",
                               memory_bytes=need, seconds=seconds)
    return footprint.refusal(needs, total)


def open_session(judging: Judging, runtime: ReferenceRuntime, candidate: Path) -> CandidateSession:
    """A host started ahead of need (or now), given its one candidate."""
    folder = runtime.problem.folder
    session = judging.hosts.take()
    session.load(candidate, [folder, folder.parent], runtime.candidate_init())
    return session


def check_on(session: CandidateSession, runtime: ReferenceRuntime, judging: Judging, result: CheckResult) -> None:
    """Every test and its secret-seeded copies through a started session, then the verdict."""
    cases = plan_cases(runtime.problem.tests, judging.request.fresh_seeds or runtime.problem.spec.fresh_seeds)
    _run_cases(runtime, session, cases, result, judging.reporter)
    _decide(result)


def _run_cases(runtime: ReferenceRuntime, session: CandidateSession, cases: list[Case], result: CheckResult,
               reporter) -> None:
    reporter.progress("importing the candidate", 0, len(cases))
    failure = session.start(runtime.problem.spec.timeouts.import_)
    if failure and failure.kind == "boot":
        result.findings.append(Finding(code="host_boot_failed", message=failure.message))
        result.verdict = "error: harness"
        return
    if failure:
        result.findings.append(Finding(code=f"candidate_{failure.kind}", message=failure.message))
        result.verdict = f"fail: {failure.kind} on import"
        return
    _note_sandbox(runtime, session, result)
    if runtime.problem.kind == "kernelbench":
        result.findings.append(Finding(code="kernelbench_mode", severity="info", message=runtime.kernelbench_mode()))
    for i, case in enumerate(cases):
        reporter.progress(case.name, i, len(cases))
        case_result = _judge_case(runtime, session, case, i, result)
        result.cases.append(case_result)
        if case_result.failure in STOPPING_FAILURES:
            break


def _note_sandbox(runtime: ReferenceRuntime, session: CandidateSession, result: CheckResult) -> None:
    """Say where the sandbox is weaker than it should be (read from /proc once the host is running)."""
    if session.keeps_ptrace:
        result.findings.append(Finding(code="sandbox_weak", severity="warning",
                                       message="the candidate process kept CAP_SYS_PTRACE"))
    if not runtime.shares_isolated_memory:
        result.findings.append(Finding(code="shared_segment", severity="warning", message=(
            "inputs are shared from the judge's general GPU memory pool (this torch has no "
            "torch.cuda.MemPool, or KERNEL_MCP_SHARE_POOL=0): IPC segments may also hold expected outputs")))
    open_paths = session.writable_to_host() if session.isolated else []
    if open_paths:
        result.findings.append(Finding(code="files_writable", severity="warning", message=(
            "the candidate's mount namespace could not make these read-only, so the candidate could change "
            f"them: {', '.join(map(str, open_paths))}")))
    if not session.isolated:
        result.findings.append(Finding(code="no_pid_namespace", severity="info", message=(
            "the candidate could not get its own PID namespace (needs root or user namespaces); its "
            "leftover processes are found through the process tree and an environment token instead")))


def _judge_case(rt: ReferenceRuntime, session: CandidateSession, case: Case, case_id: int,
                result: CheckResult) -> CaseResult:
    release_device_memory(rt.device, rt.tight_memory)  # the last case's shared inputs, once dropped
    data = rt.generate(case.params)
    if case_id == 0 and rt.detect_output_args(data):
        buffers = [i for i in rt.output_args if i not in rt.scratch_args]
        kinds = ([f"inputs {buffers} are output buffers (the reference writes or returns them)"] if buffers else []) + \
            ([f"inputs {rt.scratch_args} are scratch (the reference never reads them)"] if rt.scratch_args else [])
        result.findings.append(Finding(code="output_buffers", severity="info", message=(
            "; ".join(kinds) + ": they are filled with NaN/random values before each call and may be written "
            "and returned")))
    rt.poison_outputs(data)
    trace.mark(f"{case.name}: inputs made")
    pristine = data  # generated for this case alone and never given out: no copy needed (memory)
    del data
    reference = rt.expected(pristine, case.params)
    trace.mark(f"{case.name}: expected outputs made")
    _note(result, reference.findings)
    if case_id == 0:
        _probe_degenerate(rt, reference, pristine, case.params, result)
    shared = rt.share_copy(pristine)
    release_device_memory(rt.device, rt.tight_memory)  # the float64 run's blocks, for the candidate
    trace.mark(f"{case.name}: inputs shared")
    reply = session.call(case_id, shared, rt.call_timeout)
    base = dict(name=case.name, params=case.shown)
    if reply.kind != "output":
        return CaseResult(**base, passed=False, failure=reply.kind, message=reply.message)
    received = resolve_input_refs(reply.output, shared)
    failure, message, output = output_integrity(received, reference, rt.output_args, shared, pristine)
    if failure:
        return CaseResult(**base, passed=False, failure=failure, message=message)
    del received, reply  # the candidate's own memory: only the judge's copy is compared
    trace.mark(f"{case.name}: output copied and its integrity checked")
    failure, message, comparisons = judge_values(output, reference, rt, case.params, pristine)
    trace.mark(f"{case.name}: output compared")
    return CaseResult(**base, passed=not failure, failure=failure, message=message, comparisons=comparisons)


def _note(result: CheckResult, findings: list[Finding]) -> None:
    known = {f.code for f in result.findings}
    result.findings.extend(f for f in findings if f.code not in known)


TRIVIAL_OUTPUTS = ("zeros", "a constant", "an echo of the first input", "torch.empty")


def _trivial(kind: str, want: torch.Tensor, first_input: torch.Tensor | None) -> torch.Tensor | None:
    if kind == "zeros":
        return torch.zeros_like(want)
    if kind == "a constant":
        if want.numel() <= 1:  # the mean of one value is the answer itself: no test of anything (a loss)
            return None
        return torch.full_like(want, _mean(want) if want.is_floating_point() else 1)
    if kind == "torch.empty":
        fresh = torch.empty_like(want)
        # memory recycled from the judge's own reference computation says nothing about the problem
        return None if tensors.same_bytes(fresh, want) else fresh
    if first_input is not None and first_input.shape == want.shape:
        return first_input.to(want.dtype)
    return None


def _mean(t: torch.Tensor) -> float:
    """The mean in float64, a piece at a time: ``t.mean(dtype=torch.float64)`` makes a float64 copy of the
    whole tensor first (8 GiB beside a 4 GiB output: the probe was a check's peak, H200, 2026-12-02)."""
    flat = t.detach().reshape(-1)
    total = sum(piece.sum(dtype=torch.float64).item() for piece in flat.split(CHUNK))
    return total / max(flat.numel(), 1)


def _trivial_passes(kind: str, rt: ReferenceRuntime, reference: Reference, pristine: Any, params: dict) -> bool:
    """Does the trivial answer ``kind`` pass? Its own function, so each answer is freed before the next is
    made (two outputs' worth at once was a large problem's peak)."""
    inputs = tensors.leaves(pristine)
    fake = tensors.tree_map(lambda t: _trivial(kind, t, inputs[0][1] if inputs else None), reference.structure)
    made = tensors.leaves(fake)  # a leaf the trivial answer has no form for is None, so not a leaf
    if not made or len(made) != len(reference.leaves):
        return False
    return not judge_values(fake, reference, rt, params, pristine)[0]


def _probe_degenerate(rt: ReferenceRuntime, reference: Reference, pristine: Any, params: dict,
                      result: CheckResult) -> None:
    """DESIGN rule 5: a problem whose tests a trivial output passes cannot tell good kernels from bad."""
    passing = [kind for kind in TRIVIAL_OUTPUTS if _trivial_passes(kind, rt, reference, pristine, params)]
    if passing:
        result.problem_degenerate = True
        result.findings.append(Finding(code="degenerate_problem", severity="warning", message=(
            f"{', '.join(passing)} pass{'es' if len(passing) == 1 else ''} this problem's first test: its tests "
            "cannot tell a real kernel from a trivial answer (strengthen generate_input or the tolerance)")))


def _decide(result: CheckResult) -> None:
    if result.verdict:  # already decided (import failure)
        return
    failed = [c for c in result.cases if not c.passed]
    errors = [f for f in result.findings if f.severity == "error"]
    if failed:
        first = failed[0]
        result.verdict = f"fail: {first.failure}"
        result.findings.append(Finding(code=first.failure, message=f"{first.name}: {first.message}"[:4000]))
    elif errors:
        result.verdict = f"fail: {errors[0].code}"
    elif not result.cases:
        result.verdict = "fail: no cases ran"
    else:
        result.passed = True
        result.verdict = "pass (degenerate problem)" if result.problem_degenerate else "pass"
