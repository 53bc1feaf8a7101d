"""check end to end on problems made here: GPU MODE layout, output buffers, KernelBench, degenerate
problems, broken references."""
import os
import shutil
import textwrap

import pytest
from conftest import FIXTURES, PROBLEMS, kernelbench_files

from kernel_mcp.errors import UsageError
from kernel_mcp.tools.check import check

KB = FIXTURES / "kernelbench"


@pytest.fixture
def gpumode_on_cpu(tmp_path):
    """The GPU MODE fixture with its hard-coded device='cuda' switched to 'cpu', folder layout intact."""
    root = tmp_path / "gpumode"
    shutil.copytree(FIXTURES / "gpumode", root)
    ref = root / "scale_shift" / "reference.py"
    ref.write_text(ref.read_text().replace('"cuda"', '"cpu"'))
    return root / "scale_shift"


def test_gpu_mode_layout_with_output_buffer(gpumode_on_cpu):
    result = check(gpumode_on_cpu, gpumode_on_cpu / "submission.py", device="cpu")
    assert result.passed, result
    assert "output_buffers" in {f.code for f in result.findings}  # data = (x, out): out is detected
    half = check(gpumode_on_cpu, gpumode_on_cpu / "wrong_half.py", device="cpu")
    # the buffer is filled with NaN before the call, so the unwritten half cannot be right by accident
    assert half.verdict == "fail: mismatch"
    assert half.cases[0].comparisons[0].mismatches >= 64 * 127 // 2


@pytest.mark.parametrize("candidate,passes", [("linear_gelu_new.py", True), ("linear_gelu_renamed.py", True),
                                               ("linear_gelu_tanh.py", False)])
def test_kernelbench_adapter(candidate, passes):
    result = check(KB / "linear_gelu.py", KB / candidate, device="cpu")
    assert result.passed is passes, result.verdict


def make_problem(tmp_path, reference: str, tests="[{n: 256, seed: 1}]", extra=""):
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "task.yml").write_text(f"tests: {tests}\n{extra}")
    (folder / "reference.py").write_text(textwrap.dedent(reference))
    return folder


HONEST = "def custom_kernel(data):\n    return data[0] * 0\n"


def test_degenerate_problem_is_reported(tmp_path):
    folder = make_problem(tmp_path, """
        import torch
        def generate_input(n, seed):
            return (torch.randn(n, generator=torch.Generator().manual_seed(seed)),)
        def ref_kernel(data):
            return data[0] * 0  # always zeros: a trivial answer passes
    """)
    (folder / "zeros.py").write_text(HONEST)
    result = check(folder, folder / "zeros.py", device="cpu")
    assert result.problem_degenerate and result.verdict == "pass (degenerate problem)"
    assert "degenerate_problem" in {f.code for f in result.findings}


def test_broken_reference_is_the_problems_fault(tmp_path):
    folder = make_problem(tmp_path, """
        def generate_input(n, seed):
            raise ValueError("oops")
        def ref_kernel(data):
            return data
    """)
    (folder / "c.py").write_text(HONEST)
    result = check(folder, folder / "c.py", device="cpu")
    assert result.verdict == "error: problem" and not result.passed
    assert "oops" in result.findings[-1].message


def test_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="candidate not found"):
        check(FIXTURES / "kernelbench" / "linear_gelu.py", tmp_path / "missing.py")
    with pytest.raises(UsageError, match="unknown device"):
        check(FIXTURES / "kernelbench" / "linear_gelu.py", KB / "linear_gelu_new.py", device="tpu")


def test_missing_custom_kernel_fails_clearly(tmp_path, problem_copy):
    folder = problem_copy("vector_add")
    (tmp_path / "empty.py").write_text("x = 1\n")
    result = check(folder, tmp_path / "empty.py", device="cpu")
    assert result.verdict == "fail: exception on import"
    assert "custom_kernel" in result.findings[-1].message


@pytest.mark.skipif(os.geteuid() != 0, reason="as another user the sandbox needs user namespaces")
def test_candidate_runs_isolated_without_ptrace(problem_copy):
    folder = problem_copy("vector_add")
    result = check(folder, folder / "baseline.py", device="cpu")
    assert result.passed
    assert not {"sandbox_weak", "no_pid_namespace"} & {f.code for f in result.findings}, result.findings


