"""compile on a machine without a GPU: every bundled Triton baseline for NVIDIA and AMD targets, errors
mapped to the candidate's lines, the cache, occupancy arithmetic, and bad input."""
import json
import shutil
import subprocess
import sys

import pytest
from conftest import CUDA_FIXTURE, PROBLEMS, broken_cuda_candidate

from kernel_mcp.backends import hip
from kernel_mcp.errors import UsageError
from kernel_mcp.hardware import occupancy
from kernel_mcp.tools.compile import compile

TARGETS = ["sm_80", "sm_90a", "sm_100", "gfx90a", "gfx942", "gfx950"]
BUNDLED = sorted(p.name for p in PROBLEMS.iterdir() if (p / "task.yml").exists())
# the baseline with an undefined name in its kernel: a compile error on a known line
BROKEN = (PROBLEMS / "vector_add" / "baseline.py").read_text().replace(
    "tl.store(out_ptr + offs, a + b, mask=mask)", "tl.store(out_ptr + offs, a + b + undefined_name, mask=mask)")
BROKEN_LINE = next(i for i, text in enumerate(BROKEN.splitlines(), 1) if "undefined_name" in text)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_baseline_cross_compiles_for_every_target(name):
    result = compile(PROBLEMS / name / "baseline.py", targets=TARGETS)
    assert result.ok, (result.findings, [b.error for b in result.builds])
    assert {b.target for b in result.builds} == set(TARGETS) and result.language == "triton"
    for build in result.builds:
        assert build.threads_per_block and build.num_warps and build.signature
        assert build.occupancy is not None and 0 < build.occupancy.percent <= 100
        assert build.instructions.get("total", 0) > 10
        if build.target.startswith("sm_"):
            assert 0 < build.registers <= 255 and build.spill_bytes is not None
        else:
            assert build.vgprs and build.sgprs and build.spill_bytes is not None


def test_matmul_uses_tensor_cores_on_every_target():
    result = compile(PROBLEMS / "matmul_bf16" / "baseline.py", targets=["sm_90a", "gfx942"], asm=True)
    sm90, gfx942 = sorted(result.builds, key=lambda b: b.target)[::-1]
    assert sm90.instructions.get("HMMA", 0) + sm90.instructions.get("HGMMA", 0) > 0
    assert gfx942.instructions.get("MFMA", 0) > 0
    assert sm90.asm and gfx942.asm and sm90.shared_bytes > 0


def test_compile_error_points_at_the_candidate_line(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN)
    result = compile(broken, problem=PROBLEMS / "vector_add", targets=["sm_90a", "gfx942"])
    assert not result.ok and len(result.builds) == 2
    for build in result.builds:
        assert not build.ok and build.file == str(broken) and build.line == BROKEN_LINE
        assert "undefined_name" in build.error


def test_second_compile_is_a_cache_hit_and_a_change_is_not(tmp_path):
    candidate = tmp_path / "add.py"
    candidate.write_text((PROBLEMS / "vector_add" / "baseline.py").read_text())
    first = compile(candidate, problem=PROBLEMS / "vector_add", targets=["sm_90a"])
    again = compile(candidate, problem=PROBLEMS / "vector_add", targets=["sm_90a"])
    assert first.ok and not first.cached and again.cached
    assert again.builds == first.builds
    candidate.write_text(candidate.read_text().replace("BLOCK = 128", "BLOCK = 512"))
    changed = compile(candidate, problem=PROBLEMS / "vector_add", targets=["sm_90a"])
    assert not changed.cached and changed.builds[0].signature == first.builds[0].signature


def test_bad_input_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="valid targets: sm_80"):
        compile(PROBLEMS / "vector_add" / "baseline.py", targets=["sm_75x"])
    outside = tmp_path / "add.py"
    outside.write_text((PROBLEMS / "vector_add" / "baseline.py").read_text())
    with pytest.raises(UsageError, match="not inside a problem folder"):
        compile(outside)
    plain = tmp_path / "plain.py"
    plain.write_text("def custom_kernel(data):\n    a, b = data\n    return a + b\n")
    with pytest.raises(UsageError, match="no kernel found"):
        compile(plain, problem=PROBLEMS / "vector_add")


# (arch, threads/block, registers/thread, shared bytes/block) -> (resident warps, limiting resource).
# Worked by hand from the CUDA Programming Guide's per-capability limits (the occupancy calculator's rules).
NVIDIA_CASES = [
    ("sm_80", 256, 32, 0, 64, "warps"),  # 8 warps/block, 8 blocks fill 64 warps
    ("sm_80", 256, 64, 0, 32, "registers"),  # 64*32 = 2048 regs/warp -> 32 warps
    ("sm_90a", 128, 168, 0, 12, "registers"),  # 168*32 = 5376 -> 12 warps -> 3 blocks of 4
    ("sm_90", 128, 32, 100 * 1024, 8, "shared memory"),  # (100K + 1K reserved) fits twice in 228K
    ("sm_86", 64, 16, 0, 32, "blocks"),  # 16 blocks/SM of 2 warps
]
AMD_CASES = [
    ("gfx942", 256, 128, 0, 0, 16, "VGPRs"),  # 512/128 = 4 waves/SIMD -> 16/CU -> 4 groups of 4
    ("gfx942", 256, 12, 0, 0, 32, "waves per SIMD"),  # 8 waves/SIMD x 4 SIMDs
    ("gfx942", 256, 64, 64, 0, 16, "VGPRs"),  # 64 + 64 AGPRs = 128 of the unified 512
    ("gfx942", 256, 32, 0, 48 * 1024, 4, "LDS"),  # 64K LDS holds one 48K group
    ("gfx950", 256, 32, 0, 48 * 1024, 12, "LDS"),  # 160K LDS holds three
]


