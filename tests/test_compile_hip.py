"""compile of CUDA/HIP C++ candidates for AMD targets with hipcc: CUDA hipified as ROCm torch does, HIP
files as they are, resources from LLVM's remarks, targets this hipcc does not know, errors on the
candidate's lines. Runs the real hipcc (Debian's `hipcc` package or ROCm); skipped without one."""
import subprocess

import pytest
from conftest import CUDA_FIXTURE, PROBLEMS, REPO, broken_cuda_candidate

from kernel_mcp.backends import hip
from kernel_mcp.tools.compile import compile

HIP_FIXTURE = REPO / "tests" / "fixtures" / "hip" / "reverse_add.py"
pytestmark = pytest.mark.skipif(hip.hipcc() is None, reason="hipcc is not installed (apt-get install hipcc, or ROCm)")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))


def hipcc_knows(target: str, tmp_path) -> bool:
    """Ask hipcc itself, so the expectation follows the installed compiler, not a guess about its version."""
    probe = tmp_path / "probe.hip"
    probe.write_text("#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[0] = 1.0f; }\n")
    done = subprocess.run([hip.hipcc(), f"--offload-arch={target}", "--cuda-device-only", "-S", str(probe), "-o",
                           str(tmp_path / "probe.s")], capture_output=True, text=True, timeout=300,
                          env=hip.environment())
    return done.returncode == 0


def test_load_inline_cuda_is_hipified_and_built_for_gfx90a_and_gfx942_says_what_hipcc_lacks(tmp_path):
    result = compile(CUDA_FIXTURE, problem=PROBLEMS / "vector_add", targets=["gfx90a", "gfx942"])
    gfx90a = [b for b in result.builds if b.target == "gfx90a"]
    # one build per template instantiation (float, __half)
    assert sorted(b.kernel for b in gfx90a) == ["void add_kernel<__half>(__half const*, __half const*, __half*, int)",
                                                "void add_kernel<float>(float const*, float const*, float*, int)"]
    for build in gfx90a:
        assert build.ok and 0 < build.vgprs <= 512 and build.sgprs > 0 and build.agprs == 0
        assert build.spill_bytes == 0 and build.shared_bytes == 0
        assert build.occupancy and 0 < build.occupancy.percent <= 100 and "hipcc" in build.occupancy.note
        assert build.instructions.get("global_store", 0) >= 1 and build.instructions["total"] > 5
    gfx942 = [b for b in result.builds if b.target == "gfx942"]
    if hipcc_knows("gfx942", tmp_path):
        assert gfx942 and all(b.ok and b.vgprs for b in gfx942)
    else:  # Debian's hipcc 5.2 (clang 15) predates gfx942: one clear per-target error, not a crash
        assert len(gfx942) == 1 and not gfx942[0].ok and not result.ok
        assert "does not know gfx942" in gfx942[0].error and "ROCm >= 6.0" in gfx942[0].error
    assert not any(f.code in ("hip_unsupported", "toolchain_missing") for f in result.findings), result.findings


def test_hip_error_maps_to_the_line_in_the_python_file(tmp_path):
    broken, expected_line = broken_cuda_candidate(tmp_path)
    result = compile(broken, problem=PROBLEMS / "vector_add", targets=["gfx90a"])
    assert not result.ok and len(result.builds) == 1
    build = result.builds[0]
    assert not build.ok and build.file == str(broken) and build.line == expected_line
    assert "missing_value" in build.error


def test_hip_file_given_to_load_is_built_as_is_with_its_lds(tmp_path):
    result = compile(HIP_FIXTURE, problem=PROBLEMS / "vector_add", targets=["gfx90a"], asm=True)
    assert result.ok, (result.findings, [b.error for b in result.builds])
    [build] = result.builds
    assert build.kernel == "add_through_lds(float const*, float const*, float*, int)"
    assert build.shared_bytes == 256 * 4 and build.vgprs and build.sgprs
    assert build.instructions.get("LDS write", 0) >= 1 and build.instructions.get("barrier", 0) >= 1
    assert "ds_" in build.asm


def test_cuda_file_given_to_load_is_hipified_and_its_error_maps_to_that_file(tmp_path):
    """A .cu file (not inline text): hipify adds lines at the top of its copy; the error still names the
    user's file and line."""
    folder = tmp_path / "cand"
    folder.mkdir()
    cuda = (HIP_FIXTURE.parent / "reverse_add.hip").read_text().replace(
        "#include <hip/hip_runtime.h>", "#include <cuda_runtime.h>").replace("hipStream_t", "cudaStream_t").replace(
        "hipLaunchKernelGGL(add_through_lds, dim3((n + TILE - 1) / TILE), dim3(TILE), 0, stream, a, b, out, n)",
        "add_through_lds<<<(n + TILE - 1) / TILE, TILE, 0, stream>>>(a, b, out, n)")
    assert "<<<" in cuda and "hip" not in cuda.replace("reverse_add.py", "")
    broken = cuda.replace("tile[threadIdx.x] = i < n", "tile[threadIdx.x] = undeclared_tile + i < n")
    (folder / "add.cu").write_text(broken)
    candidate = folder / "cand.py"
    candidate.write_text(HIP_FIXTURE.read_text().replace(
        'sources=[str(HERE / "reverse_add.cpp"), str(HERE / "reverse_add.hip")]', 'sources=[str(HERE / "add.cu")]'))
    result = compile(candidate, problem=PROBLEMS / "vector_add", targets=["gfx90a"])
    [build] = result.builds
    expected = next(i for i, text in enumerate(broken.splitlines(), 1) if "undeclared_tile" in text)
    assert not build.ok and build.file == str(folder / "add.cu") and build.line == expected
    assert "undeclared_tile" in build.error
    # and without the error it builds, as HIP, with the same kernel
    (folder / "add.cu").write_text(cuda)
    result = compile(candidate, problem=PROBLEMS / "vector_add", targets=["gfx90a"])
    assert result.ok and result.builds[0].kernel.startswith("add_through_lds(") and result.builds[0].shared_bytes == 1024