@pytest.mark.parametrize("returned", ["x", "x[:]"])
def test_alias_of_a_non_contiguous_input_is_caught(tmp_path, returned):
    folder = make_problem(tmp_path, """
        import torch
        def generate_input(n, seed):
            x = torch.randn(n, 3, generator=torch.Generator().manual_seed(seed)).t()  # a transposed view
            return (x,)
        def ref_kernel(data):
            return data[0] * 1.0
    """)
    (folder / "c.py").write_text(f"def custom_kernel(data):\n    x, = data\n    return {returned}\n")
    result = check(folder, folder / "c.py", device="cpu")
    assert result.verdict == "fail: alias", result.verdict


def test_float64_task_rejects_a_float32_answer(tmp_path):
    folder = make_problem(tmp_path, """
        import torch
        def generate_input(n, seed):
            return (torch.randn(n, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)),)
        def ref_kernel(data):
            return data[0] * 3
    """)
    (folder / "low.py").write_text("def custom_kernel(data):\n    return (data[0].float() * 3)\n")
    (folder / "ok.py").write_text("def custom_kernel(data):\n    return data[0] * 3\n")
    assert check(folder, folder / "low.py", device="cpu").verdict == "fail: structure"
    assert check(folder, folder / "ok.py", device="cpu").passed


# --- KernelBench patterns at small size (the real files are large: ../shared/benchmarks, issue 13) --------
MSE_LOSS = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)  # a 0-dim output, like KernelBench's losses

def get_inputs():
    return [torch.rand(64, 128), torch.rand(64, 128)]

def get_init_inputs():
    return []
"""

BATCHNORM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.norm = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.norm(self.linear(x))

def get_inputs():
    return [torch.randn(32, 16) * 3 + 1]

def get_init_inputs():
    return [16]
"""


def test_a_kernelbench_loss_with_a_0_dim_output_is_judged(tmp_path):
    problem, own, mean_abs = kernelbench_files(tmp_path, MSE_LOSS, """
        def forward(self, p, t):
            return torch.mean((p - t).abs())
    """)
    result = check(problem, own, device="cpu")
    assert result.passed, result
    assert check(problem, mean_abs, device="cpu").verdict == "fail: mismatch"


def test_kernelbench_models_run_in_the_same_mode(tmp_path):
    """KernelBench builds Model and ModelNew alike and runs both in training mode: BatchNorm normalises by
    the batch's statistics. The own Model passes; a candidate that computes the eval-mode function (the
    running statistics of a fresh layer) fails; the result says which mode."""
    problem, own, eval_mode = kernelbench_files(tmp_path, BATCHNORM, """
        def forward(self, x):
            return self.norm.eval()(self.linear(x))
    """)
    result = check(problem, own, device="cpu")
    assert result.passed, result
    assert any(f.code == "kernelbench_mode" and "training mode" in f.message for f in result.findings), result
    assert check(problem, eval_mode, device="cpu").verdict == "fail: mismatch"


SCRATCH_REFERENCE = """
    import torch
    def generate_input(n, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(n, generator=g), torch.randn(n, generator=g), torch.empty(n)
    def ref_kernel(data):
        a, b, _ = data  # GPU MODE's pattern: the output buffer is handed over, the reference ignores it
        return a + b
"""


@pytest.mark.parametrize("name, body, verdict", [
    ("fills_the_scratch", "a, b, out = data\n    torch.add(a, b, out=out)\n    return out", "pass"),
    ("returns_it_unfilled", "return data[2]", "fail: mismatch"),
    ("writes_an_input_the_reference_reads", "a, b, out = data\n    a.add_(b)\n    return a.clone()", "fail: mutation"),
])
def test_an_input_the_reference_never_reads_is_scratch(tmp_path, name, body, verdict):
    folder = make_problem(tmp_path, SCRATCH_REFERENCE)
    candidate = tmp_path / f"{name}.py"
    candidate.write_text(f"import torch\ndef custom_kernel(data):\n    {body}\n")
    result = check(folder, candidate, device="cpu")
    assert result.verdict == verdict, result
    if verdict == "pass":
        assert any("input 2: scratch" in f.message for f in result.findings), result.findings