@pytest.mark.parametrize("arch,threads,regs,shared,warps,limit", NVIDIA_CASES)
def test_nvidia_occupancy(arch, threads, regs, shared, warps, limit):
    occ = occupancy.nvidia(arch, threads, regs, shared)
    assert (occ.resident_warps, occ.limited_by) == (warps, limit)


@pytest.mark.parametrize("arch,threads,vgprs,agprs,lds,waves,limit", AMD_CASES)
def test_amd_occupancy(arch, threads, vgprs, agprs, lds, waves, limit):
    occ = occupancy.amd(arch, threads, vgprs, agprs, lds)
    assert (occ.resident_warps, occ.limited_by) == (waves, limit)


def test_cli_json(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kernel_mcp", "compile", str(PROBLEMS / "softmax" / "baseline.py"),
                           "--target", "sm_90a", "--target", "gfx942", "--json"],
                          capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "KERNEL_MCP_CACHE": str(tmp_path)})
    body = json.loads(proc.stdout)
    assert proc.returncode == 0 and body["ok"] and body["targets"] == ["sm_90a", "gfx942"], proc.stderr


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) is not installed")


@pytest.mark.long
@needs_nvcc
def test_load_inline_cuda_compiles_for_nvidia_and_amd_in_one_call():
    """NVIDIA targets with nvcc; the AMD one with hipcc (tests/test_compile_hip.py), or a finding saying how
    to install it."""
    result = compile(CUDA_FIXTURE, problem=PROBLEMS / "vector_add", targets=["sm_80", "sm_90a", "gfx90a"])
    assert result.ok and result.language == "cuda", (result.findings, [b.error for b in result.builds])
    nvidia = [b for b in result.builds if b.target.startswith("sm_")]
    # one build per template instantiation (float, __half) and target
    assert sorted(b.target for b in nvidia) == ["sm_80", "sm_80", "sm_90a", "sm_90a"]
    for build in nvidia:
        assert build.kernel.startswith("void add_kernel<") and 0 < build.registers <= 255
        assert build.spill_bytes == 0 and build.occupancy and build.instructions.get("total", 0) > 5
    amd = [b for b in result.builds if b.target == "gfx90a"]
    if hip.hipcc():
        assert len(amd) == 2 and all(b.vgprs and b.kernel.startswith("void add_kernel<") for b in amd)
    else:
        assert not amd and any(f.code == "toolchain_missing" and "hipcc" in f.message for f in result.findings)


@needs_nvcc
def test_cuda_error_maps_to_the_line_in_the_python_file(tmp_path):
    broken, expected_line = broken_cuda_candidate(tmp_path)
    result = compile(broken, problem=PROBLEMS / "vector_add", targets=["sm_90a"])
    assert not result.ok and result.builds and not result.builds[0].ok
    assert result.builds[0].file == str(broken) and result.builds[0].line == expected_line
    assert "missing_value" in result.builds[0].error


AUTOTUNED = (PROBLEMS / "vector_add" / "baseline.py").read_text().replace(
    "@triton.jit", '@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=2), '
    'triton.Config({"BLOCK": 1024}, num_warps=4)], key=["n"])\n@triton.jit').replace(
    "_add_kernel[(triton.cdiv(n, BLOCK),)](a, b, out, n, BLOCK=BLOCK)",
    '_add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](a, b, out, n)')


def test_every_autotune_config_is_compiled(tmp_path):
    assert "autotune" in AUTOTUNED and "meta[" in AUTOTUNED  # the baseline still has the lines replaced
    candidate = tmp_path / "autotuned.py"
    candidate.write_text(AUTOTUNED)
    result = compile(candidate, problem=PROBLEMS / "vector_add", targets=["sm_90a"])
    assert result.ok, (result.findings, result.log_tail)
    configs = sorted((b.constants["BLOCK"], b.num_warps) for b in result.builds)
    assert configs == [(256, 2), (1024, 4)]


def test_a_caller_running_under_the_triton_interpreter_still_compiles(tmp_path, monkeypatch):
    """A server started with TRITON_INTERPRET=1 once passed it to the build step, where @triton.jit then
    gave no compilable kernel; build steps set or clear the variable themselves."""
    # triton imported here first, without the variable: imported under it, its @jit functions would stay
    # interpreted for the rest of this test process (a later test's gluon import then fails, seen on the H200)
    pytest.importorskip("triton")
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    result = compile(PROBLEMS / "vector_add" / "baseline.py", targets=["sm_90a"])
    assert result.ok, [b.error for b in result.builds]
