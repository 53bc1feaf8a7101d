"""Does the candidate give the same bits on the same input (issue 39)? Every check that has not failed repeats
its first listed test's call once in the same process, from the same inputs and RNG seed, and compares the two
outputs bit for bit. A task that declares ``deterministic: true`` also gets the call in a second, fresh process
(a host that has run nothing), and a difference there or in the repeat fails the check (``fail:
nondeterministic``).

Each repeat is judged like every case and listed among them (``test 0 (repeated)``): a kernel that answers a
repeated input with garbage (a memo of its own), or raises on it so that no bits are compared, fails as any
case fails (tests/cheats/repeat_garbage.py, repeat_raises.py).

Bit for bit: floats are compared as their bit patterns (a NaN equals a NaN of the same bits; -0.0 differs
from 0.0), so an atomicAdd reduction that sums in another order shows even when the values round alike.
Not measured where the float64 references wait in host memory (a problem near the device's size), nor for
an output over 512 MiB (case.KEEP_BYTES): the check's memory was measured without a second output kept.
"""
from __future__ import annotations

from typing import Any

import torch

from kernel_mcp.reproducibility import Determinism
from kernel_mcp.results import CheckResult, Finding
from kernel_mcp.worker import tensors
from kernel_mcp.worker.judge.case import Case, CaseRunner

REPEATED = "test 0"  # the first listed test, with the task's own seed


def differing(a: Any, b: Any) -> tuple[int, int]:
    """(elements that differ bit for bit, elements) between two outputs of the same structure."""
    first, second = tensors.leaves(a), tensors.leaves(b)
    total = sum(t.numel() for _, t in first)
    if [(p, t.shape, t.dtype) for p, t in first] != [(p, t.shape, t.dtype) for p, t in second]:
        return total, total
    return sum(differing_elements(x, y) for (_, x), (_, y) in zip(first, second)), total


def differing_elements(x: torch.Tensor, y: torch.Tensor) -> int:
    """Elements of two tensors of one shape and dtype that differ bit for bit."""
    unequal = tensors.element_bits(x) != tensors.element_bits(y.to(x.device))
    return int(unequal.any(dim=-1).sum()) if unequal.dim() > 1 else int(unequal.sum())  # a 16-byte element: 2


def measure(runner: CaseRunner, cases: list[Case], result: CheckResult, fresh: CaseRunner | None) -> None:
    """Repeat the kept case (runner.kept) in the same process and, given ``fresh`` (a runner on a second
    host), there too, each judged and listed among the cases; record it in ``result.determinism``, with an
    error finding (the check fails) when the task declares the property and the bits differ."""
    case = next((c for c in cases if c.name == REPEATED), None)
    if case is None or runner.kept is None:
        return
    output, seed = runner.kept
    found = Determinism(case=case.name)
    worst = 0
    for where, on in (("same_process", runner), ("fresh_process", fresh)):
        if on is None:
            continue
        again = _judged_again(on, case, seed, where, result)
        if again is None:
            continue
        count, found.elements = differing(output, again)
        setattr(found, where, count == 0)
        worst = max(worst, count)
    runner.kept = (output, seed)
    found.differing_elements = worst
    result.determinism = found
    _report(runner, result, found)


def _judged_again(on: CaseRunner, case: Case, seed: int, where: str, result: CheckResult) -> Any | None:
    """The case's call made again from the same inputs and RNG seed, judged like any case and listed in
    ``result``; its output, or None where it gave none to compare (it failed before its values: the check
    fails on that case)."""
    name = f"{case.name} (repeated{' in a fresh process' if where == 'fresh_process' else ''})"
    on.keep, on.kept = name, None
    judged = on.judge(Case(name, case.params, case.shown, case.signed, seed))
    result.cases.append(judged)
    return on.kept[0] if on.kept is not None else None


def _report(runner: CaseRunner, result: CheckResult, found: Determinism) -> None:
    declared = runner.rt.problem.spec.deterministic
    if found.deterministic is None:
        return
    if found.deterministic:
        where = "in a second call and in a fresh process" if found.fresh_process else "in a second call"
        result.findings.append(Finding(code="deterministic", severity="info", message=(
            f"{found.case}: the same bits {where} from the same input")))
        return
    where = " and ".join(w for w, same in (("a second call", found.same_process),
                                          ("a fresh process", found.fresh_process)) if same is False)
    message = (f"{found.case}: {found.differing_elements} of {found.elements} output elements differ bit for bit "
               f"in {where} from the same input and RNG seed (an order of atomic adds, a race, or a split "
               "that depends on timing)")
    result.findings.append(Finding(code="nondeterministic", severity="error" if declared else "info",
                                   message=message + ("; the task declares deterministic: true" if declared else "")))
