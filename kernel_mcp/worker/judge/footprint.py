"""How much device memory checking a problem takes, known before any candidate runs.

The judge runs the problem's reference once, alone, on its first test and measures its peak P (the
allocator's high-water mark above what was held before, plus a KernelBench model's own weights), with
the inputs' size I and the output's size O. A check's device memory, judge and candidate together, then
peaks at the larger of two moments:

* the candidate's call: the judge holds the pristine inputs, the copy shared with the candidate and the
  reference's task-dtype output, the candidate runs (about P, its inputs being the shared copy), then the
  judge copies its output: P + I + 2*O;
* the float64 reference: the pristine inputs and a float64 run (about 2*P), beside the output the
  candidate keeps until the judge's next call: I + 2*P + O (2*P + O with the inputs parked, below).

On a GPU the copy shared with the candidate comes from a private pool (judge/reference.py) that keeps its
blocks once freed, so the float64 moment also holds I there (4_Matrix_vector_multiplication_, 8 GiB in: the
judge held 26 GiB at its peak, 8 of them in that pool; H100, 2026-12-06).

A KernelBench model's weights W (inside P once) are held for the whole check in four copies: the judge's
model, its float64 twin (2*W) and the candidate's ModelNew. The call adds the three P does not count (3*W),
the float64 run the two 2*P does not (the judge's task-dtype model and ModelNew: 2*W). Without them a
weight-heavy problem reserved half of what it took (59_Matmul_Swish_Scaling, 4 GiB of weights: 8.3 GiB
estimated, the judge alone at 12.4 GiB; H100, 2026-12-06).

A check that would need more than KEEP_SHARE of the device with everything kept there, or (a reference
peaking at RATIO_FROM or more) more than MEMORY_RATIO times the reference's own peak, is *tight*: its
float64 expected outputs, and its pristine inputs while the float64 run has the device, wait in pinned
host memory (as I + O <= P, either moment then stays within 3P), and both sides give back their cached blocks between
the two moments (``release_device_memory``; the candidate host after each call). The comparison runs in pieces either
way (``tolerance.CHUNK``). A float64 run that does not fit falls back to the task-dtype reference with doubled bounds,
so a problem is refused up front only when the candidate's call itself cannot fit.
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from kernel_mcp.worker import tensors
from kernel_mcp.worker.isolation import proctree

if TYPE_CHECKING:
    from kernel_mcp.worker.judge.reference import ReferenceRuntime

GiB = float(1 << 30)
KEEP_SHARE = 1 / 8  # a check needing more than this share of the device is tight on it (Footprint.tight)
# A check may take about 3x what its reference takes alone (issue 13), so that checks of large problems
# side by side fit: output-heavy problems (a matmul with small K, 4 GiB out) kept their float64 outputs on
# the device at 3-4x (H200, 2026-12-01). Below RATIO_FROM the device is not what limits a check.
MEMORY_RATIO = 3.0
RATIO_FROM = 1 << 30
CALL_FACTOR = 20.0  # a candidate's call may take this many times the reference's run (a first call compiles)
FLOAT64_FACTOR = 50.0  # a float64 run may take this many times the task-dtype one (no TF32/tensor cores)


@dataclass
class Footprint:
    reference_peak: int  # bytes: the reference's own run (inputs, weights, temporaries, output)
    inputs: int
    outputs: int
    float64_outputs: int = 0  # bytes of the float64 expected outputs of one case
    reference_seconds: float = 0.0  # wall time of making the inputs and running the reference once
    host_peak: int = 0  # bytes: on a CPU, the reference's run's resident-memory high-water mark above its start
    weights: int = 0  # bytes: a KernelBench model's parameters and buffers in the task dtype (in reference_peak)
    pooled: int = 0  # bytes the share pool keeps reserved between calls (the inputs, on a GPU)

    def call_timeout(self, declared: float) -> float:
        """Seconds a candidate's call may take: the task's timeout, or more for a problem whose own
        reference is slow (a 6 GB input is not served in a budget meant for small shapes)."""
        return max(declared, CALL_FACTOR * self.reference_seconds)

    def run_seconds(self, cases: int, declared_call: float) -> float:
        """Seconds the rest of a check may take: per case, the candidate's call and the judge's own runs."""
        return cases * (self.call_timeout(declared_call) + (FLOAT64_FACTOR + 3) * self.reference_seconds)

    @property
    def call_need(self) -> int:
        return self.reference_peak + self.inputs + 2 * self.outputs + 3 * self.weights

    def need(self, parked: bool) -> int:
        float64_run = ((0 if parked else self.inputs) + self.pooled + 2 * self.reference_peak + self.outputs
                       + 2 * self.weights)
        return max(self.call_need, float64_run) + (0 if parked else self.float64_outputs)

    def tight(self, total_bytes: int | None) -> bool:
        """Is the check tight on a device of ``total_bytes`` (float64 references parked in host memory,
        memory given back between calls)?"""
        if not total_bytes:
            return False
        # judged on what parking can move: the weights' other copies and the share pool stay on the device anyway
        kept = dataclasses.replace(self, weights=0, pooled=0).need(parked=False)
        over_ratio = self.reference_peak >= RATIO_FROM and kept > MEMORY_RATIO * self.reference_peak
        return kept > KEEP_SHARE * total_bytes or over_ratio


def _nbytes(tree: Any) -> int:
    return sum(t.nbytes for _, t in tensors.leaves(tree))


def measure(runtime: ReferenceRuntime, test: dict) -> Footprint:
    """Run the reference once on ``test`` (which also performs its lazy imports before any candidate
    exists) and measure it. Raises what the reference raises."""
    cuda = runtime.device.startswith("cuda")
    started = time.perf_counter()
    if cuda:
        torch.cuda.synchronize(runtime.device)
        torch.cuda.reset_peak_memory_stats(runtime.device)
        held = torch.cuda.memory_allocated(runtime.device)
    else:
        resident = _reset_host_peak()
    data = runtime.generate(test)
    inputs, weights = _nbytes(data), runtime.weight_bytes()
    out = tensors.floats_as_tensors(runtime.ref_kernel(data))
    outputs = _nbytes(out)
    copies = 2 if runtime.problem.spec.tolerance.magnitude == "abs_inputs" else 1
    float64 = copies * sum(8 * t.numel() for _, t in tensors.leaves(out) if t.is_floating_point())
    del data, out
    if not cuda:
        # above what stays resident after the run too: lazy imports and a library's first-use set-up are not the
        # problem's size, and the model would charge them two or three times
        kept = max(resident, _status_bytes("VmRSS"))
        host_peak = max(0, _status_bytes("VmHWM") - kept) + weights if resident else 0
        return Footprint(reference_peak=0, inputs=inputs, outputs=outputs, float64_outputs=float64,
                         reference_seconds=time.perf_counter() - started, host_peak=host_peak, weights=weights)
    torch.cuda.synchronize(runtime.device)
    peak = torch.cuda.max_memory_allocated(runtime.device) - held
    return Footprint(reference_peak=peak + weights, inputs=inputs, outputs=outputs, float64_outputs=float64,
                     reference_seconds=time.perf_counter() - started, weights=weights,
                     pooled=inputs if runtime.pooled_shares else 0)


def hold_to(cap_bytes: int | None, device: str) -> int | None:
    """Hold this process's allocations on ``device`` to ``cap_bytes`` (None: the whole device again).
    torch's caching allocator then raises OutOfMemoryError in this process rather than taking memory a
    neighbour on the device reserved. Returns the cap in force (None off a GPU or when lifted)."""
    if not device.startswith("cuda"):
        return None
    total = device_total(device)
    fraction = 1.0 if not cap_bytes else min(1.0, cap_bytes / total)
    torch.cuda.set_per_process_memory_fraction(fraction, device)
    return cap_bytes if cap_bytes and fraction < 1.0 else None


def device_total(device: str) -> int | None:
    return torch.cuda.get_device_properties(device).total_memory if device.startswith("cuda") else None


def refusal(footprint: Footprint, total_bytes: int | None) -> str:
    """Why this problem cannot be checked on a device of ``total_bytes`` ('' when it fits or is unmeasured)."""
    if not total_bytes or not footprint.reference_peak or footprint.call_need <= total_bytes:
        return ""
    return (f"checking this problem needs at least {footprint.call_need / GiB:.1f} GiB of device memory and "
            f"the device has {total_bytes / GiB:.1f} GiB: the reference alone peaks at "
            f"{footprint.reference_peak / GiB:.1f} GiB, and while the candidate runs the judge also keeps the "
            f"inputs ({footprint.inputs / GiB:.1f} GiB) pristine and the output ({footprint.outputs / GiB:.1f} "
            "GiB) to compare with" + (f", and the model's weights ({footprint.weights / GiB:.1f} GiB) are held four "
                                      "times over: the judge's, their float64 twin and the candidate's"
                                      if footprint.weights else "") + ". Use smaller shapes")


# --- a check on the CPU: refused up front where the machine's memory cannot hold it -------------------------
# On a CPU there is no allocator to raise an error: a check that outgrows the machine's memory is killed by the
# kernel's out-of-memory killer (with whatever else it picks), and ends as a harness error. The reference's
# resident high-water mark stands for P in the same model as on a device (the module's docstring).
HOST_MEMORY_VAR = "KERNEL_MCP_CPU_MEMORY_GIB"  # the memory CPU checks may assume, GiB (default: the machine's)


def host_refusal(footprint: Footprint) -> str:
    """Why this problem cannot be checked in this machine's memory ('' when it fits or was not measured)."""
    total = host_total()
    if not footprint.host_peak or not total:
        return ""
    need = dataclasses.replace(footprint, reference_peak=footprint.host_peak).need(parked=False)
    if need <= total:
        return ""
    return (f"checking this problem on the CPU needs about {need / GiB:.1f} GiB of memory and this machine has "
            f"{total / GiB:.1f} GiB: the reference alone peaks at {footprint.host_peak / GiB:.1f} GiB, and the "
            f"judge also keeps the inputs ({footprint.inputs / GiB:.1f} GiB) pristine, a copy for the candidate, "
            "the outputs and a float64 run. Use smaller shapes, or a GPU")


