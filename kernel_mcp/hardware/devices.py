"""Datasheet ceilings of the GPUs kernel_mcp knows, and what the present device reports about itself.

Units: bytes, bytes/s and FLOP/s (int8: ops/s). Bandwidth is decimal (1 TB/s = 1e12 B/s); cache sizes
are binary (the "50 MB" of NVIDIA's Hopper whitepaper is the 52,428,800 bytes CUDA reports).
Every FLOP/s figure is dense: NVIDIA's Hopper/Blackwell datasheets quote tensor figures *with* 2:4
sparsity, so those are halved here. Each entry names its documents in `sources`.
"""
from __future__ import annotations

import re
from typing import Literal, Sequence

from pydantic import BaseModel, ConfigDict, field_validator

FLOP_KEYS = ("fp64", "fp64_tensor", "fp32", "tf32_tensor", "bf16_tensor", "fp16_tensor",
             "fp8_tensor", "int8_tensor", "fp4_tensor")
SOURCE_GROUPS = ("bandwidth", "caches", "flops", "units")
MiB = 1 << 20
T = 1e12


class Ceilings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    vendor: Literal["nvidia", "amd"]
    arch: str
    units: int                      # SMs (NVIDIA) or CUs (AMD)
    hbm_bytes_per_s: float          # datasheet peak
    l2_bytes: int                   # whole-chip L2 (all XCDs on AMD)
    llc_bytes: int                  # memory-side cache behind L2 (AMD Infinity Cache); 0 on NVIDIA
    peak_flops: dict[str, float]    # dense, keys from FLOP_KEYS
    sources: dict[str, str]         # SOURCE_GROUPS -> "URL (title)"
    aliases: list[str]              # matched against torch.cuda.get_device_name()
    notes: str = ""

    @field_validator("peak_flops")
    @classmethod
    def _known_positive_keys(cls, v: dict[str, float]) -> dict[str, float]:
        unknown = set(v) - set(FLOP_KEYS)
        if unknown:
            raise ValueError(f"unknown peak_flops keys {sorted(unknown)}; allowed: {FLOP_KEYS}")
        if any(x <= 0 for x in v.values()):
            raise ValueError("peak_flops values must be > 0")
        return v


def _src(url: str, title: str) -> str:
    return f"{url} ({title})"


A100_DS = _src("https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
               "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf", "NVIDIA A100 Tensor Core GPU datasheet")
AMPERE_WP = _src("https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/"
                 "nvidia-ampere-architecture-whitepaper.pdf", "NVIDIA A100 Tensor Core GPU Architecture whitepaper")
H100_DS = _src("https://resources.nvidia.com/en-us-gpu-resources/h100-datasheet-24306",
               "NVIDIA H100 Tensor Core GPU datasheet")
HOPPER_WP = _src("https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper",
                 "NVIDIA H100 Tensor Core GPU Architecture whitepaper (Hopper)")
H200_PAGE = _src("https://www.nvidia.com/en-us/data-center/h200/", "NVIDIA H200 Tensor Core GPU product page")
HGX_PAGE = _src("https://www.nvidia.com/en-us/data-center/hgx/", "NVIDIA HGX platform specifications (HGX B200)")
B200_CNC = _src("https://chipsandcheese.com/p/nvidias-b200-keeping-the-cuda-juggernaut",
                "Chips and Cheese, Nvidia's B200 (third-party measurements)")
MI300X_DS = _src("https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/"
                 "amd-instinct-mi300x-data-sheet.pdf", "AMD Instinct MI300X data sheet")
MI325X_DS = _src("https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/product-briefs/"
                 "instinct-mi325x-datasheet.pdf", "AMD Instinct MI325X data sheet")
MI355X_DS = _src("https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/product-briefs/"
                 "amd-instinct-mi355x-gpu-brochure.pdf", "AMD Instinct MI355X GPU brochure")
CDNA4_WP = _src("https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/white-papers/"
                "amd-cdna-4-architecture-whitepaper.pdf", "AMD CDNA 4 architecture whitepaper")
ROCM_SPECS = _src("https://rocm.docs.amd.com/en/latest/reference/gpu-specs.html",
                  "ROCm documentation, AMD GPU specifications (CUs, L2, L3/Infinity Cache)")

