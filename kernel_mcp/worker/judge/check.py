"""``check`` inside the judge: every test (plus secret-seeded copies) through the candidate, judged here."""
from __future__ import annotations

import dataclasses
import hashlib

import torch

from kernel_mcp.problem import Problem, load_problem
from kernel_mcp.results import CheckResult, Finding, MemoryUse
from kernel_mcp.worker import needs, trace
from kernel_mcp.worker.isolation import check_namespaces, kernel_cache, mounts, sandbox
from kernel_mcp.worker.judge import contract, determinism, footprint, numerics, repeat, reruns
from kernel_mcp.worker.judge.case import CaseRunner, plan_cases, random_shapes, undeclared_shape
from kernel_mcp.worker.judge.context import Judging
from kernel_mcp.worker.judge.reference import ReferenceRuntime
from kernel_mcp.worker.judge.session import CandidateSession
from kernel_mcp.worker.judge.shared_truth import SharedTruth

MEASURED = "measured"  # a measure_reference that measured
STOPPING_FAILURES = {"crash", "timeout", "forged"}  # the candidate process is gone or cannot be believed


def run_check(judging: Judging) -> CheckResult:
    result, runtime = prepare(judging)
    if runtime is None:
        return result
    session = judging.open_session(runtime)
    try:
        check_on(session, runtime, judging, result)
    finally:
        result.log_tail = session.log_tail()
        session.close()
    return result


def measure_reference(judging: Judging) -> CheckResult:
    """What a check of the problem needs (its ``memory``), from the reference's run measured as a check's first
    step does, with no candidate: a batch measures each problem so before its checks (batch/survey.py), which are
    then admitted to the device with that need rather than a first share of it. Verdict "measured" when it could (a
    need beyond the first share included: the runner recorded it as the judge sent it, and nothing runs again)."""
    result, runtime = prepare(judging)
    if runtime is not None or (result.memory is not None and result.memory.check_need_bytes):
        result.verdict = MEASURED
        result.findings = [f for f in result.findings if f.code != needs.OUTGREW]
    return result


def prepare(judging: Judging) -> tuple[CheckResult, ReferenceRuntime | None]:
    """Load the problem and its reference in this (the judge's) process, and run the reference once
    before any candidate code exists: lazy imports in reference.py happen now. The runtime is None when
    the problem itself is broken (the result then says why)."""
    request, device = judging.request, judging.device.torch
    problem = load_problem(request.problem)
    if request.tests:  # held-out shapes in place of the listed tests
        problem = dataclasses.replace(problem, tests=[dict(case) for case in request.tests])
    result = CheckResult(passed=False, verdict="", problem=problem.name, candidate=request.candidate,
                         device=device, findings=list(problem.warnings))
    contract = numerics.apply(problem.spec.precision or "strict", device)
    if contract:
        result.findings.append(Finding(code="precision", severity="info", message=contract))
    reserved = request.memory_cap_bytes
    capped = footprint.hold_to(max(needs.MIN_NEED, reserved - needs.CONTEXTS_BYTES) if reserved else None, device)
    trace.mark(f"judge: preparing {problem.name}")
    try:
        runtime = ReferenceRuntime(problem, device)
        trace.mark("judge: reference built")
        measured = footprint.measure(runtime, problem.tests[0])
        trace.mark("judge: reference measured")
    except Exception as exc:  # noqa: BLE001  (out of memory, or a broken reference: the problem's fault)
        return _reference_failed(result, problem, exc, reserved if capped else None), None
    refused = _fit(judging, runtime, measured, result)  # before more runs of a reference the machine may not hold
    if refused:
        result.verdict = "error: too large"
        result.findings.append(Finding(code="too_large", message=refused))
        return result, None
    try:
        signs = runtime.probe_signed_inputs(problem.tests[0])
    except Exception as exc:  # noqa: BLE001
        return _reference_failed(result, problem, exc, reserved if capped else None), None
    trace.mark("judge: signed inputs probed")
    if signs:
        result.findings.append(signs)
    if capped:
        need = result.memory.check_need_bytes if result.memory else None
        if need and needs.need_from_measure(need) > reserved:
            return _outgrew(result, reserved, need, None), None
        footprint.hold_to(None, device)  # the caller's reservation now covers the measured need
    return result, runtime


