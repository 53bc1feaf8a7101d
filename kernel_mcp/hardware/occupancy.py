"""Static occupancy: how many warps (NVIDIA) or waves (AMD) of a kernel fit on one SM/CU at once, and which
resource limits it. Arithmetic of NVIDIA's occupancy calculator and AMD's CDNA register/LDS rules, from
the limits published per architecture:

* NVIDIA: CUDA C++ Programming Guide, "Compute Capabilities", table "Technical Specifications per Compute
  Capability" (warps/SM, blocks/SM, 64K registers/SM, register allocation unit 256 per warp, shared memory
  per SM, 1 KB of shared memory reserved per block from sm_80 on).
* AMD CDNA2/3/4: "AMD Instinct MI200/MI300 ISA" and the ROCm "GPU specifications" and "Optimizing for
  occupancy" pages (wave64, 4 SIMDs per CU, 512 VGPRs per SIMD lane shared by arch VGPRs and AGPRs,
  granule 8, at most 8 waves per SIMD, 64 KB LDS per CU, 160 KB on gfx950).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel


@dataclass(frozen=True)
class NvidiaLimits:
    max_warps: int
    max_blocks: int
    registers: int = 65536
    register_unit: int = 256  # registers are allocated per warp in units of 256
    shared_bytes: int = 0  # shared memory available to blocks on one SM
    reserved_shared_per_block: int = 1024
    shared_unit: int = 128


@dataclass(frozen=True)
class AmdLimits:
    simds: int = 4
    waves_per_simd: int = 8
    vgprs_per_simd_lane: int = 512  # unified arch VGPR + AGPR file (CDNA2 and later), wave64
    vgpr_granule: int = 8
    lds_bytes: int = 65536
    wave_size: int = 64


NVIDIA = {
    "sm_80": NvidiaLimits(max_warps=64, max_blocks=32, shared_bytes=164 * 1024),
    "sm_86": NvidiaLimits(max_warps=48, max_blocks=16, shared_bytes=100 * 1024),
    "sm_89": NvidiaLimits(max_warps=48, max_blocks=24, shared_bytes=100 * 1024),
    "sm_90": NvidiaLimits(max_warps=64, max_blocks=32, shared_bytes=228 * 1024),
    "sm_100": NvidiaLimits(max_warps=64, max_blocks=32, shared_bytes=228 * 1024),
    "sm_120": NvidiaLimits(max_warps=48, max_blocks=32, shared_bytes=100 * 1024),
}
AMD = {"gfx90a": AmdLimits(), "gfx942": AmdLimits(), "gfx950": AmdLimits(lds_bytes=160 * 1024)}


class Occupancy(BaseModel):
    resident_blocks: int  # thread blocks (workgroups) per SM (CU)
    resident_warps: int  # warps (waves) per SM (CU)
    max_warps: int
    percent: float  # resident / max
    limited_by: str  # "warps", "blocks", "registers", "shared memory", "VGPRs", "LDS", "waves per SIMD"
    note: str = ""


def _round_up(value: int, unit: int) -> int:
    return math.ceil(value / unit) * unit


def _result(limits: dict[str, int], warps_per_block: int, max_warps: int, note: str = "") -> Occupancy:
    binding = min(limits, key=lambda k: limits[k])
    blocks = max(0, limits[binding])
    warps = blocks * warps_per_block
    return Occupancy(resident_blocks=blocks, resident_warps=warps, max_warps=max_warps,
                     percent=round(100.0 * warps / max_warps, 1), limited_by=binding, note=note)


def nvidia(arch: str, threads_per_block: int, registers_per_thread: int, shared_bytes: int) -> Occupancy | None:
    limits = NVIDIA.get(arch.removesuffix("a"))
    if limits is None:
        return None
    warps_per_block = math.ceil(threads_per_block / 32)
    regs_per_warp = _round_up(max(registers_per_thread, 1) * 32, limits.register_unit)
    per_block_shared = _round_up(shared_bytes + limits.reserved_shared_per_block, limits.shared_unit)
    by = {"warps": limits.max_warps // warps_per_block, "blocks": limits.max_blocks,
          "registers": (limits.registers // regs_per_warp) // warps_per_block,
          "shared memory": limits.shared_bytes // per_block_shared}
    return _result(by, warps_per_block, limits.max_warps)


def amd(arch: str, threads_per_block: int, vgprs: int, agprs: int, lds_bytes: int) -> Occupancy | None:
    limits = AMD.get(arch)
    if limits is None:
        return None
    waves_per_block = math.ceil(threads_per_block / limits.wave_size)
    # arch VGPRs are rounded to 4 before the AGPRs start (CDNA3 ISA, "unified VGPR file"), then to the granule
    used = _round_up(_round_up(max(vgprs, 1), 4) + agprs, limits.vgpr_granule)
    waves_per_simd = min(limits.waves_per_simd, limits.vgprs_per_simd_lane // used)
    max_waves = limits.simds * limits.waves_per_simd
    by = {"waves per SIMD": max_waves // waves_per_block,
          "VGPRs": (waves_per_simd * limits.simds) // waves_per_block,
          "LDS": limits.lds_bytes // lds_bytes if lds_bytes else 1 << 30}
    return _result(by, waves_per_block, max_waves, note="unverified on AMD hardware")
