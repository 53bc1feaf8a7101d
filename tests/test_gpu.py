"""On a real GPU (skipped elsewhere): CUDA IPC transport, the GPU MODE layout with device='cuda'
hard-coded, and CUDA errors that must fail cleanly without breaking the next check."""
import pytest

from kernel_mcp.tools.check import check

from conftest import FIXTURES, PROBLEMS, kernelbench_files

pytestmark = pytest.mark.gpu


def test_gpu_mode_problem_loads_unchanged_on_cuda():
    folder = FIXTURES / "gpumode" / "scale_shift"
    result = check(folder, folder / "submission.py", device="cuda")
    assert result.passed and result.device == "cuda:0", result
    assert check(folder, folder / "wrong_half.py", device="cuda").verdict == "fail: mismatch"


ILLEGAL_ACCESS = '''
import torch, triton, triton.language as tl

@triton.jit
def _bad(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) + (1 << 40)  # far outside any allocation
    tl.store(out_ptr + offs, 1.0)

def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    _bad[(4,)](out, a.numel(), BLOCK=128)
    return out
'''


def test_illegal_memory_access_fails_and_next_check_works(tmp_path):
    bad = tmp_path / "illegal.py"
    bad.write_text(ILLEGAL_ACCESS)
    result = check(PROBLEMS / "vector_add", bad, device="cuda")
    assert not result.passed and result.verdict in ("fail: exception", "fail: crash"), result.verdict
    again = check(PROBLEMS / "vector_add", PROBLEMS / "vector_add" / "baseline.py", device="cuda")
    assert again.passed, again


def test_output_on_wrong_device_fails(tmp_path):
    cpu_out = tmp_path / "cpu_out.py"
    cpu_out.write_text("def custom_kernel(data):\n    a, b = data\n    return (a + b).cpu()\n")
    result = check(PROBLEMS / "vector_add", cpu_out, device="cuda")
    assert result.verdict == "fail: structure" and "expected cuda" in result.cases[0].message


SCAVENGER = FIXTURES.parent / "cheats" / "gpu_segment_scavenge.py"


def test_reading_past_the_input_inside_its_ipc_segment_finds_nothing():
    result = check(PROBLEMS / "vector_add", SCAVENGER, device="cuda")
    assert not result.passed and result.verdict == "fail: mismatch", result.verdict
    assert "shared_segment" not in {f.code for f in result.findings}


def test_without_the_private_pool_the_scavenger_would_pass(monkeypatch):
    """Shows the attack is real (so the test above can fail): with inputs carved from the judge's general
    pool, the expected output sits in the same IPC segment and the scavenger copies it."""
    monkeypatch.setenv("KERNEL_MCP_SHARE_POOL", "0")
    result = check(PROBLEMS / "vector_add", SCAVENGER, device="cuda")
    assert "shared_segment" in {f.code for f in result.findings}
    assert result.passed, "the scavenger found nothing even without the private pool"


CONV = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 128, 3, padding=1)

    def forward(self, x):
        return self.conv(x)

def get_inputs():
    return [torch.randn(16, 64, 56, 56)]

def get_init_inputs():
    return []
"""


def test_a_kernelbench_convolution_holds_its_own_model_to_the_references_numerics(tmp_path):
    """PyTorch runs fp32 convolutions with TF32 by default, and a KernelBench reference is written for
    that: its own Model passes (the result says TF32 was allowed); a bf16 convolution, less accurate than
    the reference, fails; a bundled strict problem keeps TF32 off (test_check / matmul_fp32's solutions)."""
    problem, own, bf16 = kernelbench_files(tmp_path, CONV, """
        def forward(self, x):
            return self.conv.to(torch.bfloat16)(x.bfloat16()).float()
    """)
    result = check(problem, own, device="cuda")
    assert result.passed, result
    assert any(f.code == "precision" and "TF32" in f.message for f in result.findings), result.findings
    assert check(problem, bf16, device="cuda").verdict == "fail: mismatch"
