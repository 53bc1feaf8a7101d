"""What the reference does with each input, measured on every case's own inputs (docs/threat-model.md, rule 10).

An input the reference

* only reads is an ordinary input: the candidate must leave it bit for bit unchanged and not alias it;
* reads *and* writes is updated in place (an optimizer step, axpy, a residual added in place, a GEMM with
  beta = 1): it keeps its values, the candidate may write it, and its values after the call are compared
  with the reference's own values after the call (KernelBench aside: its harness judges a model by what
  it returns, and a model's ``ReLU(inplace=True)`` on its input is incidental, so there such an input may
  change but is not compared);
* writes without reading is an output buffer (GPU MODE passes some), and one it neither reads nor writes is
  scratch (GPU MODE's ``torch.empty`` buffer that ``ref_kernel`` ignores): both are filled with NaN or
  random values before each call, so one returned unwritten is wrong; an output buffer the reference does
  not return is compared after the call too.

"Reads" is measured, not guessed: the input is poisoned on a copy (an integer input's rows drawn again from its own
values: tensors.poison_in_range) and the reference run again; if any output
(or any other input's value after the call, or this input's own value where the plain run wrote it)
changes, the reference read it. A reference that refuses the poisoned value (raises) has read it too. Roles
may differ from case to case (a reference that reads an input for some parameters only), so they are taken
again on every case; only inputs that the first case found unread, or that this case's reference writes,
need the poisoned runs again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from kernel_mcp.worker import tensors


@dataclass(frozen=True)
class Roles:
    """Input leaf indices by what the reference did with them on one case."""

    count: int
    read: frozenset[int]
    written: frozenset[int]
    returned: frozenset[int] = frozenset()  # the reference's output shares the input's storage
    declared: frozenset[int] = frozenset()  # task.yml's output_args: the candidate may write them
    outputs_only: bool = False  # KernelBench: what the model returns is the whole answer

    def poisoned(self) -> list[int]:
        """Inputs filled with NaN/random values before each call: the reference never reads them."""
        return [i for i in range(self.count) if i not in self.read]

    def may_change(self, i: int) -> bool:
        return i in self.written or i not in self.read or i in self.declared

    def may_alias(self, i: int) -> bool:
        return self.may_change(i) or i in self.returned

    def compared_after(self) -> list[int]:
        """Inputs whose values after the call are part of the answer: updated in place, or output buffers
        the reference writes but does not return (returned ones are compared as the output)."""
        if self.outputs_only:
            return []
        return [i for i in sorted(self.written) if i in self.read or i not in self.returned]

    def names(self) -> dict[int, str]:
        """A word for every input that is not an ordinary read-only one."""
        named = {}
        for i in range(self.count):
            if i in self.written and self.outputs_only:
                named[i] = "written by the reference (may change; not compared: the model's output is the answer)"
            elif i in self.written:
                named[i] = "updated in place" if i in self.read else "output buffer"
            elif i not in self.read:
                named[i] = "scratch"
        return named


@dataclass
class TaskRun:
    """The reference's own run in the task dtype on one case: its output, the inputs after it, and roles."""

    roles: Roles
    output: Any
    after: dict[int, torch.Tensor] = field(default_factory=dict)  # written inputs' values after the call


def measure(run: Callable[[Any], Any], data: Any, recheck: set[int] | None, declared: list[int],
            outputs_only: bool = False) -> TaskRun:
    """Run the reference on a copy of ``data`` and find each input's role. ``recheck``: the inputs whose
    reading to test with a poisoned run besides the ones this run writes (None: all of them)."""
    count = len(tensors.leaves(data))
    trial = tensors.clone(data)
    output = run(trial)
    plain = [t for _, t in tensors.leaves(data)]
    after_trial = [t for _, t in tensors.leaves(trial)]
    written = {i for i, (new, old) in enumerate(zip(after_trial, plain)) if not tensors.same_bytes(new, old)}
    ptrs = {t.untyped_storage().data_ptr() for _, t in tensors.leaves(output) if t.untyped_storage().nbytes()}
    returned = {i for i, t in enumerate(after_trial)
                if t.untyped_storage().nbytes() and t.untyped_storage().data_ptr() in ptrs}
    to_test = set(range(count)) if recheck is None else (set(recheck) | written)
    after = {i: after_trial[i] for i in written}
    del trial, after_trial  # the unwritten inputs' copies: device memory a large problem needs below
    unread = {i for i in sorted(to_test) if plain[i].numel() and not _reads(run, data, i, output, after, plain)}
    roles = Roles(count=count, read=frozenset(set(range(count)) - unread), written=frozenset(written),
                  returned=frozenset(returned), declared=frozenset(i for i in declared if i < count),
                  outputs_only=outputs_only)
    return TaskRun(roles=roles, output=output, after={i: after[i] for i in roles.compared_after()})


def _reads(run: Callable[[Any], Any], data: Any, index: int, output: Any, after: dict[int, torch.Tensor],
           plain: list[torch.Tensor]) -> bool:
    """Does the reference's result change when input ``index`` is poisoned?"""
    poisoned = _copy(data, set(after), index)
    leaves = [t for _, t in tensors.leaves(poisoned)]
    try:
        changed = run(poisoned)
    except Exception:  # noqa: BLE001  (a reference that refuses the poisoned value has read it)
        return True
    if not tensors.same_output(output, changed):
        return True
    for i, want in after.items():
        got = leaves[i]
        if i != index:
            if not tensors.same_bytes(got, want):
                return True
        elif not tensors.same_where_written(got, want, plain[i]):
            return True
    return False


def rerun(run: Callable[[Any], Any], data: Any, roles: Roles) -> TaskRun:
    """The reference on a copy of ``data`` (its poisoned inputs filled in), with the roles already found. The
    poisoned inputs are copied too, not only those seen written: a buffer that held the answer before the
    first run (recycled memory) is not seen written, and writing into it here would hand the candidate the
    answer in place of the poison (tests/fixtures/attacks/buffer_holds_answer)."""
    copy = _copy(data, set(roles.written) | set(roles.poisoned()), None)
    output = run(copy)
    leaves = [t for _, t in tensors.leaves(copy)]
    return TaskRun(roles=roles, output=output, after={i: leaves[i] for i in roles.compared_after()})


def _copy(data: Any, written: set[int], poisoned: int | None) -> Any:
    """``data`` for another run of the reference: the inputs it writes copied, input ``poisoned`` a new
    tensor of poison, the rest shared (a whole copy of the inputs beside the reference's own peak was
    most of a large problem's check; the reference does not write them)."""
    index = iter(range(len(tensors.leaves(data))))

    def one(t: torch.Tensor) -> torch.Tensor:
        i = next(index)
        if i == poisoned:  # integers from the input's own values: an out-of-range index ends a GPU reference's process
            return tensors.poison_in_range(t)
        return t.detach().clone() if i in written else t
    return tensors.tree_map(one, data)
