"""On a real GPU (skipped elsewhere): CUDA IPC transport, the GPU MODE layout with device='cuda'
hard-coded, and CUDA errors that must fail cleanly without breaking the next check."""
import pytest
from conftest import FIXTURES, PROBLEMS, kernelbench_files

from kernel_mcp.tools.check import check

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


def _elementwise_problem(tmp_path, op: str, elements: int):
    source = f"""
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return {op}
def get_inputs():
    return [torch.randn({elements // 4096}, 4096, device="cuda")]  # made on the device: fast at this size
def get_init_inputs():
    return []
"""
    return kernelbench_files(tmp_path, source, "def forward(self, x):\n    return x.clone()\n")


def test_kernelbench_inputs_that_need_the_cpu_are_made_there(tmp_path):
    """get_inputs() runs with the GPU as default device (fast at KernelBench's sizes); one that goes
    through numpy cannot, and is made on the CPU and moved, as KernelBench does: its own Model passes."""
    source = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x)
def get_inputs():
    x = torch.randn(256, 256)
    return [torch.from_numpy(x.numpy() * 2)]  # .numpy() refuses a CUDA tensor
def get_init_inputs():
    return []
"""
    problem, own, echo = kernelbench_files(tmp_path, source, "def forward(self, x):\n    return x.clone()\n")
    assert check(problem, own, device="cuda").passed
    assert check(problem, echo, device="cuda").verdict == "fail: mismatch"


def test_a_problem_too_large_for_the_device_is_refused_up_front(tmp_path):
    """An input a quarter of the device's memory: the reference alone fits (half the device), a check
    (about 1.25 times the device) does not, and the result says so with the numbers, before any candidate
    code runs."""
    import torch
    total = torch.cuda.get_device_properties(0).total_memory
    problem, own, _ = _elementwise_problem(tmp_path, "torch.relu(x)", total // 16)
    result = check(problem, own, device="cuda")
    assert result.verdict == "error: too large" and not result.cases, result
    assert "needs at least" in result.findings[-1].message and result.memory.check_need_bytes > total


@pytest.mark.alone  # it fills the device
def test_a_check_whose_reference_finds_no_room_beside_others_runs_again_alone(tmp_path):
    """A neighbour on the device that holds more than it reserved (torch's cache keeps freed blocks; the
    twenty-sixth session's KernelBench run ended one check in `error: out of memory`) leaves no room for the
    reference's run of a check admitted with its measured need. No candidate code has run: the check runs
    again alone, once the neighbour has gone, and passes there."""
    import threading
    import time

    import torch

    from kernel_mcp.worker import lease
    from kernel_mcp.worker.resolve import resolve
    gpu, _ = resolve("cuda")
    total = gpu.total_memory_bytes
    source = f"""
import time
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    time.sleep(5)  # the test fills the device meanwhile
    return [torch.randn({total // 80 // 4096}, 4096, device="cuda")]  # a twentieth of the device
def get_init_inputs():
    return []
"""
    problem, own, _ = kernelbench_files(tmp_path, source, "def forward(self, x):\n    return x\n")
    assert check(problem, own, device="cuda").passed  # alone: its need is measured and kept
    said, results, alone = [], [], threading.Event()

    def progress(message, *_):
        said.append(message)
        if "again alone" in message:
            alone.set()

    running = threading.Thread(target=lambda: results.append(check(problem, own, device="cuda", on_progress=progress)))
    ledger = lease.lease_dir() / f"{gpu.lease_key}.ledger"
    with lease.hold(gpu, exclusive=False, need_bytes=total // 10):
        running.start()
        deadline = time.monotonic() + 120
        while ledger.read_text().count('"bytes"') < 2:  # the check admitted beside this reservation
            assert time.monotonic() < deadline, said
            time.sleep(0.05)
        free, _ = torch.cuda.mem_get_info()
        # what it leaves free is less than the reference alone needs
        neighbour = torch.empty(free - total // 20, dtype=torch.uint8, device="cuda")
        assert alone.wait(timeout=120), said
        del neighbour
        torch.cuda.empty_cache()
    running.join(timeout=300)
    assert results and results[0].passed, (results, said)


@pytest.mark.parametrize("held_to_gib", [3.0, 0.5])
def test_a_first_run_that_outgrows_its_first_share_runs_again_with_its_need(tmp_path, monkeypatch, held_to_gib):
    """A problem never measured is admitted beside others with a first share of the device, its judge
    held to it. softmax over 1 GiB: held to 3 GiB, the reference fits and the measured check need (about
    5 GiB) does not; held to 0.5 GiB, the reference itself runs out. Either way no candidate has run yet
    and the check runs again, admitted with the measured need (or alone), and passes; once measured, a
    later check is admitted with its need at once."""
    import torch

    from kernel_mcp.worker import needs
    total = torch.cuda.get_device_properties(0).total_memory
    monkeypatch.setattr(needs, "FIRST_SHARE", (needs.CONTEXTS_BYTES + held_to_gib * (1 << 30)) / total)
    problem, own, _ = _elementwise_problem(tmp_path, "torch.softmax(x, dim=1)", 1 << 28)
    said: list[str] = []
    result = check(problem, own, device="cuda", fresh_seeds=1, on_progress=lambda message, *_: said.append(message))
    assert result.passed and needs.OUTGREW not in [f.code for f in result.findings], result
    assert any("admitting it again" in message for message in said), said
    said.clear()
    assert check(problem, own, device="cuda", fresh_seeds=1, on_progress=lambda m, *_: said.append(m)).passed
    assert not any("admitting it again" in message for message in said), said


def test_a_problem_measured_before_its_checks_admits_them_with_its_need(tmp_path, monkeypatch):
    """A batch's survey (batch/survey.py): a judge measures the reference alone, no candidate; the need it models
    is recorded, and the check after it is admitted with that need. softmax over 1 GiB with the first share held to
    3 GiB: a first run would outgrow it and start again (the test above); this check does not, and passes."""
    import torch

    from kernel_mcp.problem import load_problem
    from kernel_mcp.worker import LocalRunner, needs
    from kernel_mcp.worker.protocol import JudgeRequest
    total = torch.cuda.get_device_properties(0).total_memory
    monkeypatch.setattr(needs, "FIRST_SHARE", (needs.CONTEXTS_BYTES + 3 * (1 << 30)) / total)
    problem, own, _ = _elementwise_problem(tmp_path, "torch.softmax(x, dim=1)", 1 << 28)
    loaded = load_problem(problem)
    runner = LocalRunner()
    result = runner.judge(JudgeRequest(mode="measure", problem=str(loaded.path), candidate=str(own)), "cuda")
    assert result.verdict == "measured" and result.cases == [], result
    device = runner._devices["cuda"]
    need = needs.measured_need(device, needs.problem_key(loaded))
    assert need == pytest.approx(needs.need_from_measure(result.memory.check_need_bytes), rel=0.01), (need, result)
    said: list[str] = []
    assert check(problem, own, device="cuda", fresh_seeds=1, runner=runner,
                 on_progress=lambda message, *_: said.append(message)).passed
    assert not any("admitting it again" in message for message in said), said


def test_a_large_problem_is_checked_within_three_times_the_references_own_memory(tmp_path):
    """softmax over 4 GiB of fp32: the float64 references wait in host memory, outputs are compared in
    pieces, no copy is made twice; the judge's own peak stays within 3x the reference alone."""
    problem, own, echo = _elementwise_problem(tmp_path, "torch.softmax(x, dim=1)", 1 << 30)  # echo: a copy of x
    result = check(problem, own, device="cuda", fresh_seeds=1)
    assert result.passed, result
    memory = result.memory
    assert memory.reference_peak_bytes >= 8 << 30 and memory.judge_peak_bytes <= 3 * memory.reference_peak_bytes, memory
    assert memory.float64_in_host_memory  # 32 GiB with them on the device: more than 1/8 of an H200
    assert check(problem, echo, device="cuda", fresh_seeds=1).verdict == "fail: mismatch"


SMALL_K = """
import torch
class Model(torch.nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)
def get_inputs():
    return [torch.rand(32768, 64), torch.rand(64, 32768)]
def get_init_inputs():
    return []
"""

ATTENTION = """
import torch
class Model(torch.nn.Module):
    def forward(self, Q, K, V):
        return torch.nn.functional.scaled_dot_product_attention(Q, K, V)
def get_inputs():
    return [torch.rand(32, 32, 512, 1024) for _ in range(3)]
def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("source", [SMALL_K, ATTENTION], ids=["output_heavy_matmul", "input_heavy_attention"])
def test_output_and_input_heavy_problems_are_checked_within_three_times_the_references_memory(tmp_path, source):
    """KernelBench's 7_Matmul_with_small_K (4 GiB out of 16 MiB in) and 97_ScaledDotProductAttention
    (6 GiB in, a float64 run that materialises its attention matrix) at their published sizes, each its
    own candidate: the degenerate probe's constant made a whole float64 copy of the output, and the float64
    run kept the pristine inputs beside it (3.97x and 3.5x, H200, 2026-12-02)."""
    problem, own, _ = kernelbench_files(tmp_path, source, "def forward(self, *args):\n    return None\n")
    result = check(problem, own, device="cuda", fresh_seeds=1)
    assert result.passed, result
    memory = result.memory
    assert memory.float64_in_host_memory, memory
    assert memory.judge_peak_bytes <= 3 * memory.reference_peak_bytes, memory


def test_inputs_parked_for_the_float64_run_come_back_bit_for_bit_and_free_the_device():
    import torch

    from kernel_mcp.worker.judge.parking import inputs_parked
    x, y = torch.randn(1 << 26, device="cuda"), torch.randint(0, 9, (1000,), device="cuda")  # 256 MiB
    before, held = (x.clone(), y.clone()), torch.cuda.memory_allocated()
    with inputs_parked((x, y), tight=True) as parked:
        assert parked and x.device.type == "cpu" and x.is_pinned()
        assert torch.cuda.memory_allocated() <= held - x.nbytes
    assert x.device.type == "cuda" and torch.equal(x, before[0]) and torch.equal(y, before[1])
    with inputs_parked((x, x[1:]), tight=True) as parked:  # views of one storage are not moved apart
        assert not parked and x.device.type == "cuda"


def test_the_references_own_run_waits_in_host_memory_whatever_its_layout():
    """The task-dtype run's output (an attention output is a transposed view) leaves the device while the
    float64 run has it, and comes back with the same values."""
    import torch

    from kernel_mcp.worker.judge.parking import run_parked
    from kernel_mcp.worker.judge.roles import Roles, TaskRun
    out = torch.randn(64, 1 << 20, device="cuda").t()  # 256 MiB, a view
    run = TaskRun(roles=Roles(count=1, read=frozenset({0}), written=frozenset()), output=(out, 3), after={0: out[:, :2]})
    before, held = out.clone(), torch.cuda.memory_allocated()
    del out
    with run_parked(run, tight=True):
        assert run.output[0].device.type == "cpu" and torch.cuda.memory_allocated() <= held - before.nbytes
    assert run.output[0].device.type == "cuda" and torch.equal(run.output[0], before) and run.output[1] == 3
    assert torch.equal(run.after[0], before[:, :2])
