"""``sanitize`` (issue 39): Compute Sanitizer's output read into findings a model can use, the answer where no
GPU or no tool is there, and the launch path end to end through a stand-in ``compute-sanitizer`` on PATH
(a script that records its command line and prints a report, as a real tool would on a GPU). The real tool
on real kernels runs on a GPU only (tests/test_gpu_sanitize.py; passed on an H100, 2026-12-05)."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
from conftest import PROBLEMS, REPO

from kernel_mcp.backends.sanitizer import TOOLS, command, parse, summary
from kernel_mcp.errors import UsageError
from kernel_mcp.problem import load_problem
from kernel_mcp.tools.sanitize import NO_GPU, sanitize, smallest
from kernel_mcp.worker.launch.sanitize import INSTALL_HINT, run_sanitizer

FIXTURES = REPO / "tests" / "fixtures" / "sanitizer"
VECTOR_ADD = PROBLEMS / "vector_add"


def _read(name: str) -> str:
    return (FIXTURES / f"{name}.txt").read_text()


def test_memcheck_errors_are_grouped_by_kind_kernel_and_line():
    report = parse("memcheck", _read("memcheck_oob"))
    assert report.ran and report.errors == 3
    write, read = report.findings
    assert (write.kind, write.kernel, write.location, write.count) == (
        "Invalid __global__ write of size N bytes", "_store_past_mask", "/work/kernels/add.py:21", 2)
    assert (read.kind, read.kernel, read.location) == ("Invalid __global__ read of size N bytes", "_load_ahead", "")
    older = parse("memcheck", _read("memcheck_older")).findings[0]
    assert (older.kernel, older.location) == ("add_kernel(float *, float *, int)", "add.cu:21")


def test_racecheck_initcheck_and_a_clean_run_are_read_too():
    race = parse("racecheck", _read("racecheck"))
    assert race.errors == 1 and race.findings[0].kind == "Error: Race reported between Write access"
    assert (race.findings[0].kernel, race.findings[0].location) == ("block_sum(float const *, float *)", "reduce.cu:14")
    init = parse("initcheck", _read("initcheck"))
    assert init.findings[0].kind == "Uninitialized __global__ memory read of size N bytes"
    clean = parse("memcheck", _read("clean"))
    assert clean.ran and clean.errors == 0 and not clean.findings
    said = summary([clean, race])
    assert said.splitlines() == ["memcheck: clean", "racecheck: 1 errors: 1x Error: Race reported between Write "
                                 "access in block_sum(float const *, float *) at reduce.cu:14"]


def test_racecheck_warnings_alone_are_not_clean():
    """Captured on an H100 (2026-12-05): a race between threads of one warp, counted only in the summary."""
    warned = parse("racecheck", _read("racecheck_warnings"))
    assert (warned.ran, warned.errors, warned.warnings, warned.findings) == (True, 0, 3, [])
    assert summary([warned]).startswith("racecheck: 0 errors, 3 warnings (possible races between threads of one")


def test_no_gpu_and_no_tool_are_answers_not_errors(tmp_path):
    result = sanitize(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu")
    assert result.message == NO_GPU and result.clean is None and not result.tools
    assert result.params == {**smallest(load_problem(VECTOR_ADD)), "seed": "secret"}
    assert result.params["n"] == 1  # the smallest of vector_add's tests: one element
    reports = run_sanitizer(["true"], {"PATH": str(tmp_path)}, 10.0)
    assert [r.tool for r in reports] == list(TOOLS) and all(r.message == INSTALL_HINT and not r.ran for r in reports)
    with pytest.raises(UsageError, match="unknown sanitizer tool valgrind"):
        sanitize(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu", tools=["valgrind"])


def test_each_tool_runs_over_the_target_and_its_report_is_read(tmp_path):
    """A stand-in compute-sanitizer on PATH: it records each command line and prints the fixture of the tool
    it was asked for, so the launch, the arguments, the time budget and the reading are what is tested."""
    log = tmp_path / "calls.jsonl"
    fake = tmp_path / "compute-sanitizer"
    fake.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    "import os\n"
                    f"open({str(log)!r}, 'a').write(json.dumps([os.environ.get('PYTORCH_NO_CUDA_MEMORY_CACHING'), "
                    "*sys.argv[1:]]) + '\\n')\n"
                    "tool = sys.argv[sys.argv.index('--tool') + 1]\n"
                    f"names = {{'memcheck': 'memcheck_oob', 'racecheck': 'racecheck', 'initcheck': 'initcheck'}}\n"
                    f"print(open({str(FIXTURES)!r} + '/' + names.get(tool, 'clean') + '.txt').read())\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    target = [sys.executable, "-c", "print('the target')"]
    reports = run_sanitizer(target, {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}, 60.0)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert {c.pop(0) for c in calls} == {"1"}  # torch's caching allocator off: it hides strays from memcheck
    assert [c[c.index("--tool") + 1] for c in calls] == list(TOOLS)
    assert all(c == command("x", tool, target)[1:] for c, tool in zip(calls, TOOLS))  # the tool, then the target
    assert [(r.tool, r.errors) for r in reports] == [("memcheck", 3), ("racecheck", 1), ("initcheck", 1),
                                                     ("synccheck", 0)]


def test_the_command_line_names_the_tool_and_says_what_it_found(tmp_path):
    done = subprocess.run([sys.executable, "-m", "kernel_mcp", "sanitize", str(VECTOR_ADD),
                           str(VECTOR_ADD / "baseline.py"), "--device", "cpu", "--json"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and json.loads(done.stdout)["message"] == NO_GPU
    bad = subprocess.run([sys.executable, "-m", "kernel_mcp", "sanitize", str(VECTOR_ADD),
                          str(VECTOR_ADD / "baseline.py"), "--device", "cpu", "--tool", "valgrind"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown sanitizer tool" in bad.stderr


def test_evaluate_runs_the_sanitizer_when_asked(tmp_path):
    import shutil

    from kernel_mcp.tools._request import evaluate_request
    from kernel_mcp.tools.evaluate import evaluate
    from kernel_mcp.views.summaries import summarize_evaluate
    root = tmp_path / "ws"
    shutil.copytree(VECTOR_ADD, root / "vector_add", ignore=shutil.ignore_patterns("__pycache__", "solutions"))
    request = evaluate_request(root=root, problem=root / "vector_add", candidate=root / "vector_add" / "baseline.py",
                               device="cpu", budget_s=1.0, shapes="tests", sanitize=True)
    result = evaluate(request)
    assert result.passed and result.sanitize is not None and result.sanitize.message == NO_GPU
    assert summarize_evaluate(result).sanitize == NO_GPU
    plain = evaluate(request.model_copy(update={"sanitize": False}))
    assert plain.sanitize is None and summarize_evaluate(plain).sanitize == ""
