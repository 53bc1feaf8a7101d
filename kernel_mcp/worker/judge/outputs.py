"""Judging one output the candidate returned, in the judge: its form (types, shapes, dtypes, devices), the
inputs left untouched and unaliased, its values against the float64 reference within the derived bound,
and the problem's own check_implementation and properties. Used by check and by every timed call."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from kernel_mcp.results import Comparison
from kernel_mcp.worker import tensors
from kernel_mcp.worker.channel import INPUT_VIEW, input_placeholder
from kernel_mcp.worker.judge.properties import check_property
from kernel_mcp.worker.judge.reference import CaseData, Reference, ReferenceRuntime
from kernel_mcp.worker.judge.tolerance import EXACT_NOTE, compare, unit_roundoff


@dataclass
class Answer:
    """The judge's own copy of what a call produced: the output, and the inputs compared after the call
    (roles.Roles.compared_after) as they were then."""

    output: Any
    after: list[torch.Tensor] = field(default_factory=list)


def resolve_input_refs(output: Any, shared: Any) -> Any:
    """The host names an output that is one of its inputs, or a view of one, by index (host/main.py's
    _refer_to_inputs); the judge substitutes its own view of that memory, which the integrity checks then treat
    like any output. A view that does not fit its input raises ValueError."""
    refs = {input_placeholder(i): t for i, (_, t) in enumerate(tensors.leaves(shared))}
    return _resolve(output, refs, 0)


MAX_DEPTH = 64  # tuples, lists and dicts inside each other: no reference's output comes near; deeper ones are a
# candidate's way to make the judge's own recursion fail (an 'error: harness' in place of its verdict)


def _resolve(node: Any, refs: dict[str, Any], depth: int) -> Any:
    """A plain recursive function, not a closure over ``refs``: a closure that calls itself is a reference
    cycle, which kept every case's shared inputs allocated on the device until the garbage collector ran."""
    if depth > MAX_DEPTH:
        raise ValueError(f"the output nests tuples, lists or dicts more than {MAX_DEPTH} deep")
    if isinstance(node, str):
        return refs.get(node, node)
    if isinstance(node, (tuple, list)):
        return type(node)(_resolve(x, refs, depth + 1) for x in node)
    if isinstance(node, dict) and INPUT_VIEW in node:
        return _input_view(node, refs)
    if isinstance(node, dict):
        return {k: _resolve(v, refs, depth + 1) for k, v in node.items()}
    return node


def _input_view(node: dict, refs: dict[str, Any]) -> torch.Tensor:
    try:
        base = refs[input_placeholder(node[INPUT_VIEW])]
        dtype = getattr(torch, str(node["dtype"]))
        if not isinstance(dtype, torch.dtype):
            raise TypeError(node["dtype"])
        view = torch.empty(0, dtype=dtype, device=base.device)
        return view.set_(base.untyped_storage(), int(node["offset"]), [int(n) for n in node["shape"]],
                         [int(n) for n in node["stride"]])
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as exc:
        raise ValueError(f"the output names a view of an input that does not fit it ({type(exc).__name__})") from exc


def output_integrity(output: Any, served: CaseData, shared: Any) -> tuple[str, str, Answer | None]:
    """(failure code, message, the judge's copy of the answer). The failure says whether the output has the
    wrong form (against the reference's own run on the case), or the inputs were touched/aliased; the copy
    (taken once the form is right) is what gets compared: the candidate could still write the memory it
    returned."""
    roles, pristine = served.run.roles, served.data
    output = tensors.floats_as_tensors(output)  # as the reference's structure has them
    problem = _structure_error(output, tensors.floats_as_tensors(served.run.output), "output", _loose_dtypes(pristine))
    if problem:
        return "structure", problem, None
    copy = tensors.clone(output)  # each probe below undoes its flip, so this one copy also serves them all
    shared_leaves = tensors.leaves(shared)
    after = [shared_leaves[i][1].detach().clone() for i in roles.compared_after()]
    out_leaves = [t for _, t in tensors.leaves(output)]
    before = [t for _, t in tensors.leaves(copy)]
    for i, ((path, got), (_, orig)) in enumerate(zip(shared_leaves, tensors.leaves(pristine))):
        if not roles.may_change(i) and not tensors.same_bytes(got, orig):
            return "mutation", f"the candidate modified input{path} (inputs must be left unchanged)", None
        if roles.may_alias(i):
            continue
        tensors.flip_(got)  # if an output leaf shares memory with this input, it changes too
        aliased = any(not tensors.same_bytes(t, b) for t, b in zip(out_leaves, before))
        tensors.flip_(got)
        if aliased:
            return "alias", f"the output shares memory with input{path}; return a new tensor", None
    return "", "", Answer(copy, after)


