"""Where a number came from (issue 39): every check and profile result names the device and stack the judge
ran on; snapshots keep it; history and diff say when two snapshots were measured on different stacks.
Real judges on the CPU, real git repositories, the CLI as a subprocess."""
from __future__ import annotations

import platform
import subprocess
import sys

import pytest
import torch
from conftest import REPO

from kernel_mcp import __version__
from kernel_mcp.reproducibility import Provenance
from kernel_mcp.results import CheckResult
from kernel_mcp.tools.check import check
from kernel_mcp.tools.snapshot import diff, history, snapshot

VECTOR_ADD = REPO / "problems" / "vector_add"
HONEST = VECTOR_ADD / "solutions" / "correct" / "torch_add.py"


def test_a_check_names_the_device_and_stack_it_ran_on():
    result = check(VECTOR_ADD, HONEST, device="cpu")
    stack = result.provenance
    assert result.passed and stack is not None
    assert (stack.device, stack.torch, stack.kernel_mcp, stack.python) == ("cpu", torch.__version__, __version__,
                                                                         platform.python_version())
    assert stack.triton  # the interpreter's Triton, on the CPU too
    assert stack.driver == "" and stack.clocks_mhz == {}  # no NVML on a CPU: unknown, never made up


def test_differences_name_each_part_of_the_stack_that_changed_and_ignore_what_is_unknown():
    a = Provenance(device="NVIDIA H200", driver="580.1", torch="2.11.0", triton="3.6.0", cuda="13.0")
    b = a.model_copy(update={"torch": "2.12.0", "driver": "", "clocks_mhz": {"sm": 1980}})
    assert a.differences(b) == ["torch 2.11.0 -> 2.12.0"]  # the driver unknown on one side; clocks are no stack
    assert a.differences(a) == []


def _result(torch_version: str, speedup_note: str) -> CheckResult:
    return CheckResult(passed=True, verdict="pass", problem="vector_add", candidate=speedup_note,
                       provenance=Provenance(device="NVIDIA H200", driver="580.1", torch=torch_version))


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("def custom_kernel(data):\n    return data[0] + data[1]\n")
    (root / "b.py").write_text("def custom_kernel(data):\n    a, b = data\n    return a + b\n")
    return root


def test_history_and_diff_say_when_snapshots_were_measured_on_different_stacks(workspace):
    first = snapshot(workspace, "vector_add", "a.py", check=_result("2.11.0", "a"))
    same = snapshot(workspace, "vector_add", "b.py", check=_result("2.11.0", "b"))
    other = snapshot(workspace, "vector_add", "b.py", check=_result("2.12.0", "b"), note="after the upgrade")
    assert first.provenance.torch == "2.11.0"  # kept in the snapshot's record
    assert diff(workspace, first.id, same.id).startswith("diff --git")  # one stack: a plain diff
    assert diff(workspace, first.id, other.id).startswith("# measured on different stacks: torch 2.11.0 -> 2.12.0\n")
    board = history(workspace, "vector_add")
    top = board[0].provenance.torch
    assert [bool(s.other_stack) for s in board] == [s.provenance.torch != top for s in board]
    assert sum(bool(s.other_stack) for s in board) in (1, 2)  # the odd one out, or the two it differs from
    shown = subprocess.run([sys.executable, "-m", "kernel_mcp", "history", "vector_add", "--root", str(workspace)],
                           capture_output=True, text=True, cwd=REPO, env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"})
    assert shown.returncode == 0, shown.stderr
    assert "torch 2.11.0 -> 2.12.0" in shown.stdout or "torch 2.12.0 -> 2.11.0" in shown.stdout
