"""The memory a check needs, known before a candidate runs: measured on the reference, refused up front
when it cannot fit (GPU halves in test_gpu.py)."""
import pytest
from conftest import kernelbench_files

from kernel_mcp.problem import load_problem
from kernel_mcp.worker.judge import footprint
from kernel_mcp.worker.judge.reference import ReferenceRuntime

SOFTMAX = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)
def get_inputs():
    return [torch.randn(64, 1000)]
def get_init_inputs():
    return []
"""


def test_a_check_needs_the_larger_of_the_candidates_call_and_the_float64_run():
    GiB = 1 << 30
    needs = footprint.Footprint(reference_peak=10 * GiB, inputs=4 * GiB, outputs=int(1.5 * GiB), float64_outputs=3 * GiB)
    assert needs.call_need == (10 + 4 + 3) * GiB
    assert needs.need(parked=True) == int((20 + 1.5) * GiB)  # the float64 run (inputs parked) is the larger moment
    assert needs.need(parked=False) == int((25.5 + 3) * GiB)  # within 3x the reference's own peak
    assert not needs.tight(300 * GiB) and needs.tight(200 * GiB)  # kept while within 1/8 of the device
    assert footprint.refusal(needs, 20 * GiB) == ""
    message = footprint.refusal(needs, 16 * GiB)
    assert "at least 17.0 GiB" in message and "has 16.0 GiB" in message and "alone peaks at 10.0 GiB" in message
    unmeasured = footprint.Footprint(reference_peak=0, inputs=4 << 30, outputs=3 << 30)  # a CPU run
    assert footprint.refusal(unmeasured, 1 << 30) == "" and footprint.refusal(needs, None) == ""
    assert not unmeasured.tight(None)


def test_an_output_heavy_check_parks_its_float64_outputs_to_stay_near_3x_the_reference():
    """A matmul with a small K (KernelBench 7_Matmul_with_small_K): the output is most of the reference's
    peak; kept on the device, its float64 copy takes the check to some 4x; parked in host memory, both
    moments stay within 3x."""
    GiB = 1 << 30
    small_k = footprint.Footprint(reference_peak=int(4.05 * GiB), inputs=int(0.05 * GiB), outputs=4 * GiB,
                                  float64_outputs=8 * GiB)
    assert small_k.need(parked=False) > 3 * small_k.reference_peak and small_k.tight(141 * GiB)
    assert small_k.need(parked=True) <= 3 * small_k.reference_peak
    small = footprint.Footprint(reference_peak=256 << 20, inputs=16 << 20, outputs=200 << 20, float64_outputs=400 << 20)
    assert not small.tight(141 << 30)  # below 1 GiB nothing is parked: the device is not what limits it


def test_a_models_weights_count_four_times_and_do_not_make_a_check_tight():
    """KernelBench 59_Matmul_Swish_Scaling: 4 GiB of weights, 16 MiB in and out. The judge holds the model and
    its float64 twin (12 GiB, its measured peak 12.4 GiB on an H100), the candidate its ModelNew (4 GiB): the
    need covers all four copies, where the reference's peak alone counted them twice. Parking moves inputs
    and outputs, not weights, so the weights alone never make the check tight."""
    GiB, MiB = 1 << 30, 1 << 20
    weights = 4 * GiB
    needs = footprint.Footprint(reference_peak=weights + 90 * MiB, inputs=16 * MiB, outputs=16 * MiB,
                                float64_outputs=32 * MiB, weights=weights)
    assert needs.need(parked=False) >= 4 * weights + 90 * MiB
    assert needs.call_need >= 4 * weights
    assert not needs.tight(141 * GiB)
    bare = footprint.Footprint(reference_peak=weights + 90 * MiB, inputs=16 * MiB, outputs=16 * MiB,
                               float64_outputs=32 * MiB)
    assert bare.need(parked=False) < 3 * weights  # what the model said before the weights were counted
    assert "weights (4.0 GiB) are held four times over" in footprint.refusal(needs, 12 * GiB)


def test_the_share_pools_copy_of_the_inputs_counts_in_the_float64_moment_and_not_toward_tightness():
    """4_Matrix_vector_multiplication_ (8 GiB in, H100): the private pool the shared inputs come from kept its
    8 GiB through the float64 run, which the estimate (16.1 GiB) left out; the judge's allocator held 26 GiB.
    Parking cannot move that copy, so it does not make a check tight."""
    GiB = 1 << 30
    plain = footprint.Footprint(reference_peak=8 * GiB, inputs=8 * GiB, outputs=8 << 10, float64_outputs=16 << 10)
    pooled = footprint.Footprint(reference_peak=8 * GiB, inputs=8 * GiB, outputs=8 << 10, float64_outputs=16 << 10,
                                 pooled=8 * GiB)
    assert pooled.need(parked=True) >= 24 * GiB > plain.need(parked=True) + 7 * GiB
    assert pooled.call_need == plain.call_need  # the shared copy is inside the candidate's run already
    for total in (80 * GiB, 141 * GiB, 400 * GiB):
        assert pooled.tight(total) == plain.tight(total)


def test_the_measurement_counts_the_references_inputs_and_outputs(tmp_path):
    problem, _, _ = kernelbench_files(tmp_path, SOFTMAX, "def forward(self, x):\n    return x\n")
    needs = footprint.measure(ReferenceRuntime(load_problem(problem), "cpu"), {"seed": 1})
    assert needs.inputs == needs.outputs == 64 * 1000 * 4 and needs.float64_outputs == 64 * 1000 * 8
    assert needs.reference_peak == 0  # the allocator's high-water mark exists on GPUs only


SLOW_REFERENCE = """
import time
import torch
def generate_input(n, seed):
    return (torch.randn(n, generator=torch.Generator().manual_seed(seed)),)