def _loose_dtypes(pristine: Any) -> torch.dtype | None:
    """Where the reference returns float64 from inputs of lower precision (it upcasts on its own, or
    returns a Python float), the precision the task holds an output to: its most precise floating input
    (None: an input is float64, or none is floating: float64 is what the task asks for). The candidate may
    return that dtype or a more precise one, and is held to it (compare_output), never to its own choice."""
    floating = [t.dtype for _, t in tensors.leaves(pristine) if t.is_floating_point()]
    if not floating or torch.float64 in floating:
        return None
    return min(floating, key=unit_roundoff)


def _structure_error(got: Any, want: Any, path: str, loose: torch.dtype | None) -> str:
    if isinstance(want, torch.Tensor):
        if type(got) is not torch.Tensor:  # noqa: E721  (subclasses are refused on purpose)
            return f"{path} must be a plain torch.Tensor, got {tensors.describe(got)}"
        if got.layout != torch.strided:
            return f"{path} must be a dense tensor, got layout {got.layout}"
        if got.shape != want.shape:
            return f"{path} has shape {tuple(got.shape)}, expected {tuple(want.shape)}"
        if got.dtype != want.dtype and not _precise_enough(got.dtype, want.dtype, loose):
            allowed = f"{want.dtype}" if loose is None or want.dtype != torch.float64 else \
                f"{loose} or more precise (the task's inputs are {loose})"
            return f"{path} has dtype {got.dtype}, expected {allowed}"
        if got.device.type != want.device.type:
            return f"{path} is on {got.device}, expected {want.device}"
        return ""
    if isinstance(want, (tuple, list, dict)):
        if type(got) is not type(want) or len(got) != len(want):
            return f"{path} must be a {type(want).__name__} of {len(want)}, got {tensors.describe(got)}"
        if isinstance(want, dict):
            if set(got) != set(want):
                return f"{path} has keys {sorted(map(str, got))}, expected {sorted(map(str, want))}"
            return next((e for k in want if (e := _structure_error(got[k], want[k], f"{path}[{k!r}]", loose))),
                        "")
        return next((e for i, w in enumerate(want) if (e := _structure_error(got[i], w, f"{path}[{i}]", loose))),
                    "")
    if type(got) is type(want) and got == want:  # the same type first: a tensor here would compare elementwise
        return ""
    shown = tensors.describe(got) if isinstance(got, torch.Tensor) else repr(got)[:200]
    return f"{path} is {shown}, expected {want!r}"[:400]


def _exp_argument(rt: ReferenceRuntime, pristine: Any) -> float:
    """Where the task declares ``exp_argument: inputs``, the largest finite |value| of the floating inputs (the
    judge's pristine copy): how large an exp() argument made from them may be; else 0."""
    if rt.problem.spec.tolerance.exp_argument != "inputs":
        return 0.0
    sizes = [t.detach().abs().nan_to_num(0.0, 0.0, 0.0).amax().item()
             for _, t in tensors.leaves(pristine) if t.is_floating_point() and t.numel()]
    return max(sizes, default=0.0)


def _precise_enough(got: torch.dtype, want: torch.dtype, loose: torch.dtype | None) -> bool:
    """A float64 output the task's precision does not ask for may come in that precision or a finer one."""
    return loose is not None and want == torch.float64 and got.is_floating_point and \
        unit_roundoff(got) <= unit_roundoff(loose)


def compare_output(answer: Answer, reference: Reference, rt: ReferenceRuntime, params: dict,
                   pristine: Any, argument: float = 0.0, until_failed: bool = False) -> list[Comparison]:
    """Every output leaf and every input compared after the call, each within its bound. A float64
    reference that the inputs' precision does not ask for holds the output to that precision. ``argument``:
    ``_exp_argument``'s, for the outputs. ``until_failed``: tolerance.compare's (each leaf stops reading once it
    fails, and the leaves after a failed one are not compared)."""
    output = tensors.floats_as_tensors(answer.output)
    policy = rt.problem.spec.tolerance
    loose = _loose_dtypes(pristine)
    comparisons = []
    for i, ((path, out), (_, exp)) in enumerate(zip(tensors.leaves(output), reference.leaves)):
        held = loose if loose is not None and exp.ref.dtype == torch.float64 and out.is_floating_point() else None
        k, how = rt.reduction_length(params, reference, i)
        comparisons.append(compare(out, exp, policy, k, leaf=path, held_to=held, k_source=how, argument=argument,
                                   until_failed=until_failed))
        if until_failed and not comparisons[-1].ok:
            return comparisons
    for j, (out, (index, exp)) in enumerate(zip(answer.after, reference.after)):
        k, how = rt.reduction_length(params, reference, len(reference.leaves) + j)
        comparisons.append(compare(out, exp, policy, k, leaf=f" (input {index} after the call)", k_source=how,
                                   until_failed=until_failed))
        if until_failed and not comparisons[-1].ok:
            return comparisons
    return comparisons


