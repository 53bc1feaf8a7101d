"""The command line as a user runs it: real subprocesses, exit codes, --json."""
import json
import subprocess
import sys

import pytest
from conftest import PROBLEMS, REPO

from kernel_mcp.cli.launch import check_device


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


@pytest.mark.parametrize("args, device", [
    (["check", "p", "c.py"], "auto"),
    (["check", "p", "c.py", "--device", "cuda:1"], "cuda:1"),
    (["check", "--device=cpu", "p", "c.py", "--json"], "cpu"),
    (["check", "p", "c.py", "--device"], "auto"),  # typer reports the missing value
    (["check", "--help"], None),
    (["profile", "p", "c.py", "--device", "cuda"], None),
    ([], None),
])
def test_the_launcher_reads_a_checks_device_to_start_its_judge_early(args, device):
    assert check_device(args) == device


def test_a_device_the_judge_refuses_is_still_a_usage_error(tmp_path):
    bad = run("check", "problems/vector_add", "problems/vector_add/baseline.py", "--device", "tpu")
    assert bad.returncode == 2 and "unknown device" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.long
def test_human_output_and_demo_table():
    # vector_add: its kernel has no loop, which Triton 3.6's CPU interpreter cannot run (docs/gpu-verification.md)
    human = run("check", "problems/vector_add", "problems/vector_add/baseline.py", "--device", "cpu")
    assert human.returncode == 0 and "pass" in human.stdout and "secret seed" in human.stdout, human.stdout
    # the demo of two bundled problems, on the device it finds (CPU in CI); every bundled baseline and wrong
    # kernel is checked by test_bundled.py, so the demo's own run of all six repeats nothing of value here
    demo = run("demo", "row_sum", "vector_add", "--json")
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    shown = json.loads(demo.stdout)
    assert [r["problem"] for r in shown["baselines"]] == ["row_sum", "vector_add"]
    assert all(r["passed"] for r in shown["baselines"])
    assert [r["problem"] for r in shown["caught"]] == ["row_sum", "vector_add"]
    assert all(r["verdict"].startswith("fail") for r in shown["caught"])


def test_demo_shows_every_bundled_problem_unless_told_and_refuses_a_name_it_lacks():
    from typer.testing import CliRunner

    from kernel_mcp.cli.demo import demo_problems
    from kernel_mcp.cli.main import app
    bundled = sorted(p.name for p in PROBLEMS.iterdir() if (p / "task.yml").exists())
    assert [folder.name for folder in demo_problems([])] == bundled
    assert all(sorted((PROBLEMS / name / "solutions" / "wrong").glob("*.py")) for name in bundled)  # one to catch
    refused = CliRunner().invoke(app, ["demo", "vector_ad"])
    assert refused.exit_code == 2 and "vector_add" in refused.output, refused.output


def test_calibrate_table_names_each_mix_and_the_roof(monkeypatch):
    """The rendering of a calibration (measuring needs a GPU; tests/test_gpu_profile.py does that)."""
    from typer.testing import CliRunner

    from kernel_mcp.cli.main import app
    from kernel_mcp.tools import calibrate
    measured = calibrate.Calibration(
        device_name="GPU A", measured_at="2026-11-30T00:00:00Z", torch_version="x",
        bandwidth_by_mix={"copy (1 read : 1 write)": 4.16e12, "sum (read only)": 4.35e12},
        matmul_flops_per_s={"bf16_tensor": 7.93e14})
    monkeypatch.setattr(calibrate, "calibrate", lambda on_progress=None: measured)
    text = CliRunner().invoke(app, ["calibrate"], terminal_width=200).output
    assert "copy (1 read : 1 write)" in text and "4.16 TB/s" in text and "793.0 TFLOP/s" in text
    assert "4.35 TB/s (the roof)" in text and "4.16 TB/s (the roof)" not in text
    as_json = json.loads(CliRunner().invoke(app, ["calibrate", "--json"]).output)
    assert as_json["bandwidth_bytes_per_s"] == 4.35e12


# what a process that runs kernel_mcp's entry point reports about itself as it exits (PR_GET_DUMPABLE = 3)
REPORT_DUMPABLE = ("import atexit, ctypes, sys; libc = ctypes.CDLL(None); "
                   "atexit.register(lambda: sys.stderr.write(f'dumpable={libc.prctl(3, 0, 0, 0, 0)}\\n')); "
                   "sys.argv = ['kernel-mcp', *sys.argv[1:]]; from kernel_mcp.cli.launch import main; main()")


@pytest.mark.parametrize("args", [["--help"], ["serve", "--root", "."]])
def test_the_command_is_not_dumpable_from_its_first_step(args):
    """Before any tool runs, so a same-user process cannot read its environment (API keys) through /proc;
    `serve` on stdio ends at end of input."""
    done = subprocess.run([sys.executable, "-c", REPORT_DUMPABLE, *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120, stdin=subprocess.DEVNULL)
    assert "dumpable=0" in done.stderr, done.stderr[-2000:]


def test_serve_on_stdio_says_so_and_stops_at_once_on_ctrl_c(tmp_path):
    """A terminal user sees one line saying what it is; Ctrl-C ends it with exit 0, no traceback, no Enter."""
    import signal
    import time
    server = subprocess.Popen([sys.executable, "-m", "kernel_mcp", "serve", "--root", str(tmp_path)], cwd=REPO,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        said = server.stderr.readline() + server.stderr.readline()
        assert "serving MCP over stdio" in said and str(tmp_path) in said.replace("\n", " ").replace("  ", " "), said
        time.sleep(0.5)
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=20) == 0
        assert "Traceback" not in server.stderr.read()
    finally:
        server.kill()


def test_version_and_flags_read_as_a_user_expects():
    version = run("--version")
    assert version.returncode == 0 and version.stdout.startswith("kernel-mcp ")
    shown = run("check", "--help").stdout
    assert "--json " in shown and "<bool>" not in shown


def test_a_problem_whose_reference_raises_exits_2_like_any_malformed_problem(tmp_path):
    problem = tmp_path / "broken"
    problem.mkdir()
    (problem / "task.yml").write_text("tests: [{n: 8, seed: 1}]\n")
    (problem / "reference.py").write_text("def generate_input(n, seed):\n    raise ValueError('no inputs today')\n"
                                          "def ref_kernel(data):\n    return data\n")
    (tmp_path / "c.py").write_text("def custom_kernel(data):\n    return data\n")
    done = run("check", str(problem), str(tmp_path / "c.py"), "--device", "cpu")
    assert done.returncode == 2 and "no inputs today" in done.stdout + done.stderr


def test_a_hanging_candidate_fails_within_the_timeout_asked_for(tmp_path):
    import time
    (tmp_path / "hang.py").write_text("import time\ndef custom_kernel(data):\n    time.sleep(3600)\n")
    began = time.monotonic()
    done = run("check", "problems/vector_add", str(tmp_path / "hang.py"), "--device", "cpu", "--timeout", "3")
    assert done.returncode == 1 and "no answer within 3 s" in done.stdout, done.stdout[-2000:]
    assert time.monotonic() - began < 90


def test_steer_leaves_a_hint_and_refuses_a_folder_that_is_not_a_run(tmp_path):
    (tmp_path / "run.json").write_text("{}")
    done = run("steer", str(tmp_path), "stop trying larger tiles")
    assert done.returncode == 0, done.stderr
    assert [p.read_text() for p in (tmp_path / "hints").glob("*.txt")] == ["stop trying larger tiles"]
    refused = run("steer", str(tmp_path / "nowhere"), "a hint")
    assert refused.returncode == 2 and "not a run folder" in refused.stderr