def _reference_failed(result: CheckResult, problem: Problem, exc: Exception, capped_to: int | None) -> CheckResult:
    """The reference's run before any candidate raised: out of memory (beyond a first run's cap, or for want of
    room beside other runs), or the problem's own error, reported as such."""
    if isinstance(exc, torch.OutOfMemoryError):
        return _outgrew(result, capped_to, None, exc) if capped_to else _short(result, exc)
    result.verdict = "error: problem"
    result.findings.append(Finding(code="problem_error", message=f"the reference ({problem.reference_file.name}) "
                                   f"failed before any candidate ran: {type(exc).__name__}: {str(exc)[:2000]}"))
    return result


def _short(result: CheckResult, exc: Exception) -> CheckResult:
    """No room on the device for the reference's run, admitted with its measured need: neighbours hold more than
    they reserved. No candidate ran; the caller runs it again alone (needs.ran_short)."""
    result.verdict = "error: out of memory"
    result.findings.append(Finding(code=needs.SHORT, message=(
        f"the judge ran out of device memory running the reference, before any candidate code ran "
        f"({str(exc).splitlines()[0][:300]}): other runs on the device hold more than they reserved, or, run alone, "
        "the reference's own run does not fit the device")))
    return result


def _outgrew(result: CheckResult, reserved: int, need: int | None, exc: Exception | None) -> CheckResult:
    """The check of a never-measured problem needs more than its first reservation: the caller runs it
    again with the measured need, or alone (``runner``); no candidate ran."""
    result.verdict = "error: out of memory"
    what = (f"needs about {need / footprint.GiB:.1f} GiB" if need else
            f"ran out of memory ({str(exc).splitlines()[0][:200]})")
    result.findings.append(Finding(code=needs.OUTGREW, message=(
        f"the check {what} beyond the {reserved / footprint.GiB:.1f} GiB first reserved for a problem never "
        "measured on this device: it is to run again with its measured need")))
    return result


def _fit(judging: Judging, runtime: ReferenceRuntime, measured: footprint.Footprint, result: CheckResult) -> str:
    """Size the run from the reference's measured footprint: where float64 references wait, how long a
    call may take, what the caller reserves of the device and waits for. Returns why the problem cannot
    be checked on this device ('' when it can)."""
    problem = runtime.problem
    total = footprint.device_total(runtime.device)
    runtime.tight_memory = measured.tight(total)
    need = measured.need(parked=runtime.tight_memory) if measured.reference_peak else None
    result.memory = MemoryUse(reference_peak_bytes=measured.reference_peak or None, check_need_bytes=need,
                              float64_in_host_memory=runtime.tight_memory)
    declared = judging.request.call_timeout_s or problem.spec.timeouts.call
    # a timeout the caller gave holds as given; the task's is lengthened for a slow reference (judge/footprint.py)
    runtime.call_timeout = judging.request.call_timeout_s or measured.call_timeout(declared)
    cases = len(problem.tests) * (1 + (judging.request.fresh_seeds or problem.spec.fresh_seeds)) + 1
    seconds = measured.run_seconds(cases, declared)
    seconds = seconds if seconds > problem.spec.timeouts.total else None  # the declared budget holds otherwise
    if need or seconds:
        memory = f", a check needs about {need / footprint.GiB:.1f} GiB of device memory" if need else ""
        judging.reporter.needs(f"the reference measured: {measured.reference_seconds:.1f} s{memory}",
                               memory_bytes=need, seconds=seconds)
    return footprint.refusal(measured, total) if total else footprint.host_refusal(measured)


def check_on(session: CandidateSession, runtime: ReferenceRuntime, judging: Judging, result: CheckResult) -> None:
    """Every test and its secret-seeded copies, and a shape the task does not list, through a started
    session; then the cause of a failure (with the calls its diagnosis needs), the benchmark's own contract
    beside ours, and the verdict."""
    runtime.shared = _shared_truth(judging, runtime, session, result)
    seeds = {"seed": runtime.shared.seed} if runtime.shared else {}
    cases = plan_cases(runtime.problem.tests, judging.request.fresh_seeds or runtime.problem.spec.fresh_seeds, **seeds)
    drawn = undeclared_shape(runtime, result) + random_shapes(runtime, result)
    # in a batch, drawn sizes are the same in every check (shapes.py's rng from its secret); their RNG seeds too
    cases += [dataclasses.replace(case, rng_seed=runtime.shared.seed(f"{case.name} rng")) for case in drawn] \
        if seeds else drawn
    runner = CaseRunner(runtime, session, result, contract.rules(runtime),
                        keep="" if runtime.tight_memory else determinism.REPEATED)
    ran = _run_cases(runner, cases, judging.reporter)
    if ran and repeat.passing(result):  # a failed check needs no repeat: its verdict stands
        repeat.after_cases(runner, cases, judging, result)
    _decide(result)
    reruns.name(runner, cases, result)
    if ran:
        contract.summarise(result, runner.rules)
    shared = runtime.shared.finding() if runtime.shared else None
    if shared:
        result.findings.append(shared)