def test_the_precision_contract_sets_the_judges_numerics():
    """strict: no TF32 in the judge (an fp32 problem's honest reference is fp32); torch_defaults: PyTorch's
    own defaults, which a candidate process also gets; KernelBench files default to the latter."""
    import torch

    from kernel_mcp.problem import load_problem
    from kernel_mcp.worker.judge import numerics
    assert numerics.apply("strict", "cpu") == ""
    assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
    numerics.apply("torch_defaults", "cpu")
    assert torch.backends.cudnn.allow_tf32 == numerics.DEFAULT_CUDNN_TF32
    assert torch.backends.cuda.matmul.allow_tf32 == numerics.DEFAULT_MATMUL_TF32
    assert load_problem(KB / "linear_gelu.py").spec.precision == "torch_defaults"
    # a GPU MODE problem loaded unchanged (no kernel_mcp section) with its own check_implementation
    assert load_problem(FIXTURES / "gpumode" / "scale_shift").spec.precision == "problem_check"
    assert load_problem(FIXTURES.parent.parent / "problems" / "matmul_fp32").spec.precision is None  # strict
    assert "check_implementation" in numerics.apply("problem_check", "cpu")
    assert torch.backends.cudnn.allow_tf32 == numerics.DEFAULT_CUDNN_TF32


DECLARED_TOLERANCE = """
    import torch
    def generate_input(n, seed):
        return (torch.randn(n, generator=torch.Generator().manual_seed(seed)),)
    def ref_kernel(data):
        return data[0] * 2 + 1
    def check_implementation(data, output):  # GPU MODE's way: the problem declares its own tolerance
        expected = ref_kernel(data)
        bad = (output - expected).abs() > 1e-3 + 1e-3 * expected.abs()
        return (not bad.any().item(), f"{int(bad.sum())} elements off")
"""


@pytest.mark.parametrize("rounding, section, verdict", [
    ("float16", "", "pass"),  # 2^-11 relative: within the declared 1e-3, thousands of times the fp32 bound
    ("bfloat16", "", "fail: mismatch"),  # 2^-8 relative: beyond what the problem itself allows
    ("float16", "kernel_mcp: {precision: strict}", "fail: mismatch"),  # the derived bound made binding
])
def test_a_gpu_mode_problem_is_judged_by_its_own_declared_tolerance(tmp_path, rounding, section, verdict):
    """A GPU MODE problem loaded unchanged decides values by its own check_implementation (precision:
    problem_check), and says so; the derived comparison is still reported. Declaring a precision makes
    kernel_mcp's own bound decide again."""
    folder = make_problem(tmp_path, DECLARED_TOLERANCE, tests="[{n: 4096, seed: 1}, {n: 1000, seed: 2}]",
                          extra=section)
    candidate = tmp_path / "rounded.py"
    candidate.write_text(f"import torch\ndef custom_kernel(data):\n    return (data[0] * 2 + 1).to(torch.{rounding}).float()\n")
    result = check(folder, candidate, device="cpu")
    assert result.verdict == verdict, result
    contract = [f.message for f in result.findings if f.code == "precision"]
    assert bool(contract) is (not section) and (not contract or "check_implementation" in contract[0])
    if verdict == "pass":
        case = result.cases[0]
        assert not case.comparisons[0].ok and "accepted by the problem's own check" in case.message
    else:
        assert result.cases[0].failure == "mismatch"