# Hopper SXM5 dense figures: datasheet tensor numbers (989 / 1,979 / 3,958 TFLOPS, *with sparsity*) halved.
_HOPPER_SXM = {"fp64": 34 * T, "fp64_tensor": 67 * T, "fp32": 67 * T, "tf32_tensor": 494.5 * T,
               "bf16_tensor": 989.5 * T, "fp16_tensor": 989.5 * T, "fp8_tensor": 1979 * T,
               "int8_tensor": 1979 * T}
# MI300X and MI325X share the CDNA3 die and clocks: 304 CUs at 2.1 GHz; datasheet dense figures.
_CDNA3 = {"fp64": 81.7 * T, "fp64_tensor": 163.4 * T, "fp32": 163.4 * T, "tf32_tensor": 653.7 * T,
          "bf16_tensor": 1307.4 * T, "fp16_tensor": 1307.4 * T, "fp8_tensor": 2614.9 * T,
          "int8_tensor": 2614.9 * T}

TABLE: list[Ceilings] = [
    Ceilings(
        name="NVIDIA A100 SXM4 80GB", vendor="nvidia", arch="sm_80", units=108,
        hbm_bytes_per_s=2039e9, l2_bytes=40 * MiB, llc_bytes=0,
        peak_flops={"fp64": 9.7 * T, "fp64_tensor": 19.5 * T, "fp32": 19.5 * T, "tf32_tensor": 156 * T,
                    "bf16_tensor": 312 * T, "fp16_tensor": 312 * T, "int8_tensor": 624 * T},
        sources={"bandwidth": A100_DS, "flops": A100_DS, "caches": AMPERE_WP, "units": AMPERE_WP},
        aliases=["A100-SXM4-80GB", "A100 80GB"],
        notes="A100 datasheet lists tf32/bf16/fp16/int8 dense with sparse x2 beside them; dense used. "
              "'A100 80GB' also catches the 80GB PCIe card (1,935 GB/s, same peaks): the SXM figure is higher, "
              "so a floor from it stays below anything that card can do. A100 40GB (1,555 GB/s) is not matched."),
    Ceilings(
        name="NVIDIA H100 SXM", vendor="nvidia", arch="sm_90", units=132,
        hbm_bytes_per_s=3.35e12, l2_bytes=50 * MiB, llc_bytes=0, peak_flops=dict(_HOPPER_SXM),
        sources={"bandwidth": H100_DS, "flops": H100_DS, "caches": HOPPER_WP, "units": HOPPER_WP},
        aliases=["H100 80GB HBM3", "H100 SXM"],
        notes="Datasheet tensor figures are with sparsity; halved. H100 PCIe (2.0 TB/s, 114 SMs) and H100 NVL "
              "(3.9 TB/s, more than SXM) are deliberately not matched."),
    Ceilings(
        name="NVIDIA H200 SXM 141GB", vendor="nvidia", arch="sm_90", units=132,
        hbm_bytes_per_s=4.8e12, l2_bytes=60 * MiB, llc_bytes=0, peak_flops=dict(_HOPPER_SXM),
        sources={"bandwidth": H200_PAGE, "flops": H200_PAGE, "caches": HOPPER_WP, "units": HOPPER_WP},
        aliases=["H200"],
        notes="Same GH100 compute as H100 SXM; datasheet tensor figures are with sparsity, halved. NVIDIA "
              "publishes no L2 size for H200: the full GH100 has 60 MB (Hopper whitepaper), H100 SXM5 enables "
              "50 MB, and CUDA on an H200 reports 62,914,560 bytes (seen on this project's H200, torch 2.11); "
              "present_device() uses the reported size. "
              "'H200' also catches H200 NVL (same 4.8 TB/s, lower clocks), for which these peaks are upper bounds."),
    Ceilings(
        name="NVIDIA B200", vendor="nvidia", arch="sm_100", units=148,
        hbm_bytes_per_s=7.7e12, l2_bytes=126 * MiB, llc_bytes=0,
        peak_flops={"fp64": 37 * T, "fp64_tensor": 37 * T, "fp32": 75 * T, "tf32_tensor": 1100 * T,
                    "bf16_tensor": 2250 * T, "fp16_tensor": 2250 * T, "fp8_tensor": 4500 * T,
                    "int8_tensor": 4500 * T, "fp4_tensor": 9000 * T},
        sources={"bandwidth": HGX_PAGE, "flops": HGX_PAGE, "caches": B200_CNC, "units": B200_CNC},
        aliases=["B200"],
        notes="HGX B200 (1,000 W) per-GPU figures; tensor figures quoted with sparsity (18/9/9/4.5/2.2 PFLOPS) "
              "halved. Earlier NVIDIA material gave 8 TB/s and 80/40 TFLOPS fp32/fp64; the current HGX page says "
              "7.7 TB/s and 75/37 (148 SMs x 128 lanes x 2 x 1.98 GHz = 75.0). NVIDIA publishes no L2 size: "
              "torch prints 126 MB (whole MiB, so up to 1 MiB more) on a B200; the SM count is from Chips and "
              "Cheese and CUDA. GB200 (1,200 W, higher peaks) is not matched: 'B200' must stand alone in the name."),
    Ceilings(
        name="AMD Instinct MI300X", vendor="amd", arch="gfx942", units=304,
        hbm_bytes_per_s=5.3e12, l2_bytes=32 * MiB, llc_bytes=256 * MiB, peak_flops=dict(_CDNA3),
        sources={"bandwidth": MI300X_DS, "flops": MI300X_DS, "caches": ROCM_SPECS, "units": ROCM_SPECS},
        aliases=["MI300X"],
        notes="L2 is 4 MB per XCD x 8 XCDs; 256 MB Infinity Cache (MALL) behind it. HIP reports one XCD's "
              "4 MB as the L2 size (ROCm/ROCm#4203). fp32 163.4 is the packed-FP32 vector rate."),
    Ceilings(
        name="AMD Instinct MI325X", vendor="amd", arch="gfx942", units=304,
        hbm_bytes_per_s=6.0e12, l2_bytes=32 * MiB, llc_bytes=256 * MiB, peak_flops=dict(_CDNA3),
        sources={"bandwidth": MI325X_DS, "flops": MI325X_DS, "caches": ROCM_SPECS, "units": ROCM_SPECS},
        aliases=["MI325X"],
        notes="Same CDNA3 compute as MI300X with 256 GB HBM3E at 6 TB/s; 4 MB L2 per XCD; 256 MB Infinity Cache."),
    Ceilings(
        name="AMD Instinct MI355X", vendor="amd", arch="gfx950", units=256,
        hbm_bytes_per_s=8.0e12, l2_bytes=32 * MiB, llc_bytes=256 * MiB,
        peak_flops={"fp64": 78.6 * T, "fp64_tensor": 78.6 * T, "fp32": 157.3 * T, "bf16_tensor": 2516.6 * T,
                    "fp16_tensor": 2516.6 * T, "fp8_tensor": 5033.2 * T, "int8_tensor": 5033.2 * T,
                    "fp4_tensor": 10066.3 * T},
        sources={"bandwidth": MI355X_DS, "flops": MI355X_DS, "caches": ROCM_SPECS, "units": CDNA4_WP},
        aliases=["MI355X"],
        notes="AMD rounds to 2.5 / 5.0 / 10.1 PFLOPS (bf16 / fp8 / fp4 dense; sparse is 2x); the exact values "
              "are 256 CUs x 4096 / 8192 / 16384 FLOP/clk x 2.4 GHz. CDNA4 has no TF32 matrix path (ROCm docs), "
              "so no tf32_tensor. 4 MB L2 per XCD x 8; 256 MB Infinity Cache. MI350X (2.2 GHz) is not matched."),
]