def _shared_truth(judging: Judging, runtime: ReferenceRuntime, session: CandidateSession,
                  result: CheckResult) -> SharedTruth | None:
    """The batch's store, where the request brings one and candidates can pass no notes: this judge has its
    own /dev/shm, IPC and network, and the candidate's host its own PID and mount namespaces, with every
    file system it should not write read-only and the kept kernel builds out of its sight (else the same
    secret inputs for every candidate would be worth writing down; fresh seeds then)."""
    shared = judging.request.shared
    if shared is None:
        return None
    session.wait_booted()
    sealed = session.isolated and not session.writable_to_host() \
        and not session.keeps_capability(sandbox.CAP_SYS_ADMIN) \
        and mounts.covered_in(session.host_pid, kernel_cache.store()) \
        and all(mounts.covered_in(session.host_pid, folder.parent) for folder in (session.scratch, session.tmp))
    # (CAP_SYS_ADMIN could undo the mounts; the private roots hide other candidates' scratch and temporary folders)
    if not (check_namespaces.ENTERED and sealed):
        result.findings.append(Finding(code="shared_reference_off", severity="info", message=(
            "this batch's shared inputs and float64 truths were not used: the sandbox here cannot keep candidates "
            "from passing notes (no namespaces of their own, or mounts it could not seal), so this check drew "
            "fresh secret seeds")))
        return None
    problem = runtime.problem
    source = hashlib.sha256(problem.reference_file.read_bytes()).hexdigest()
    return SharedTruth(shared.secret, shared.store, f"{problem.path}|{source}")


def _run_cases(runner: CaseRunner, cases: list, reporter) -> bool:
    """False where the candidate never got to run (it failed to import, or its host failed to boot)."""
    runtime, session, result = runner.rt, runner.session, runner.result
    reporter.progress("importing the candidate", 0, len(cases))
    failure = session.start(runtime.problem.spec.timeouts.import_)
    trace.mark("judge: candidate imported")
    if failure and failure.kind == "boot":
        result.findings.append(Finding(code="host_boot_failed", message=failure.message))
        result.verdict = "error: harness"
        return False
    if failure:
        result.findings.append(Finding(code=f"candidate_{failure.kind}", message=failure.message))
        result.verdict = f"fail: {failure.kind} on import"
        return False
    _note_sandbox(runtime, session, result)
    if runtime.problem.kind == "kernelbench":
        result.findings.append(Finding(code="kernelbench_mode", severity="info", message=runtime.kernelbench_mode()))
        unmatched = session.ready_info.get("unmatched")
        if unmatched:
            result.findings.append(Finding(code="kernelbench_unmatched", severity="info", message=(
                "ModelNew's tensors whose values no tensor of Model's holds, kept as ModelNew's construction made "
                "them (a weight folded or transposed at initialisation, a workspace, or tensors created in another "
                "order than Model's, whose values then differ as they would under KernelBench): "
                + ", ".join(unmatched))))
    for i, case in enumerate(cases):
        reporter.progress(case.name, i, len(cases))
        case_result = runner.judge(case)
        result.cases.append(case_result)
        if case_result.failure in STOPPING_FAILURES:
            break
    _note_roles(runtime, result)
    return True


def _note_sandbox(runtime: ReferenceRuntime, session: CandidateSession, result: CheckResult) -> None:
    """Say where the sandbox is weaker than it should be (read from /proc once the host is running)."""
    if session.keeps_capability(sandbox.CAP_SYS_PTRACE):
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


def _note_roles(rt: ReferenceRuntime, result: CheckResult) -> None:
    """Say which inputs were not ordinary read-only ones, and in how many cases (judge/roles.py)."""
    if not rt.roles_seen:
        return
    parts = []
    for i, names in sorted(rt.roles_seen.items()):
        parts.append(f"input {i}: {' or '.join(sorted(names))}")
    result.findings.append(Finding(code="output_buffers", severity="info", message=(
        "; ".join(parts) + f" (measured on each of {rt.cases_seen} cases). Output buffers and scratch are filled "
        "with NaN/random values before each call and may be written and returned; inputs updated in place keep "
        "their values, may be written, and are compared after the call with the reference's own")))


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