FORMS = {  # ref_kernel bodies over data = (x,), x = randn(256)
    "a Python float": "return float(data[0].sum())",
    "a named tuple (values, indices)": "return data[0].reshape(16, 16).max(dim=1)",
    "a list with a 0-dim tensor": "return [data[0] * 2, data[0].sum()]",
    "a bool tensor": "return data[0] > 0",
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_output_form_is_judged(tmp_path, form):
    """The reference's own code as the candidate passes; the same output 1% off fails (floats: compared
    within a bound like tensors, not exactly; named tuples arrive as plain tuples)."""
    folder = make_problem(tmp_path, f"""
        import torch
        def generate_input(n, seed):
            return (torch.randn(n, generator=torch.Generator().manual_seed(seed)),)
        def ref_kernel(data):
            {FORMS[form]}
    """)
    own = tmp_path / "own.py"
    own.write_text(f"import torch\ndef custom_kernel(data):\n    {FORMS[form]}\n")
    result = check(folder, own, device="cpu")
    assert result.passed and not result.problem_degenerate, result
    if form != "a bool tensor":
        off = tmp_path / "off.py"
        off.write_text(f"import torch\ndef custom_kernel(data):\n    data = (data[0] * 1.01,)\n    {FORMS[form]}\n")
        assert not check(folder, off, device="cpu").passed


def test_a_reference_that_refuses_a_poisoned_input_has_read_it(tmp_path):
    """The scratch probe poisons each input: a reference that raises on NaN read that input (not scratch,
    and not a harness error)."""
    folder = make_problem(tmp_path, """
        import torch
        def generate_input(n, seed):
            return (torch.randn(n, generator=torch.Generator().manual_seed(seed)),)
        def ref_kernel(data):
            assert torch.isfinite(data[0]).all(), "inputs must be finite"
            return data[0] * 2
    """)
    own = tmp_path / "own.py"
    own.write_text("def custom_kernel(data):\n    return data[0] * 2\n")
    result = check(folder, own, device="cpu")
    assert result.passed, result
    assert not any(f.code == "output_buffers" for f in result.findings), result.findings


def test_an_index_input_is_poisoned_with_its_own_values(tmp_path):
    """The read probe poisons each input. Random integers over the whole int64 range, given to a reference that
    uses them as class labels, were a device-side assert on a GPU, which ends the judge's process
    (95_CrossEntropyLoss: 'the judge exited without a result', H100, 2026-12-06). The reference here ends its
    process the same way on a label out of range (ignore_index -100 aside): labels are poisoned with their own
    values, and still found read."""
    folder = make_problem(tmp_path, """
        import os
        import torch
        def generate_input(n, seed):
            g = torch.Generator().manual_seed(seed)
            labels = torch.randint(0, 8, (n,), generator=g)
            labels[::7] = -100  # ignored, as cross_entropy's ignore_index
            return torch.randn(n, 8, generator=g), labels
        def ref_kernel(data):
            logits, labels = data
            if bool((((labels < 0) | (labels >= 8)) & (labels != -100)).any()):
                os._exit(0)  # as CUDA's device-side assert ends the process that made it
            kept = labels != -100
            return logits.gather(1, labels.clamp(min=0)[:, None]).squeeze(1) * kept
    """)
    own = tmp_path / "own.py"
    own.write_text("def custom_kernel(data):\n    logits, labels = data\n"
                   "    return logits.gather(1, labels.clamp(min=0)[:, None]).squeeze(1) * (labels != -100)\n")
    result = check(folder, own, device="cpu")
    assert result.passed, result
    wrong = tmp_path / "ignores_labels.py"  # the labels are read: a kernel that ignores them fails
    wrong.write_text("def custom_kernel(data):\n    return data[0][:, 0].clone()\n")
    assert not check(folder, wrong, device="cpu").passed


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "uint16", "uint64"])
def test_an_integer_poison_holds_the_inputs_own_values_and_changes_their_counts(dtype):
    import torch  # noqa: PLC0415  (the rest of this file runs checks in subprocesses)

    from kernel_mcp.worker.tensors import poison_in_range
    labels = torch.tensor([0, 1, 2, 3, 100, 127] * 500, dtype=getattr(torch, dtype))
    poisoned = poison_in_range(labels)
    assert poisoned.dtype == labels.dtype and set(poisoned.tolist()) <= set(labels.tolist())
    as_long = poisoned.to(torch.int64)
    assert not torch.equal(as_long.bincount(minlength=128), labels.to(torch.int64).bincount(minlength=128))