def lookup(device_name: str, table: Sequence[Ceilings] = TABLE) -> Ceilings | None:
    """The entry whose longest alias occurs in device_name as a whole token (case-insensitive)."""
    name = device_name.lower()
    best: tuple[int, Ceilings] | None = None
    for entry in table:
        for alias in entry.aliases:
            # "B200" must not match "GB200", nor "H100" the start of "H1000".
            if re.search(rf"(?<![0-9a-z]){re.escape(alias.lower())}(?![0-9a-z])", name):
                if best is None or len(alias) > best[0]:
                    best = (len(alias), entry)
    return best[1] if best else None


class PresentDevice(BaseModel):
    index: int
    name: str
    vendor: Literal["nvidia", "amd"]
    arch: str
    units: int
    l2_bytes: int | None            # best estimate of the whole-chip L2 (see _l2_bytes)
    l2_reported_bytes: int | None   # what the driver says, unmodified
    total_memory_bytes: int
    ceilings: Ceilings | None


def _l2_bytes(vendor: str, reported: int | None, ceilings: Ceilings | None) -> int | None:
    table = ceilings.l2_bytes if ceilings else None
    if not reported:
        return table
    if vendor == "amd" and table:
        # HIP reports the L2 of a single XCD (4 MB on MI300X, ROCm/ROCm#4203); the chip has 8 of them.
        return max(reported, table)
    return reported