def test_inline_ptx_is_reported_as_not_translatable(tmp_path):
    source = CUDA_FIXTURE.read_text().replace(
        "int i = blockIdx.x * blockDim.x + threadIdx.x;",
        'int i; asm volatile("mov.u32 %0, %%tid.x;" : "=r"(i));')
    candidate = tmp_path / "ptx.py"
    candidate.write_text(source)
    result = compile(candidate, problem=PROBLEMS / "vector_add", targets=["gfx90a"])
    assert not result.ok and not result.builds
    assert [f.code for f in result.findings] == ["hip_unsupported"]
    assert "inline PTX" in result.findings[0].message


def test_without_hipcc_amd_targets_say_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr(hip, "hipcc", lambda: None)
    result = compile(HIP_FIXTURE, problem=PROBLEMS / "vector_add", targets=["gfx90a"])
    assert not result.ok and not result.builds
    [finding] = result.findings
    assert finding.code == "toolchain_missing" and "apt-get install hipcc" in finding.message


def test_remarks_and_assembly_are_parsed_per_kernel():
    report = "\n".join([
        "k.hip:3:1: remark: Function Name: _Z3twoPf [-Rpass-analysis=kernel-resource-usage]",
        "k.hip:3:1: remark:     SGPRs: 20 [-Rpass-analysis=kernel-resource-usage]",
        "k.hip:3:1: remark:     VGPRs: 130 [-Rpass-analysis=kernel-resource-usage]",
        "k.hip:3:1: remark:     AGPRs: 4 [-Rpass-analysis=kernel-resource-usage]",
        "k.hip:3:1: remark:     ScratchSize [bytes/lane]: 16 [-Rpass-analysis=kernel-resource-usage]",
        "k.hip:3:1: remark:     Occupancy [waves/SIMD]: 3 [-Rpass-analysis=kernel-resource-usage]",
        "k.hip:3:1: remark:     LDS Size [bytes/block]: 4096 [-Rpass-analysis=kernel-resource-usage]",
        "k.hip:9:1: remark: Function Name: _Z3onePf [-Rpass-analysis=kernel-resource-usage]",
        "k.hip:9:1: remark:     VGPRs: 2 [-Rpass-analysis=kernel-resource-usage]"])
    assert hip.parse_remarks(report) == [
        {"mangled": "_Z3twoPf", "sgprs": 20, "vgprs": 130, "agprs": 4, "scratch_bytes": 16, "waves_per_simd": 3,
         "lds_bytes": 4096}, {"mangled": "_Z3onePf", "vgprs": 2}]
    asm = "_Z3onePf:\n\tv_mov_b32 v0, 0\n\ts_endpgm\n.Lfunc_end0:\n_Z3twoPf: ; @x\n\tds_write_b32 v0, v1\n.Lfunc_end1:\n"
    bodies = hip.kernel_asm(asm)
    assert set(bodies) == {"_Z3onePf", "_Z3twoPf"} and "ds_write_b32" in bodies["_Z3twoPf"]
    assert "ds_write" not in bodies["_Z3onePf"]


def test_hipcc_is_asked_for_the_amd_platform_even_beside_nvcc():
    """Without HIP_PLATFORM=amd, hipcc on a machine with nvcc picks NVIDIA and --version names no clang."""
    assert hip.environment()["HIP_PLATFORM"] == "amd"
    assert hip.version().startswith("HIP ") and ", clang " in hip.version()


def test_an_aten_cuda_include_says_which_hip_header_is_missing_and_why(tmp_path):
    source = CUDA_FIXTURE.read_text().replace("#include <cuda_fp16.h>",
                                              "#include <cuda_fp16.h>\n#include <ATen/cuda/CUDAContext.h>")
    candidate = tmp_path / "aten.py"
    candidate.write_text(source)
    result = compile(candidate, problem=PROBLEMS / "vector_add", targets=["gfx90a"])
    [build] = result.builds
    if build.ok:
        pytest.skip("this torch is a ROCm build: it has the ATen/hip headers")
    assert build.error.startswith("ATen/hip/HIPContext.h not found") and "ROCm build of torch" in build.error
    assert build.file == str(candidate) and source.splitlines()[build.line - 1] == "#include <ATen/cuda/CUDAContext.h>"


def test_inline_sources_keep_their_lines_after_hipify(tmp_path):
    """Errors map back by a line shift: CUDA text is hipified behind torch's prefix, HIP text is not touched."""
    cuda_text = "\n#include <cuda_fp16.h>\n__global__ void k(float* x) { x[0] = 1; }\n" \
                "void go(float* x) {\n    k<<<1, 64>>>(x);\n}\n"
    source, prefix = hip.prepare_inline(cuda_text, tmp_path, "cuda_unit")
    lines = source.read_text().splitlines()
    assert source.suffix == ".hip" and "hipLaunchKernelGGL" in lines[prefix + 4]
    assert lines[prefix + 2] == "__global__ void k(float* x) { x[0] = 1; }" and "hip_fp16.h" in lines[prefix + 1]
    hip_text = "#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[0] = 1; }\n"
    source, prefix = hip.prepare_inline(hip_text, tmp_path, "hip_unit")
    assert source.read_text() == hip.HIP_INLINE_PREFIX + hip_text and prefix == 4
