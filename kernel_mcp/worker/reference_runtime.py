"""The trusted side of a problem, inside the judge: make inputs, compute expected outputs.

GPU MODE folders: ``reference.py`` is imported with its folder and the parent on ``sys.path`` (it imports
``task`` and ``utils`` from there). KernelBench files: ``Model(*get_init_inputs())`` is the reference;
the candidate's ``ModelNew`` gets the same seed and the Model's state_dict, so weights are identical.
"""
from __future__ import annotations

import copy
import importlib.util
import inspect
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernel_mcp import expr, tensors
from kernel_mcp.problem import Problem
from kernel_mcp.results import Finding
from kernel_mcp.tolerance import Expected, inferred_reduction_length
from kernel_mcp.worker import trace
from kernel_mcp.worker.host_memory import inputs_parked, park


@dataclass
class Reference:
    """Expected outputs for one input: the structure to match and one ``Expected`` per tensor leaf."""

    structure: Any  # the task-dtype output of ref_kernel: types, shapes, dtypes, devices to match
    leaves: list[tuple[str, Expected]]
    findings: list[Finding] = field(default_factory=list)
    inferred_k: float = 1.0  # tolerance.inferred_reduction_length, for problems that declare no K


def _import_file(path: Path, name: str, search: list[Path]) -> Any:
    for folder in reversed(search):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _private_pool(device: str) -> Any:
    """A memory pool for what the candidate may see. KERNEL_MCP_SHARE_POOL=0 turns it off: only for the
    test that shows what it prevents."""
    if not device.startswith("cuda") or not hasattr(torch.cuda, "MemPool") \
            or os.environ.get("KERNEL_MCP_SHARE_POOL", "1") == "0":
        return None
    return torch.cuda.MemPool()


