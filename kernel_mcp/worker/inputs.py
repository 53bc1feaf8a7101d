"""A problem's inputs, made as the judge makes them, and what a candidate's process needs to start (a
KernelBench ModelNew's weights): shared by the judge (judge/reference.py extends it with the truth) and the
untrusted steps that run a candidate on a test's inputs (recording Triton launches, hardware counters).

GPU MODE folders: ``reference.py`` is imported with its folder and the parent on ``sys.path`` (it imports
``task`` and ``utils`` from there). KernelBench files: ``Model(*get_init_inputs())`` is the reference;
the candidate's ``ModelNew`` gets the same seed and the Model's parameters, so weights are identical
(kernelbench.py: constant initial parameters varied, inputs of one sign given both).
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

import torch

from kernel_mcp.problem import Problem
from kernel_mcp.worker import kernelbench, tensors


def import_file(path: Path, name: str, search: list[Path]) -> Any:
    """The module at ``path``, imported as ``name`` with ``search`` at the front of sys.path."""
    for folder in reversed(search):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def sign_seed(seed: int) -> int:
    """The signs of a signed case's inputs follow from its seed, which is secret wherever signs are given (a
    secret-seeded case, timing): the same inputs wherever the case is made (the checks of one batch share
    them, judge/shared_truth.py), and no easier to foresee than the seed."""
    return int(hashlib.sha256(f"signs of {seed}".encode()).hexdigest()[:8], 16) >> 1


class ProblemInputs:
    def __init__(self, problem: Problem, device: str):
        self.problem, self.device = problem, device
        if problem.kind == "gpumode":
            self.module = import_file(problem.reference_file, "reference", [problem.path, problem.path.parent])
            self._generate = self.module.generate_input
            self._takes_device = "device" in inspect.signature(self._generate).parameters
        else:
            self._init_kernelbench()
        self.signed_inputs = False  # KernelBench: inputs of one sign get random signs (kernelbench.signed)
        self.tight_memory = False  # footprint.Footprint.tight: float64 parked in host memory, memory given back
        self.on_device_inputs = True  # KernelBench: get_inputs() runs with the device as default (falls back)

    # --- KernelBench adapter -------------------------------------------------------------------------
    def _init_kernelbench(self) -> None:
        self.module = import_file(self.problem.path, "kernelbench_reference", [self.problem.path.parent])
        self.init_inputs = list(self.module.get_init_inputs())
        self.model_seed = 42
        torch.manual_seed(self.model_seed)
        # left in the mode it is built in (training), as KernelBench's own harness runs Model and ModelNew:
        # BatchNorm then normalises by the batch's statistics; ModelNew is put in the same mode
        self.model = self.module.Model(*self.init_inputs).to(self.device)
        self.initial_parameters = kernelbench.vary_constant_parameters(self.model, self.model_seed)
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
        # Copies: on a CPU ``.cpu()`` is the judge's own tensor, and sending it moves its storage into shared
        # memory the host maps writable; a candidate that wrote there would choose the judge's Model weights,
        # and with them the task-dtype run that sets its bound (tests/cheats/kb_poison_judge_weights.py).
        state = {k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()}
        return {**release, "kernelbench": {"init_inputs": tensors.clone(self.init_inputs), "state_dict": state,
                                           "seed": self.model_seed, "initial": self.initial_parameters,
                                           "training": self.model.training}}

    def generate(self, params: dict[str, Any], signed: bool = False) -> Any:
        if self.problem.kind == "kernelbench":
            data = self._kernelbench_inputs(int(params["seed"]))
            return kernelbench.signed(data, sign_seed(int(params["seed"]))) if signed and self.signed_inputs else data
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