def present_device(index: int = 0) -> PresentDevice | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available() or index >= torch.cuda.device_count():
        return None
    props = torch.cuda.get_device_properties(index)
    vendor: Literal["nvidia", "amd"] = "amd" if getattr(torch.version, "hip", None) else "nvidia"
    if vendor == "amd":
        arch = str(getattr(props, "gcnArchName", "")).split(":")[0]
    else:
        arch = f"sm_{props.major}{props.minor}"
    reported = int(getattr(props, "L2_cache_size", 0) or 0) or None
    ceilings = lookup(props.name)
    return PresentDevice(
        index=index, name=props.name, vendor=vendor, arch=arch, units=int(props.multi_processor_count),
        l2_bytes=_l2_bytes(vendor, reported, ceilings), l2_reported_bytes=reported,
        total_memory_bytes=int(props.total_memory), ceilings=ceilings)


# torch dtype name -> precision group
_DTYPE_GROUP = {
    "float64": "fp64", "double": "fp64", "complex128": "fp64",
    "float32": "fp32", "float": "fp32", "complex64": "fp32",
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16",
    "float8_e4m3fn": "fp8", "float8_e4m3fnuz": "fp8", "float8_e5m2": "fp8", "float8_e5m2fnuz": "fp8",
    "float8_e8m0fnu": "fp8", "float4_e2m1fn_x2": "fp4",
    "int8": "int8", "uint8": "int8",
    "int16": "int", "int32": "int", "int64": "int", "uint16": "int", "uint32": "int", "uint64": "int",
    "bool": "int",
}
# Matmul-like work: preferred unit first, then what the work falls back to where a part lacks it
# (fp8 on A100 runs through the fp16 tensor cores). fp32 stays on the fp32 unit, never tf32:
# kernel_mcp checks fp32 problems at fp32 accuracy, which tf32 cannot meet.
_MATMUL_UNITS = {
    "fp64": ("fp64_tensor", "fp64"),
    "fp32": ("fp32",),
    "bf16": ("bf16_tensor", "fp32"),
    "fp16": ("fp16_tensor", "fp32"),
    "fp8": ("fp8_tensor", "fp16_tensor", "fp32"),
    "fp4": ("fp4_tensor", "fp8_tensor", "fp16_tensor", "fp32"),
    "int8": ("int8_tensor", "fp32"),
    "int": ("fp32",),
}


def dtype_unit(dtype_name: str, matmul_like: bool, ceilings: Ceilings | None = None) -> str:
    """The peak_flops key that bounds work on this dtype.

    Element-wise work in 16-bit and 8-bit types is computed in fp32 registers (torch's opmath type,
    triton's default upcast), so its ceiling is the fp32 vector unit; fp64 has its own. Packed half2
    arithmetic can exceed that by 2x on NVIDIA: for a floor that must never flag honest code, use
    fastest_peak instead. With `ceilings`, a unit the part lacks falls back along _MATMUL_UNITS.
    """
    key = dtype_name.removeprefix("torch.")
    group = _DTYPE_GROUP.get(key)
    if group is None:
        raise ValueError(f"unknown dtype name {dtype_name!r}")
    if not matmul_like:
        return "fp64" if group == "fp64" else "fp32"
    chain = _MATMUL_UNITS[group]
    if ceilings is None:
        return chain[0]
    for unit in chain:
        if unit in ceilings.peak_flops:
            return unit
    return chain[-1]


def fastest_peak(c: Ceilings) -> float:
    """The highest FLOP/s (or op/s) any unit of the part reaches: no honest kernel can do more work per second."""
    return max(c.peak_flops.values())