def test_an_integer_poison_keeps_rows_and_always_differs():
    import torch  # noqa: PLC0415

    from kernel_mcp.worker.tensors import poison_in_range
    pairs = torch.stack([torch.arange(300) % 10, 100 + torch.arange(300) % 900], 1)  # (row, col) of a 10 x 1000 grid
    poisoned = poison_in_range(pairs)
    assert bool((poisoned[:, 0] < 10).all() and (poisoned[:, 1] >= 100).all() and (poisoned != pairs).any())
    extremes = torch.tensor([-2**63, 2**63 - 1])
    for small in (torch.tensor([0, 1]), torch.tensor([[4, 4, 4, 5]]), extremes, torch.zeros(9, dtype=torch.int64)):
        assert not torch.equal(poison_in_range(small), small), small  # one value everywhere: the dtype's range


TF32_REFERENCE = """
    import torch
    def tf32(t):  # a reference that is only TF32-accurate, as PyTorch's default convolutions are
        return ((t.view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32) if t.dtype == torch.float32 else t
    def generate_input(m, k, n, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    def ref_kernel(data):
        a, b = data
        return tf32(a) @ tf32(b)
"""


@pytest.mark.parametrize("name, body, verdict", [
    ("tf32_summed_in_blocks", "a, b = map(tf32, data)\n    return sum(a[:, s:s + 64] @ b[s:s + 64] for s in range(0, a.shape[1], 64))", "pass"),
    ("exact_fp32", "a, b = data\n    return a @ b", "pass"),
    ("bf16_inputs", "a, b = data\n    return a.bfloat16().float() @ b.bfloat16().float()", "fail: mismatch"),
])
def test_a_candidate_is_held_to_its_references_precision_not_below_it(tmp_path, name, body, verdict):
    """The bounds follow the reference's own accuracy (no tolerance declared): a TF32-accurate reference
    admits TF32 arithmetic in another order and anything more accurate, not one precision step below."""
    folder = make_problem(tmp_path, TF32_REFERENCE, tests="[{m: 64, k: 512, n: 48, seed: 1}, {m: 17, k: 300, n: 5, seed: 2}]")
    candidate = tmp_path / f"{name}.py"
    helper = TF32_REFERENCE.split("def generate_input")[0]
    candidate.write_text(textwrap.dedent(helper) + f"def custom_kernel(data):\n    {body}\n")
    result = check(folder, candidate, device="cpu", fresh_seeds=3)
    assert result.verdict == verdict, result


def test_a_failing_candidate_is_shown_through_its_own_code_not_the_harness(tmp_path):
    """The traceback names the candidate's file and line and none of kernel_mcp's frames; a candidate
    without custom_kernel is one sentence."""
    raises = tmp_path / "raises.py"
    raises.write_text("def custom_kernel(data):\n    a, b = data\n    return a + b.no_such_method()\n")
    result = check(PROBLEMS / "vector_add", raises, device="cpu")
    message = next(f.message for f in result.findings if f.severity == "error")
    assert result.verdict == "fail: exception" and f'File "{raises}", line 3, in custom_kernel' in message
    assert "kernel_mcp" not in message and "no_such_method" in message, message
    empty = tmp_path / "empty.py"
    empty.write_text("def kernel(data):\n    return data\n")
    result = check(PROBLEMS / "vector_add", empty, device="cpu")
    message = next(f.message for f in result.findings if f.severity == "error")
    assert message == "importing the candidate failed: the candidate defines no custom_kernel(data) function", message


def test_a_problem_check_that_raises_on_an_output_fails_the_candidate_not_the_judge(tmp_path):
    """GPU MODE's checks are written for plausible outputs; one that raises on a wild one fails that candidate."""
    folder = make_problem(tmp_path, DECLARED_TOLERANCE.replace(
        "        expected = ref_kernel(data)", "        assert output.abs().max() < 1e6, 'wild output'\n"
        "        expected = ref_kernel(data)"))
    wild = tmp_path / "wild.py"
    wild.write_text("import torch\ndef custom_kernel(data):\n    return torch.full_like(data[0], 1e9)\n")
    result = check(folder, wild, device="cpu")
    assert result.verdict == "fail: mismatch", result
    assert "check_implementation raised on this output: AssertionError: wild output" in result.cases[0].message
