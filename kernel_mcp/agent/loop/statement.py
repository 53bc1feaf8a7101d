"""The problem, stated for a model agent once per session (its system prompt, the same for every session of a
run, so a provider's prompt cache keeps it): what the reference computes and its source, the shapes it is
checked and timed on, the precision contract the outputs are held to, and the starting kernel as measured
(per shape: time, speedup, % of the roof and what binds it; the device and its ceilings).

The starting kernel's numbers are its evaluation's feedback (agent/loop/feedback.py), kept in the journal: a
resumed run states the problem without measuring anything again.
"""
from __future__ import annotations

from kernel_mcp.problem import Problem
from kernel_mcp.taskspec import KernelMcpSpec
from kernel_mcp.views.summaries import clip

STATEMENT_CHARS = 24000  # ~6,000 tokens: the whole statement, the reference's source clipped first
SHAPES_SHOWN = 12  # per list; a KernelBench file has one, a GPU MODE task a dozen at most

CONTRACTS = {
    "strict": "outputs are compared with a float64 run of the reference, element by element, within a bound "
              "derived from the task's dtype and reduction length; no TF32 anywhere",
    "torch_defaults": "outputs are compared with a float64 run of the reference within a bound derived from the "
                      "task's dtype and reduction length, under PyTorch's default numerics (e.g. TF32 cuDNN "
                      "convolutions)",
    "problem_check": "the problem's own check_implementation decides whether the outputs are right",
}


def problem_statement(problem: Problem, timed: str, baseline: str) -> str:
    """The statement for ``problem``, whose ``timed`` shapes ("benchmarks" or "tests") are timed, with the
    starting kernel's evaluation feedback ``baseline``."""
    head = [f"## The problem `{problem.name}`", problem.description.strip() or "(no description)"]
    shapes = ["## Shapes", _shapes("checked on (each check also serves secret seeds and one shape not listed)",
                                   problem.tests),
              _shapes("timed on" if timed == "benchmarks" else "benchmark shapes (this run times the tests)",
                      problem.benchmarks)]
    rest = ["## Precision contract", contract_text(problem.spec), "## The starting kernel, as measured", baseline]
    fixed = "\n\n".join(head + shapes + rest)
    room = max(2000, STATEMENT_CHARS - len(fixed) - 200)
    source = clip(problem.reference_file.read_text(errors="replace"), room)
    reference = [f"## The reference ({problem.reference_file.name}): what the kernel must compute",
                 f"```python\n{source}\n```"]
    return "\n\n".join(head + reference + shapes + rest)


def contract_text(spec: KernelMcpSpec) -> str:
    """What the outputs are held to, in words: the contract, the tolerance in force, the properties."""
    lines = [CONTRACTS[spec.precision or "strict"] + "."]
    tol = spec.tolerance
    if tol.mode == "explicit":
        lines.append(f"Tolerance: |out - ref| <= {tol.atol} + {tol.rtol} * |ref| per element.")
    elif tol.mode == "exact":
        lines.append("Tolerance: an exact match is required.")
    else:
        lines.append(f"Tolerance: derived (reduction length K = {tol.K}); a kernel that accumulates in a lower "
                     "precision than the reference's dtype, or reorders a long reduction badly, fails it.")
    if tol.max_mismatch_fraction:
        lines.append(f"Up to {tol.max_mismatch_fraction:.3g} of the elements may fall outside the bound.")
    if spec.properties:
        lines.append("Properties also checked: " + ", ".join(p.name for p in spec.properties) + ".")
    lines.append("Inputs are regenerated with fresh secret seeds on every check: nothing about them can be "
                 "cached or special-cased.")
    return " ".join(lines)


def _shapes(title: str, listed: list[dict]) -> str:
    if not listed:
        return f"{title}: none listed"
    rows = [f"- {case}" for case in listed[:SHAPES_SHOWN]]
    if len(listed) > SHAPES_SHOWN:
        rows.append(f"- ... and {len(listed) - SHAPES_SHOWN} more")
    return f"{title}:\n" + "\n".join(rows)