class ReferenceRuntime:
    def __init__(self, problem: Problem, device: str):
        self.problem, self.device = problem, device
        if problem.kind == "gpumode":
            self.module = _import_file(problem.reference_file, "reference", [problem.path, problem.path.parent])
            self._generate = self.module.generate_input
            self._ref = self.module.ref_kernel
            self._takes_device = "device" in inspect.signature(self._generate).parameters
        else:
            self._init_kernelbench()
        self.check_implementation = getattr(self.module, "check_implementation", None)
        self.output_args: list[int] = list(problem.spec.output_args or [])
        self.scratch_args: list[int] = []  # of output_args: inputs the reference never reads
        self.tight_memory = False  # footprint.Footprint.tight: float64 parked in host memory, memory given back
        self.call_timeout = problem.spec.timeouts.call  # seconds; footprint.py lengthens it for slow problems
        self.on_device_inputs = True  # KernelBench: get_inputs() runs with the device as default (falls back)
        self._share_pool = _private_pool(device)

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
    def shares_isolated_memory(self) -> bool:
        return self._share_pool is not None or not self.device.startswith("cuda")

    # --- KernelBench adapter -------------------------------------------------------------------------
    def _init_kernelbench(self) -> None:
        self.module = _import_file(self.problem.path, "kernelbench_reference", [self.problem.path.parent])
        self.init_inputs = list(self.module.get_init_inputs())
        self.model_seed = 42
        torch.manual_seed(self.model_seed)
        # left in the mode it is built in (training), as KernelBench's own harness runs Model and ModelNew:
        # BatchNorm then normalises by the batch's statistics; ModelNew is put in the same mode
        self.model = self.module.Model(*self.init_inputs).to(self.device)
        self.model64 = copy.deepcopy(self.model).to(torch.float64)
        self._takes_device = False

    def weight_bytes(self) -> int:
        """Device memory the reference holds between calls in the task dtype (a KernelBench model's
        parameters and buffers; its float64 twin is the judge's own and not counted)."""
        if self.problem.kind != "kernelbench":
            return 0
        return sum(t.nbytes for t in self.model.state_dict().values() if t.device.type != "cpu")

    def candidate_init(self) -> dict:
        """Extra start-up data for the candidate host: whether to give memory back between calls, and
        (KernelBench) how to build ModelNew."""
        release = {"release_between_calls": self.tight_memory}
        if self.problem.kind != "kernelbench":
            return release
        state = {k: v.detach().cpu() for k, v in self.model.state_dict().items()}
        return {**release, "kernelbench": {"init_inputs": self.init_inputs, "state_dict": state, "seed": self.model_seed,
                                "training": self.model.training}}

    def kernelbench_mode(self) -> str:
        """The mode both models run in, as a result states it."""
        mode = "training" if self.model.training else "eval"
        batch_norm = any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in self.model.modules())
        return (f"Model and ModelNew run in {mode} mode, as KernelBench runs them, with the same parameters and "
                "buffers" + (" (BatchNorm uses each batch's statistics)" if self.model.training and batch_norm else ""))

    # --- inputs --------------------------------------------------------------------------------------
    def generate(self, params: dict[str, Any]) -> Any:
        if self.problem.kind == "kernelbench":
            return self._kernelbench_inputs(int(params["seed"]))
        kwargs = dict(params)
        if self._takes_device:
            kwargs["device"] = self.device
        return self._generate(**kwargs)

    def _kernelbench_inputs(self, seed: int) -> Any:
        """``get_inputs()`` made directly on the device (its factory calls, e.g. ``torch.rand(4096, 393216)``,
        take the device as default): at KernelBench's sizes making 1.6 G values on the CPU and copying them
        took seconds per case. One that cannot (numpy, an explicit CPU tensor op) is made on the CPU and
        moved, as KernelBench does; either way the same seed gives the same inputs."""
        if self.on_device_inputs:
            torch.manual_seed(seed)
            try:
                with torch.device(self.device):
                    return tensors.tree_map(lambda t: t.to(self.device), tuple(self.module.get_inputs()))
            except Exception:  # noqa: BLE001  (then always on the CPU: one way per problem)
                self.on_device_inputs = False
        torch.manual_seed(seed)
        return tensors.tree_map(lambda t: t.to(self.device), tuple(self.module.get_inputs()))

    def ref_kernel(self, data: Any, float64: bool = False) -> Any:
        if self.problem.kind == "kernelbench":
            with torch.no_grad():
                return (self.model64 if float64 else self.model)(*data)
        return self._ref(data)

    def detect_output_args(self, data: Any) -> list[int]:
        """Inputs the candidate may write and return (the rest must stay unchanged): output buffers (GPU
        MODE passes some), those the reference writes into or returns; and scratch, those whose contents
        the reference never reads (GPU MODE's ``torch.empty`` buffer that ``ref_kernel`` ignores: poisoned,
        it leaves the reference's output bit for bit unchanged). Both are poisoned before every call, so
        one returned unwritten is wrong."""
        if self.output_args or self.problem.kind == "kernelbench":
            return self.output_args
        trial, before = tensors.clone(data), tensors.clone(data)
        out = self.ref_kernel(trial)
        out_ptrs = {t.untyped_storage().data_ptr() for _, t in tensors.leaves(out)}
        found = []
        for i, ((_, new), (_, old)) in enumerate(zip(tensors.leaves(trial), tensors.leaves(before))):
            if not tensors.same_bytes(new, old) or new.untyped_storage().data_ptr() in out_ptrs:
                found.append(i)
        del trial, out
        self.scratch_args = [i for i, (_, t) in enumerate(tensors.leaves(before))
                             if i not in found and t.numel() and self._never_read(before, i)]
        self.output_args = sorted(found + self.scratch_args)
        return self.output_args

    def _never_read(self, pristine: Any, index: int) -> bool:
        """Does the reference's output stay bit for bit the same when input ``index`` is poisoned? (A
        reference that is not deterministic makes every input count as read: the safe side.)"""
        plain, poisoned = tensors.clone(pristine), tensors.clone(pristine)
        tensors.poison_(tensors.leaves(poisoned)[index][1])
        try:
            return tensors.same_output(self.ref_kernel(plain), self.ref_kernel(poisoned))
        except Exception:  # noqa: BLE001  (a reference that refuses the poisoned value has read it)
            return False

    def poison_outputs(self, data: Any) -> None:
        leaves = tensors.leaves(data)
        for i in self.output_args:
            if i < len(leaves):
                tensors.poison_(leaves[i][1])

    # --- expected outputs ----------------------------------------------------------------------------
    def expected(self, pristine: Any, params: dict[str, Any]) -> Reference:
        """ref_kernel in float64 on the same input values, on |inputs| when the tolerance needs the magnitude
        of the summed terms, and in the task dtype (the structure, and the 'honest' error). The float64 runs
        come first, and when the problem is large (``tight_memory``) the pristine inputs wait in host memory
        while they run and what they return waits there after, so the device holds one float64 run, then
        the pristine inputs and the task-dtype output."""
        findings: list[Finding] = []
        with inputs_parked(pristine, self.tight_memory) as parked:
            home = self.device if parked else None  # None: each input's float64 copy where the input is
            ref64 = tensors.floats_as_tensors(self._float64(pristine, home, findings))
            trace.mark("float64 reference made")
            magnitude = None
            if ref64 is not None and self.problem.spec.tolerance.magnitude == "abs_inputs":
                magnitude = tensors.floats_as_tensors(
                    self._float64(tensors.absolute(pristine), home, findings, quiet=True))
        honest = tensors.floats_as_tensors(self.ref_kernel(tensors.clone(pristine)))
        honest_leaves = tensors.leaves(honest)
        exact = ref64 is not None
        ref_leaves = tensors.leaves(ref64) if exact else honest_leaves
        mag_leaves = tensors.leaves(magnitude) if magnitude is not None else [None] * len(honest_leaves)
        out = []
        for (path, h), (_, r), m in zip(honest_leaves, ref_leaves, mag_leaves):
            out.append((path, Expected(ref=r.detach(), honest=h.detach() if exact else None,
                                       magnitude=None if m is None else m[1].detach(), exact64=exact)))
        elements = [sum(t.numel() for _, t in tensors.leaves(tree) if t.is_floating_point()) for tree in (pristine, honest)]
        return Reference(structure=honest, leaves=out, findings=findings, inferred_k=inferred_reduction_length(*elements))

    def _float64(self, data: Any, home: str | None, findings: list[Finding], quiet: bool = False) -> Any | None:
        try:
            out = self.ref_kernel(tensors.upcast(data, home), float64=True)
            if self.tight_memory:
                out = tensors.tree_map(park, out)
        except Exception as exc:  # noqa: BLE001  (any failure means: no float64 reference for this problem)
            why = str(exc).split("\n")[0][:300]
            if isinstance(exc, torch.OutOfMemoryError):
                torch.cuda.empty_cache()  # the failed run's blocks go back to the device for the rest
                why = "the float64 run does not fit in the device's free memory"
            if not quiet:
                findings.append(Finding(code="no_float64_reference", severity="info",
                                        message=f"ref_kernel failed on float64 inputs ({type(exc).__name__}: "
                                                f"{why}); comparing with the task-dtype reference"))
            return None
        low = [p for p, t in tensors.leaves(out) if t.is_floating_point() and t.dtype != torch.float64]
        if low:
            if not quiet:
                findings.append(Finding(code="no_float64_reference", severity="info",
                                        message=f"ref_kernel returned {', '.join(low) or 'output'} below float64 "
                                                "on float64 inputs; comparing with the task-dtype reference"))
            return None
        return out

    def reduction_length(self, params: dict[str, Any], reference: Reference | None = None) -> float:
        """The problem's declared K, or (none declared) what its inputs' and outputs' sizes suggest."""
        policy = self.problem.spec.tolerance
        if "K" in policy.model_fields_set or reference is None:
            return expr.evaluate(policy.K, params)
        return reference.inferred_k
