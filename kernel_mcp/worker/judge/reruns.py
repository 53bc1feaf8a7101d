"""Why a check failed, from the pattern of its cases and calls made again, once every case has run (the causes
a failing output's values tell are judge/causes.py's):

* ``unordered_stream``: the output changed after the call returned (worker/host/main._run), or the case fails
  again as it was run and passes when every torch op of the call waits for the whole device (a race between
  streams inside the call);
* ``fresh_seed_only``: the task's own seeds pass, secret ones fail (an answer memoised or special-cased);
* ``sign_dependent``: a KernelBench case fails with inputs given random signs and passes the same seed drawn
  as the problem draws it (a shortcut exact only on nonnegative inputs: a dropped ReLU or abs);
* ``listed_shapes_only``: every listed shape passes, a shape the task does not list (the varied one, or one
  drawn from its random_shapes ranges) fails.
"""
from __future__ import annotations

from kernel_mcp.results import CaseResult, CheckResult, Finding, Verdict
from kernel_mcp.worker.judge.case import Case, CaseRunner


def name(runner: CaseRunner, cases: list[Case], result: CheckResult) -> None:
    """Sets ``result.cause`` from the failing cases (making the diagnostic calls they need) and adds a finding
    for a measured cause."""
    failed = [c for c in result.cases if not c.passed]
    if not failed:
        verdict = Verdict.read(result.verdict)
        result.cause = verdict.reason if verdict.status == "fail" else ""
        return
    first = failed[0]
    cause, why = _from_pattern(runner, cases, result, first)
    cause = cause or first.cause
    why = why or first.message
    result.cause = cause or first.failure
    if cause:
        result.findings.append(Finding(code=cause, message=f"{first.name}: {why}"[:2000]))


def _from_pattern(runner: CaseRunner, cases: list[Case], result: CheckResult, first: CaseResult) -> tuple[str, str]:
    if first.failure != "mismatch" or first.cause in ("unordered_stream", "nonfinite"):
        return "", ""
    by_name = {c.name: c for c in cases}
    failed = [c for c in result.cases if not c.passed]
    listed_pass = all(c.passed for c in result.cases if c.name.startswith("test ") and "secret" not in c.name)
    if listed_pass and all("secret" in c.name for c in failed):
        return _fresh_or_signed(runner, by_name[first.name])
    if listed_pass and all(c.name == "undeclared shape" or c.name.startswith("random shape") for c in failed):
        return "listed_shapes_only", ("every listed shape passes and the shape the task does not list fails: the "
                                      "kernel assumes sizes it was not given (hard-coded, or a multiple of its block)")
    if first.cause:  # its values told already (reduced_precision, approximation): no calls to make
        return "", ""
    if runner.rt.device.startswith("cuda") and first.name in by_name and _race(runner, by_name[first.name]):
        return "unordered_stream", ("it fails again when run as before, and passes when every torch op of the "
                                    "call waits for the whole device: work on one stream races work on another")
    return "", ""


def _fresh_or_signed(runner: CaseRunner, case: Case) -> tuple[str, str]:
    if case.signed and runner.rt.signed_inputs:
        again = runner.rerun(case, signed=False)
        if again is not None and again.passed:
            return "sign_dependent", ("it fails when the inputs get random signs and passes the same seed drawn as "
                                      "the problem draws it: a shortcut exact only on inputs of one sign "
                                      "(a dropped ReLU or abs)")
    return "fresh_seed_only", ("the task's own seeds pass and secret ones fail: an answer memoised, "
                               "special-cased or read from somewhere other than the inputs")


def _race(runner: CaseRunner, case: Case) -> bool:
    plain = runner.rerun(case)
    if plain is None or plain.passed:
        return False
    serialized = runner.rerun(case, serialize=True)
    return serialized is not None and serialized.passed