def host_total() -> int | None:
    """Bytes a CPU check may have on this machine at most: ``KERNEL_MCP_CPU_MEMORY_GIB``, else its memory and swap
    (/proc/meminfo), or less where this process's cgroup is limited (cgroup v2 memory.max): what is there when
    nothing else runs, as the device's total is on a GPU, so that a busy machine never refuses a check that
    fits; None where it is not known."""
    if os.environ.get(HOST_MEMORY_VAR):
        return int(float(os.environ[HOST_MEMORY_VAR]) * GiB)
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        total = sum(int(fields[name].split()[0]) * 1024 for name in ("MemTotal", "SwapTotal"))
    except (OSError, KeyError, ValueError):
        return None
    return min(total, _cgroup_limit() or total)


def _cgroup_limit() -> int | None:
    """This process's cgroup memory limit: v2's memory.max, else v1's memory.limit_in_bytes (a container's
    limit); None where there is none ("max", or v1's near-2^63 "unlimited") or no cgroup file system."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, group = line.split(":", 2)
        if controllers == "":
            where = Path("/sys/fs/cgroup", group.lstrip("/"), "memory.max")
        elif "memory" in controllers.split(","):
            where = Path("/sys/fs/cgroup/memory", group.lstrip("/"), "memory.limit_in_bytes")
        else:
            continue
        try:
            limit = int(where.read_text().strip())
        except (OSError, ValueError):
            continue
        if limit < 1 << 60:
            return limit
    return None


def _reset_host_peak() -> int:
    """Reset this process's resident high-water mark (Linux: 5 to /proc/self/clear_refs) and return what is resident
    now; 0 where the mark cannot be reset (another OS, a /proc that refuses): then nothing is measured."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _status_bytes("VmRSS")
    except OSError:
        return 0


def _status_bytes(field: str) -> int:
    """A size field of this process's /proc status (VmRSS, VmHWM: kB), in bytes; 0 where it is not there."""
    return int((proctree.status_field("self", field) or ["0"])[0]) * 1024
