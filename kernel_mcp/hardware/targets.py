"""Compile targets by name: NVIDIA sm_XX and AMD gfxXXX, and what Triton calls them (GPUTarget)."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from kernel_mcp.errors import UsageError, shown
from kernel_mcp.hardware.devices import present_device

# What Triton 3.x's NVIDIA and AMD backends compile for (sm_90 and sm_100 compile as sm_90a / sm_100a).
NVIDIA = {"sm_80": 80, "sm_86": 86, "sm_89": 89, "sm_90": 90, "sm_90a": 90, "sm_100": 100, "sm_100a": 100,
          "sm_120": 120}
AMD = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201")
DEFAULT_CROSS = ("sm_80", "sm_90a", "sm_100", "gfx90a", "gfx942", "gfx950")  # when no GPU is present


@dataclass(frozen=True)
class Target:
    name: str  # as the user wrote it, e.g. "sm_90a" or "gfx942"
    vendor: str  # "nvidia" or "amd"
    arch: int | str  # Triton's GPUTarget arch: 90 or "gfx942"
    warp_size: int

    def triton(self):
        from triton.backends.compiler import GPUTarget
        return GPUTarget("cuda" if self.vendor == "nvidia" else "hip", self.arch, self.warp_size)


def valid_names() -> list[str]:
    return [*NVIDIA, *AMD]


def parse(name: str) -> Target:
    key = name.strip().lower()
    if key in NVIDIA:
        return Target(key, "nvidia", NVIDIA[key], 32)
    if key in AMD:
        return Target(key, "amd", key, 32 if key.startswith("gfx1") else 64)  # RDNA runs wave32 in Triton
    raise UsageError(f"unknown target {shown(name)}; valid targets: {', '.join(valid_names())}")


def present() -> list[Target]:
    """The GPU of this machine as a target, or [] when there is none (imports torch; looked up once)."""
    return list(_present())


@functools.cache
def _present() -> tuple[Target, ...]:
    device = present_device()
    if device is None:
        return ()
    if device.vendor == "amd":
        return (parse(device.arch),) if device.arch in AMD else ()
    name = device.arch + ("a" if device.arch in ("sm_90", "sm_100") else "")
    return (parse(name),) if name in NVIDIA else ()