def judge_values(answer: Answer, reference: Reference, rt: ReferenceRuntime, params: dict, pristine: Any,
                 checked: tuple[str, str] | None = None,
                 until_failed: bool = False) -> tuple[str, str, list[Comparison]]:
    """(failure, message, comparisons) for an output whose form is right: its values against the float64
    reference, then the problem's own check_implementation and properties. Under the 'problem_check'
    precision contract (a GPU MODE problem loaded unchanged) the problem's own check_implementation is what
    decides the values, as GPU MODE decides them; the derived comparison is then reported, not binding
    (judge/numerics.py). ``checked``: check_implementation's (failure, message) on this output, where the caller
    already has it (problem_check). ``until_failed``: only whether it fails counts (compare_output's)."""
    argument = _exp_argument(rt, pristine)  # one pass over the inputs, for the bounds and the properties
    # where the problem's own check decides, a leaf outside the bound decides nothing: read every leaf (its NaN)
    until_failed = until_failed and not _problem_decides(rt)
    comparisons = compare_output(answer, reference, rt, params, pristine, argument, until_failed)
    outside = [c for c in comparisons if not c.ok]
    broken = [c for c in comparisons if c.nonfinite]
    if broken:  # under every precision contract: a problem's own check may be blind to NaN
        worst = broken[0]
        return "mismatch", (f"{worst.nonfinite} of {worst.elements} elements are NaN or Inf where the reference "
                            f"is finite{f' at {worst.leaf}' if worst.leaf else ''}"), comparisons
    if outside and not _problem_decides(rt):
        return "mismatch", mismatch_message(outside), comparisons
    failure, message = extra_checks(rt, pristine, answer.output, checked, argument)
    if outside and failure == "check_implementation":
        message = f"{mismatch_message(outside)}; {message}"
        return "mismatch", message, comparisons
    if outside and not failure:
        worst = max(c.max_error_in_bounds for c in outside)
        message = f"accepted by the problem's own check; {worst:.3g}x the derived bound"
    return failure, message, comparisons


def _problem_decides(rt: ReferenceRuntime) -> bool:
    return rt.problem.spec.precision == "problem_check" and rt.check_implementation is not None


def mismatch_message(outside: list[Comparison]) -> str:
    worst = max(outside, key=lambda c: c.max_error_in_bounds)
    where = f" at {worst.leaf}" if worst.leaf else ""
    ratio = worst.max_error_in_bounds
    if worst.note == EXACT_NOTE:
        return f"{worst.mismatches} of {worst.elements} elements differ{where} (an exact match is required)"
    worst_text = f"max error {ratio:.3g}x the bound" if math.isfinite(ratio) else "NaN or Inf where a number is due"
    norm = f"norm error {worst.norm_error:.3g}" if math.isfinite(worst.norm_error) else "norm error not finite"
    return (f"{worst.mismatches} of {worst.elements} elements outside the bound{where} ({worst_text}; {norm}, "
            f"allowed {worst.norm_bound:.3g})")


def problem_check(rt: ReferenceRuntime, pristine: Any, output: Any) -> tuple[str, str]:
    """The problem's own check_implementation on this output: ("", "") when it says yes or there is none."""
    if rt.check_implementation is None:
        return "", ""
    try:
        verdict = rt.check_implementation(tensors.clone(pristine), tensors.clone(output))
    except Exception as exc:  # noqa: BLE001  (on this output the problem's own check could not say yes)
        return "check_implementation", (f"the problem's check_implementation raised on this output: "
                                        f"{type(exc).__name__}: {str(exc)[:300]}")
    ok, message = _normalise_check(verdict)
    return ("", "") if ok else ("check_implementation", f"the problem's check_implementation rejected it: {message}")


def extra_checks(rt: ReferenceRuntime, pristine: Any, output: Any, checked: tuple[str, str] | None = None,
                 argument: float = 0.0) -> tuple[str, str]:
    """The problem's own check_implementation (``checked``, where already run) and declared properties, in
    addition to the comparison. ``argument``: ``_exp_argument``'s."""
    failure, message = checked if checked is not None else problem_check(rt, pristine, output)
    if failure:
        return failure, message
    leaves = tensors.leaves(output)
    for prop in rt.problem.spec.properties:
        message = check_property(prop, pristine, leaves[0][1], argument) if leaves else "no tensor output"
        if message:
            return "property", f"property {prop.name} fails: {message}"
    return "", ""


def _normalise_check(verdict: Any) -> tuple[bool, str]:
    """GPU MODE's check_implementation returns (ok, message), or an error string ('' = ok), or a list."""
    if isinstance(verdict, tuple) and len(verdict) == 2:
        return bool(verdict[0]), str(verdict[1])
    if isinstance(verdict, str):
        return verdict == "", verdict
    if isinstance(verdict, list):
        return not verdict, "; ".join(map(str, verdict))
    return bool(verdict), ""
