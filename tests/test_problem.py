"""task.yml validation and problem loading (static: no problem code is imported here)."""
import textwrap

import pytest
from conftest import FIXTURES

from kernel_mcp.errors import UsageError
from kernel_mcp.files import bundled_problems
from kernel_mcp.problem import load_problem

REFERENCE = "def generate_input(n, seed):\n    pass\n\ndef ref_kernel(data):\n    pass\n"


def make(tmp_path, task: str, reference: str = REFERENCE, name: str = "demo"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "task.yml").write_text(textwrap.dedent(task))
    (folder / "reference.py").write_text(reference)
    return folder


def test_every_bundled_problem_loads():
    names = {p.name for p in bundled_problems()}
    assert {"vector_add", "softmax", "rmsnorm", "row_sum", "matmul_fp32", "matmul_bf16"} <= names
    for folder in bundled_problems():
        problem = load_problem(folder)
        assert problem.tests and problem.benchmarks and not problem.warnings
        assert (folder / "baseline.py").is_file()
        assert list((folder / "solutions" / "correct").glob("*.py"))
        assert list((folder / "solutions" / "wrong").glob("*.py"))


def test_unknown_kernel_mcp_key_names_file_key_and_problem(tmp_path):
    folder = make(tmp_path, """
        tests: [{n: 4, seed: 1}]
        kernel_mcp:
          tolerance: {K: "n", magnitdue: output}
    """)
    with pytest.raises(UsageError) as err:
        load_problem(folder)
    message = str(err.value)
    assert "task.yml" in message and "kernel_mcp.tolerance.magnitdue" in message
    assert "unknown key" in message and "problem demo" in message


def test_wrong_type_is_an_error(tmp_path):
    folder = make(tmp_path, """
        tests: [{n: 4, seed: 1}]
        kernel_mcp: {timeouts: {call: "soon"}}
    """)
    with pytest.raises(UsageError, match=r"kernel_mcp\.timeouts\.call"):
        load_problem(folder)


def test_bad_expression_is_an_error(tmp_path):
    folder = make(tmp_path, """
        tests: [{n: 4, seed: 1}]
        kernel_mcp: {flops: "__import__('os').system('true')"}
    """)
    with pytest.raises(UsageError, match="flops"):
        load_problem(folder)


def test_missing_function_is_named(tmp_path):
    folder = make(tmp_path, "tests: [{n: 4, seed: 1}]\n", reference="def generate_input(n, seed):\n    pass\n")
    with pytest.raises(UsageError, match=r"reference.py: missing ref_kernel \(problem demo\)"):
        load_problem(folder)


def test_missing_seed_and_missing_tests(tmp_path):
    with pytest.raises(UsageError, match="no 'seed'"):
        load_problem(make(tmp_path, "tests: [{n: 4}]\n", name="a"))
    with pytest.raises(UsageError, match="tests"):
        load_problem(make(tmp_path, "description: x\n", name="b"))


def test_not_a_problem(tmp_path):
    with pytest.raises(UsageError, match="not found"):
        load_problem(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="missing task.yml"):
        load_problem(tmp_path / "empty")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "task.yml").write_text("tests: [\n")
    (tmp_path / "bad" / "reference.py").write_text(REFERENCE)
    with pytest.raises(UsageError, match="not valid YAML"):
        load_problem(tmp_path / "bad")


def test_unknown_top_level_key_is_a_warning_not_an_error(tmp_path):
    problem = load_problem(make(tmp_path, "tests: [{n: 4, seed: 1}]\nfancy_new_key: 3\n"))
    assert [w.code for w in problem.warnings] == ["unknown_task_key"]


def test_gpu_mode_task_file_loads_unchanged():
    problem = load_problem(FIXTURES / "gpumode" / "scale_shift")
    assert problem.kind == "gpumode" and len(problem.tests) == 3 and not problem.warnings


def test_kernelbench_file_loads():
    problem = load_problem(FIXTURES / "kernelbench" / "linear_gelu.py")
    assert problem.kind == "kernelbench" and problem.tests
