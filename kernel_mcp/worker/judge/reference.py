"""The trusted side of a problem, inside the judge: inputs made as worker/inputs.py makes them, what the
reference does with each (judge/roles.py), expected outputs from its float64 run.

Every run of the reference on a case, and the candidate's call on it, starts from the case's own RNG seed
(``rng_seed``): a reference that draws random numbers (dropout) draws the same ones in every run, and a
candidate that draws them the same way gets the same ones.
"""
from __future__ import annotations

import copy
import functools
import os
import secrets
from dataclasses import dataclass, field
from typing import Any

import torch

from kernel_mcp import expr
from kernel_mcp.problem import Problem
from kernel_mcp.results import Finding
from kernel_mcp.worker import kernelbench, tensors, trace
from kernel_mcp.worker.inputs import ProblemInputs
from kernel_mcp.worker.judge import expected_leaves, float64_run, roles, shared_truth
from kernel_mcp.worker.judge.parking import inputs_parked, park, release_device_memory, run_parked
from kernel_mcp.worker.judge.reduction_trace import Terms
from kernel_mcp.worker.judge.shared_truth import SharedTruth, Truth
from kernel_mcp.worker.judge.tolerance import Expected, inferred_reduction_length


@dataclass
class CaseData:
    """One case's inputs as the candidate gets them (unread inputs poisoned), the reference's own
    task-dtype run on them, and the RNG seed every run on them starts from."""

    data: Any
    run: roles.TaskRun
    rng_seed: int


@dataclass
class Reference:
    """Expected outputs for one input: the structure to match and one ``Expected`` per tensor leaf, and
    per input compared after the call (roles.Roles.compared_after) its expected values then."""

    structure: Any  # the task-dtype output of ref_kernel: types, shapes, dtypes, devices to match
    leaves: list[tuple[str, Expected]]
    findings: list[Finding] = field(default_factory=list)
    inferred_k: float = 1.0  # tolerance.inferred_reduction_length, for problems that declare no K
    after: list[tuple[int, Expected]] = field(default_factory=list)
    terms: list[Terms] = field(default_factory=list)  # per leaf, then per input after: K traced in float64
    memo: str = ""  # in a batch, what its float64 truth was stored under (judge/shared_truth.py)


def _private_pool(device: str) -> Any:
    """A memory pool for what the candidate may see. KERNEL_MCP_SHARE_POOL=0 turns it off: only for the
    test that shows what it prevents."""
    if not device.startswith("cuda") or not hasattr(torch.cuda, "MemPool") \
            or os.environ.get("KERNEL_MCP_SHARE_POOL", "1") == "0":
        return None
    return torch.cuda.MemPool()


