"""Can a result be reproduced (issue 39)? Where it came from (``Provenance``: the device and software stack it
was measured on, and what differs between two of them) and whether the same input gives the same bits
(``Determinism``). Measured by the judge (worker/judge/provenance.py, determinism.py); kept in results and
snapshots."""
from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field


class Provenance(BaseModel):
    """What produced a result: the device and the software stack, read by the judge that ran it ("" where it
    could not be read). Two results measured on different stacks are not comparable as if they were one."""

    device: str = ""  # the device's name ("cpu" on a CPU)
    device_uuid: str = ""
    driver: str = ""  # NVIDIA's driver version (NVML)
    cuda: str = ""  # the CUDA runtime torch was built with (torch.version.cuda)
    rocm: str = ""  # the HIP runtime torch was built with (torch.version.hip)
    toolkit: str = ""  # the CUDA toolkit nvcc belongs to (its version.json), where one is found
    torch: str = ""
    triton: str = ""
    kernel_mcp: str = ""
    python: str = ""
    clocks_mhz: dict[str, int] = Field(default_factory=dict)  # SM and memory clocks when the run ended (NVML)

    STACK: ClassVar[tuple[str, ...]] = ("device", "driver", "cuda", "rocm", "toolkit", "torch", "triton")

    def differences(self, other: Provenance) -> list[str]:
        """The parts of the stack that differ ("torch 2.11.0 -> 2.12.0"); a part either side lacks is not
        counted as a difference."""
        return [f"{field} {getattr(self, field)} -> {getattr(other, field)}" for field in self.STACK
                if getattr(self, field) and getattr(other, field) and getattr(self, field) != getattr(other, field)]


class Determinism(BaseModel):
    """The candidate's output on one input, computed again from the same input and RNG seed: bit for bit the
    same or not (NaNs equal where their bits are)."""

    case: str  # which case was repeated
    same_process: bool | None = None  # a second call in the same process
    fresh_process: bool | None = None  # a call in a second, fresh process (None: not run; it is run when
    # the task declares ``deterministic: true``)
    differing_elements: int = 0  # in the worse of the two repeats
    elements: int = 0  # in the output

    @property
    def deterministic(self) -> bool | None:
        seen = [v for v in (self.same_process, self.fresh_process) if v is not None]
        return all(seen) if seen else None
