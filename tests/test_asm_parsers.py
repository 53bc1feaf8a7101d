"""Parsers of compiler output, on assembly recorded from Triton 3.9 (matmul_bf16's baseline kernel, 64x64x32
tiles, bf16): tests/fixtures/asm/. A change in the compilers' text format shows up here first."""
from conftest import FIXTURES

from kernel_mcp.backends import amd, nvidia

SASS = (FIXTURES / "asm" / "matmul_bf16_sm90a.sass").read_text()
AMDGCN = (FIXTURES / "asm" / "matmul_bf16_gfx942.amdgcn").read_text()


def test_sass_counts_show_hopper_tensor_cores_and_no_spills():
    counts = nvidia.instruction_counts(SASS)
    assert counts["HGMMA"] > 0 and counts.get("HMMA", 0) == 0  # warpgroup MMA on sm_90a, not mma.sync
    assert counts.get("LDL/STL (local)", 0) == 0 and counts["total"] > 100


def test_sass_excerpt_is_the_main_loop():
    excerpt = nvidia.main_loop_excerpt(SASS)
    assert "HGMMA" in excerpt and "BRA" in excerpt and len(excerpt.splitlines()) <= 60


def test_amdgcn_resources_and_counts():
    usage = amd.resource_usage(AMDGCN)
    assert usage == {"vgprs": 57, "agprs": 0, "sgprs": 26, "scratch_bytes": 0, "lds_bytes": 0,
                     "compiler_waves_per_simd": 8}
    counts = amd.instruction_counts(AMDGCN)
    assert counts["MFMA"] > 0 and counts["global_load_dwordx4"] > 0 and counts.get("scratch (spills)", 0) == 0


def test_amdgcn_excerpt_is_the_inner_loop():
    excerpt = amd.main_loop_excerpt(AMDGCN)
    assert "in Loop: Header=BB0_12" in excerpt.splitlines()[0]  # the loop's first block, before its header
    assert "Inner Loop Header" in excerpt and "v_mfma" in excerpt