def ref_kernel(data):
    time.sleep(0.3)  # a large problem's reference takes its time
    return data[0] * 2
"""


def test_a_call_may_take_longer_when_the_problems_own_reference_is_slow(tmp_path):
    """The task allows 1 s per call; the reference alone takes 0.3 s, so a candidate gets 20x that (6 s):
    one taking 2 s passes, one that hangs still times out."""
    from kernel_mcp.tools.check import check
    folder = tmp_path / "slow"
    folder.mkdir()
    (folder / "task.yml").write_text("tests: [{n: 64, seed: 1}]\nkernel_mcp:\n  timeouts: {call: 1}\n")
    (folder / "reference.py").write_text(SLOW_REFERENCE)
    slow = tmp_path / "slow_candidate.py"
    slow.write_text("import time\ndef custom_kernel(data):\n    time.sleep(2)\n    return data[0] * 2\n")
    hangs = tmp_path / "hangs.py"
    hangs.write_text("import time\ndef custom_kernel(data):\n    time.sleep(600)\n")
    assert check(folder, slow, device="cpu").passed
    assert check(folder, hangs, device="cpu").verdict == "fail: timeout"
    needs = footprint.Footprint(reference_peak=0, inputs=0, outputs=0, reference_seconds=0.3)
    assert needs.call_timeout(1.0) == 6.0 and needs.call_timeout(180.0) == 180.0


def test_the_shared_inputs_are_freed_as_soon_as_the_judge_drops_them():
    """Nothing the judge builds around a case's shared inputs may keep them alive in a reference cycle:
    on a GPU they would stay allocated until the garbage collector ran (found on the H200 as one
    input-sized block surviving each case)."""
    import gc
    import weakref

    import torch

    from kernel_mcp.worker.channel import input_placeholder
    from kernel_mcp.worker.judge.outputs import resolve_input_refs
    shared = (torch.randn(16), torch.randn(16))
    alive = [weakref.ref(t) for t in shared]
    gc.disable()
    try:
        output = resolve_input_refs([torch.zeros(2), input_placeholder(1)], shared)
        assert output[1] is shared[1]
        del shared, output
        assert all(ref() is None for ref in alive)
    finally:
        gc.enable()


def test_a_degenerate_probes_constant_is_the_outputs_mean_taken_a_piece_at_a_time():
    import torch

    from kernel_mcp.worker.judge.degenerate import _mean
    from kernel_mcp.worker.judge.tolerance import CHUNK
    t = torch.rand(CHUNK + 12345, dtype=torch.float32) + 1e4  # more than one piece; a float32 sum would drift
    assert _mean(t) == pytest.approx(t.double().mean().item(), rel=1e-12)
    assert _mean(torch.ones(0)) == 0.0


def test_parking_inputs_leaves_host_or_shared_inputs_where_they_are():
    """Off a GPU (and for views sharing a storage) the inputs stay put and the float64 copies are made
    where each input is; on the H200 test_gpu.py shows them parked and returned bit for bit."""
    import torch

    from kernel_mcp.worker import tensors
    from kernel_mcp.worker.judge.parking import inputs_parked
    x = torch.randn(8, 4)
    tree = (x, x[1:], torch.arange(3))
    with inputs_parked(tree, tight=True) as parked:
        assert not parked and tree[0] is x and tree[0].data_ptr() == x.data_ptr()
    up = tensors.upcast(tree, None)
    assert up[0].dtype == torch.float64 and up[2].dtype == torch.int64 and up[2].data_ptr() != tree[2].data_ptr()
    assert torch.equal(up[0], x.double()) and tensors.upcast(tree, "cpu")[1].device.type == "cpu"


RELU_64MIB = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(4096, 4096)]  # 64 MiB
def get_init_inputs():
    return []
"""


def test_the_reference_run_on_a_cpu_is_measured_by_its_resident_high_water_mark(tmp_path, monkeypatch):
    problem, _, _ = kernelbench_files(tmp_path, RELU_64MIB, "def forward(self, x):\n    return x\n")
    needs = footprint.measure(ReferenceRuntime(load_problem(problem), "cpu"), {"seed": 1})
    assert needs.inputs == needs.outputs == 64 << 20
    assert needs.host_peak >= 0.95 * (needs.inputs + needs.outputs)  # the reference holds both while it runs
    monkeypatch.setenv(footprint.HOST_MEMORY_VAR, "4")
    assert footprint.host_refusal(needs) == ""  # about 0.5 GiB fits in 4
    monkeypatch.setenv(footprint.HOST_MEMORY_VAR, "0.125")
    assert "on the CPU needs about 0." in footprint.host_refusal(needs)


def test_a_cpu_check_that_cannot_fit_in_the_machines_memory_is_refused_before_any_candidate(tmp_path, monkeypatch):
    """On a CPU no allocator raises: a check that outgrows the machine is killed by the OS (KernelBench's level 1
    at its published sizes on a 24 GiB machine ended as `error: harness`). Where the measured reference says the
    check cannot fit in the memory a CPU check may assume, the judge refuses it up front, with the numbers."""
    from kernel_mcp.tools.check import check
    problem, own, _ = kernelbench_files(tmp_path, RELU_64MIB, "def forward(self, x):\n    return x\n")
    monkeypatch.setenv(footprint.HOST_MEMORY_VAR, "0.125")  # 128 MiB: less than the reference's own run
    refused = check(problem, own, device="cpu")
    assert refused.verdict == "error: too large" and not refused.cases, refused
    assert "on the CPU needs about" in refused.findings[-1].message, refused.findings