class ReferenceRuntime(ProblemInputs):
    """The judge's side of a problem: its inputs (ProblemInputs), what the reference does with each, and the
    float64 truth."""

    def __init__(self, problem: Problem, device: str):
        super().__init__(problem, device)
        if problem.kind == "gpumode":
            self._ref = self.module.ref_kernel
        else:
            self.model64 = copy.deepcopy(self.model).to(torch.float64)
        self.check_implementation = getattr(self.module, "check_implementation", None)
        self.declared_outputs: list[int] = list(problem.spec.output_args or [])
        self.rng_seed = 0  # of the case being judged (CaseData.rng_seed)
        self.recheck: set[int] | None = None  # inputs the first case found unread: tested again on every case
        self.roles_seen: dict[int, set[str]] = {}  # input index -> the roles it had (roles.Roles.names)
        self.cases_seen = 0
        self.call_timeout = problem.spec.timeouts.call  # seconds; judge/footprint.py lengthens it for slow problems
        self._share_pool = _private_pool(device)
        self.shared: SharedTruth | None = None  # a batch's store of float64 truths (judge/shared_truth.py)

    def share_copy(self, pristine: Any) -> Any:
        """The copy of the inputs the candidate gets. On a GPU it comes from a memory pool of its own:
        CUDA/HIP IPC maps the candidate the *whole* allocator segment around a tensor, so a copy carved
        from the judge's general pool would expose neighbouring tensors, such as the expected output,
        to a candidate that reads past its input's bounds."""
        if self._share_pool is None:
            return tensors.clone(pristine)
        with torch.cuda.use_mem_pool(self._share_pool):
            return tensors.clone(pristine)

    @property
    def pooled_shares(self) -> bool:
        """Do shared copies come from the private pool (which keeps its blocks reserved once they are freed)?"""
        return self._share_pool is not None

    @property
    def shares_isolated_memory(self) -> bool:
        return self._share_pool is not None or not self.device.startswith("cuda")

    def kernelbench_mode(self) -> str:
        """The mode both models run in, as a result states it."""
        mode = "training" if self.model.training else "eval"
        batch_norm = any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in self.model.modules())
        return (f"Model and ModelNew run in {mode} mode, as KernelBench runs them, with the same parameters and "
                "buffers" + (" (BatchNorm uses each batch's statistics)" if self.model.training and batch_norm else ""))

    # --- inputs --------------------------------------------------------------------------------------
    def probe_signed_inputs(self, params: dict[str, Any]) -> Finding | None:
        """KernelBench: may inputs of one sign be given random signs? Not where that makes the reference
        return NaN or Inf where it did not (a log, a sqrt, a probability input)."""
        if self.problem.kind != "kernelbench":
            return None
        data = self.generate(params)
        if not kernelbench.nonnegative_inputs(data):
            return None
        # one output at a time (memory): the first is reduced to a bool before the second is made
        plain = kernelbench.finite_everywhere(self.ref_kernel(tensors.clone(data)))
        flipped = kernelbench.finite_everywhere(self.ref_kernel(kernelbench.signed(data, secrets.randbits(31))))
        self.signed_inputs = flipped or not plain
        if self.signed_inputs:
            return Finding(code="signed_inputs", severity="info", message=(
                "inputs drawn with one sign (torch.rand) are given random signs in the secret-seeded cases and "
                "while timing, so a shortcut exact only on nonnegative inputs (a dropped ReLU or abs) fails"))
        return Finding(code="signed_inputs_skipped", severity="info", message=(
            "giving the inputs random signs makes the reference return NaN or Inf: they keep their own signs, "
            "so a shortcut exact only on nonnegative inputs cannot be caught on this problem"))

    def case(self, params: dict[str, Any], signed: bool = False, rng_seed: int | None = None) -> CaseData:
        """A case's inputs, with each input's role measured on them (judge/roles.py) and the unread ones
        poisoned, and the reference's task-dtype run on what the candidate will get; ``rng_seed``: the RNG
        seed of an earlier serving of the case (a repeat), else a fresh one."""
        self.rng_seed = secrets.randbits(31) if rng_seed is None else rng_seed
        data = self.generate(params, signed)
        run = roles.measure(self.ref_kernel, data, self.recheck, self.declared_outputs,
                            outputs_only=self.problem.kind == "kernelbench")
        if self.recheck is None:
            self.recheck = set(run.roles.poisoned())
        poisoned = run.roles.poisoned()
        leaves = tensors.leaves(data)
        for i in poisoned:
            tensors.poison_(leaves[i][1])
        if poisoned:  # the output buffers' untouched elements now hold the poison: the reference's run too
            found, run = run.roles, None  # the first run's output freed before the second is made
            run = roles.rerun(self.ref_kernel, data, found)
        self.cases_seen += 1
        for i, name in run.roles.names().items():
            self.roles_seen.setdefault(i, set()).add(name)
        return CaseData(data=data, run=run, rng_seed=self.rng_seed)

    def ref_kernel(self, data: Any, float64: bool = False) -> Any:
        """One run of the reference, from the case's RNG seed (the same random draws in every run)."""
        torch.manual_seed(self.rng_seed)
        return self.unseeded(data, float64)

    def unseeded(self, data: Any, float64: bool = False) -> Any:
        """The reference itself (timing: seeding the RNG takes longer than a small op, so it is done
        before the clock starts)."""
        if self.problem.kind == "kernelbench":
            with torch.no_grad():
                return (self.model64 if float64 else self.model)(*data)
        return self._ref(data)

    # --- expected outputs ----------------------------------------------------------------------------
    def expected(self, case: CaseData, params: dict[str, Any]) -> Reference:
        """ref_kernel in float64 on the case's input values, on |inputs| when the tolerance needs the
        magnitude of the summed terms; the task-dtype run (``case.run``) gives the structure and the
        'honest' error. Inputs compared after the call get their values after each run as well. When the
        problem is large (``tight_memory``) the pristine inputs wait in host memory while the float64 runs
        take the device, and what those return waits there after."""
        pristine, after = case.data, case.run.roles.compared_after()
        self.rng_seed = case.rng_seed
        key = self._memo_key(pristine, after)
        truth = self._stored_truth(key) if key else None
        if truth is None:
            with inputs_parked(pristine, self.tight_memory) as parked, run_parked(case.run, self.tight_memory):
                # the parked tensors' blocks back to the device: the float64 run asks for blocks twice their size,
                # which cached ones cannot serve, and cached they would hold memory no neighbour can have
                release_device_memory(self.device, self.tight_memory)
                truth = self._float64_truth(pristine, after, self.device if parked else None, bool(key))
            if key:
                needs_magnitude = self.problem.spec.tolerance.magnitude == "abs_inputs"
                self.shared.save(key, truth, truth.ref64 is not None and (truth.magnitude is not None
                                                                          or not needs_magnitude))
        ref64, terms, magnitude, findings = truth.ref64, truth.terms, truth.magnitude, list(truth.findings)
        honest = (tensors.floats_as_tensors(case.run.output), [case.run.after[i] for i in after])
        structure = honest[0]
        exact = ref64 is not None
        paired = expected_leaves.pairs(honest, ref64 if exact else honest, magnitude, after)
        expect = [expected_leaves.leaf(path, h, r, m, exact, findings) for path, h, r, m in paired]
        elements = [sum(t.numel() for _, t in tensors.leaves(tree) if t.is_floating_point())
                    for tree in (pristine, honest)]
        outputs = len(tensors.leaves(structure))
        return Reference(structure=structure, leaves=expect[:outputs], findings=findings,
                         inferred_k=inferred_reduction_length(*elements), terms=terms,
                         after=[(i, e) for i, (_, e) in zip(after, expect[outputs:])], memo=key)

    def _float64_truth(self, pristine: Any, after: list[int], home: str | None, kept: bool = False) -> Truth:
        """The float64 runs of one case (``home``: where each input's float64 copy goes, None: where it is);
        ``kept``: for a batch's store, with the buffers a KernelBench model's runs left."""
        findings: list[Finding] = []
        run = functools.partial(self.ref_kernel, float64=True)
        ref64, terms = float64_run.run(run, pristine, home, findings, after, self.tight_memory, traced=True)
        trace.mark("float64 reference made")
        magnitude = None
        if ref64 is not None and self.problem.spec.tolerance.magnitude == "abs_inputs":
            magnitude, _ = float64_run.run(run, tensors.absolute(pristine), home, findings, after,
                                           self.tight_memory, quiet=True)
        buffers = {name: b.detach().cpu() for name, b in self.model64.named_buffers()} \
            if kept and self.problem.kind == "kernelbench" else None
        return Truth(ref64=ref64, terms=terms, magnitude=magnitude, findings=findings, buffers_after=buffers)

    def _memo_key(self, pristine: Any, after: list[int]) -> str:
        """In a batch, the key of this case's truth in its store: a digest of everything the float64 runs read
        (the inputs' bits, the case's RNG seed, the float64 model's parameters and buffers, what is compared
        after, the tolerance's magnitude rule, torch and the device; not where the result waits: a truth read
        back is placed as this check's own run would place it). "" outside a batch, or for inputs it cannot
        describe exactly."""
        if self.shared is None:
            return ""
        device = torch.cuda.get_device_name(self.device) if self.device.startswith("cuda") else self.device
        state = None
        if self.problem.kind == "kernelbench":  # buffers that are not in state_dict (persistent=False) too
            state = [dict(self.model64.named_parameters()), dict(self.model64.named_buffers())]
        context = [self.rng_seed, after, self.problem.spec.tolerance.magnitude, torch.__version__, device]
        try:
            return self.shared.key(shared_truth.fingerprint(pristine, state, context))
        except Exception:  # noqa: BLE001  (NotFingerprinted, keys JSON cannot sort, a tensor with no plain bits,
            return ""  # out of memory: that case is computed as a check alone computes it, never a harness error)

    def _stored_truth(self, key: str) -> Truth | None:
        """The truth a check of this batch stored for the same inputs, placed where this check's own run would
        have put it; a KernelBench float64 model takes the buffers that run left (BatchNorm's statistics)."""
        entry = self.shared.load(key)
        if entry is None:
            return None
        place = park if self.tight_memory else (lambda t: t.to(self.device))
        truth = shared_truth.from_entry(entry, place, Terms)
        if truth.buffers_after is not None:
            buffers = dict(self.model64.named_buffers())
            if set(buffers) != set(truth.buffers_after):
                return None
            with torch.no_grad():
                for name, value in truth.buffers_after.items():
                    buffers[name].copy_(value)
        trace.mark("float64 reference read from the batch's store")
        return truth

    def reduction_length(self, params: dict[str, Any], reference: Reference | None = None,
                         leaf: int = 0) -> tuple[float, str]:
        """(K, where it comes from) for output leaf ``leaf`` (outputs first, then inputs compared after): the
        problem's declared K, else the terms the float64 run was seen to sum into it, else (no aten
        reduction seen: an elementwise op, or a kernel aten does not see) input elements per output element."""
        policy = self.problem.spec.tolerance
        if "K" in policy.model_fields_set or reference is None:
            return expr.evaluate(policy.K, params), "declared"
        seen = reference.terms[leaf] if leaf < len(reference.terms) else Terms()
        if seen.k > 1.0:
            return seen.k, f"traced: {seen.via}"
        return reference.inferred_k, "inputs per output"
