"""The command line as a user runs it: real subprocesses, exit codes, --json."""
import json
import subprocess
import sys

from conftest import PROBLEMS, REPO


def run(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "kernel_mcp", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=timeout)


def test_check_json_pass_and_fail_exit_codes():
    ok = run("check", "problems/vector_add", "problems/vector_add/baseline.py", "--device", "cpu", "--json")
    assert ok.returncode == 0, ok.stderr
    body = json.loads(ok.stdout)
    assert body["passed"] is True and body["verdict"] == "pass"
    assert {"passed", "verdict", "cases", "findings"} <= set(body)
    bad = run("check", "problems/vector_add", "problems/vector_add/solutions/wrong/load_mask_off_by_one.py",
              "--device", "cpu", "--json")
    assert bad.returncode == 1
    body = json.loads(bad.stdout)
    assert body["passed"] is False and body["findings"][0]["code"] == "mismatch"
    case = next(c for c in body["cases"] if not c["passed"])
    mismatch = case["comparisons"][0]["first_mismatches"][0]
    assert {"index", "got", "expected", "bound"} <= set(mismatch)


def test_usage_errors_exit_2(tmp_path):
    missing = run("check", "problems/no_such_problem", "problems/vector_add/baseline.py")
    assert missing.returncode == 2 and "problem not found" in missing.stderr
    (tmp_path / "task.yml").write_text("tests: [{n: 1, seed: 1}]\nkernel_mcp: {nope: 1}\n")
    (tmp_path / "reference.py").write_text("def generate_input(n, seed): pass\ndef ref_kernel(d): pass\n")
    bad = run("check", str(tmp_path), "problems/vector_add/baseline.py")
    assert bad.returncode == 2 and "kernel_mcp.nope: unknown key" in bad.stderr.replace("\n", " ")
    assert run("check", "problems/vector_add").returncode == 2  # typer: missing argument


def test_human_output_and_demo_table():
    # vector_add: its kernel has no loop, which Triton 3.6's CPU interpreter cannot run (docs/gpu-verification.md)
    human = run("check", "problems/vector_add", "problems/vector_add/baseline.py", "--device", "cpu")
    assert human.returncode == 0 and "pass" in human.stdout and "secret seed" in human.stdout, human.stdout
    demo = run("demo", "--json")  # README's main job: the device it finds (the CPU in CI)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    rows = json.loads(demo.stdout)
    assert {r["problem"] for r in rows} >= {p.name for p in PROBLEMS.iterdir() if (p / "task.yml").exists()}
    assert all(r["passed"] for r in rows)
