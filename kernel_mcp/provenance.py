"""Provenance: the device and software stack a result was measured on (issue 39), and what differs between
two of them. Read by the judge (worker/judge/provenance.py); kept in results and snapshots."""
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
