"""compile's figures against the GPU (skipped elsewhere): a CUDA C++ load_inline candidate builds, loads and
passes check; Triton register counts match what the driver reports for the loaded kernel."""
import importlib.util

import pytest

from kernel_mcp.tools.check import check
from kernel_mcp.tools.compile import compile

from conftest import PROBLEMS, REPO

pytestmark = pytest.mark.gpu


def test_load_inline_candidate_compiles_loads_and_passes_check():
    candidate = REPO / "tests" / "fixtures" / "cuda" / "add_inline.py"
    built = compile(candidate, problem=PROBLEMS / "vector_add")
    assert built.ok and built.builds, built.findings
    result = check(PROBLEMS / "vector_add", candidate, device="cuda")
    assert result.passed, (result.verdict, result.findings)


def test_triton_registers_match_the_driver(tmp_path, monkeypatch):
    import torch
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path))
    baseline = PROBLEMS / "vector_add" / "baseline.py"
    build = compile(baseline).builds[0]  # the present GPU; smallest typical test: n=1024, float32
    spec = importlib.util.spec_from_file_location("vector_add_baseline", baseline)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    a, b = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    out = torch.empty_like(a)
    loaded = module._add_kernel[(1,)](a, b, out, 1024, BLOCK=module.BLOCK)
    torch.cuda.synchronize()
    assert loaded.n_regs == build.registers, (loaded.n_regs, build)
    assert (loaded.n_spills == 0) == (not build.spill_bytes)
    assert loaded.metadata.shared == build.shared_bytes or build.shared_bytes >= loaded.metadata.shared
