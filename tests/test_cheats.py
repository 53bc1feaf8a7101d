"""Adversarial candidates (tests/cheats/*.py) against ``check``: none of them may pass.

Each fixture's docstring names the incident or attack it models (docs/threat-model.md, "Incidents it learns from"
the evaluator"). A wrong pass is the worst bug kernel_mcp can have, so every cheat asserts ``passed is
False`` and, where the category is stable, the verdict. Honest controls guard against false failures.
Anything that may damage files runs on a copy of a problem (or of the package) under tmp_path, marked
with COPY_MARKER, which the damaging fixtures look for before they touch anything.

Where a test needs a caller without CAP_SYS_PTRACE (Docker's default root), the CLI is started with
that capability dropped, so the attacks through /proc/<caller>/{mem,fd,environ} are tried for real.
"""
from __future__ import annotations

import json
import os
import py_compile
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import CHEATS_STATE, repo_pythonpath
from conftest import REPO as ROOT

from kernel_mcp.results import CheckResult
from kernel_mcp.tools.check import check

CHEATS = ROOT / "tests" / "cheats"
VECTOR_ADD = ROOT / "problems" / "vector_add"
MATMUL_FP32 = ROOT / "problems" / "matmul_fp32"
STATE_DIR = CHEATS_STATE  # where daemon fixtures write their pids and markers
COPY_MARKER = ".kernel_mcp_cheats_copy"
SECRET = "sk-test-secret-kernel-mcp"  # the fake API key secret_env.py looks for


def run(problem: Path, name: str, fresh_seeds: int = 1) -> CheckResult:
    return check(problem, CHEATS / f"{name}.py", device="cpu", fresh_seeds=fresh_seeds)


def explain(r: CheckResult) -> str:
    cases = "; ".join(f"{c.name}: {c.failure}: {c.message[:300]}" for c in r.cases if not c.passed)
    findings = "; ".join(f"{f.code}: {f.message[:300]}" for f in r.findings)
    return f"verdict={r.verdict!r} cases=[{cases}] findings=[{findings}]"


def copy_problem(src: Path, dst: Path, timeouts: dict | None = None) -> Path:
    """A private copy of a bundled problem that damaging fixtures may write to."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "solutions"))
    (dst / COPY_MARKER).write_text("tests/test_cheats.py may let candidates damage this copy\n")
    if timeouts:
        task = dst / "task.yml"
        inline = ", ".join(f"{k}: {v}" for k, v in timeouts.items())
        task.write_text(task.read_text().rstrip("\n") + f"\n  timeouts: {{{inline}}}\n")
    return dst


def process_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rfind(")") + 2:].split()[0] not in ("Z", "X")  # a zombie is dead


def kill_if_ours(pid: int) -> None:
    """SIGKILL a leftover fixture daemon by pid, only if it still is a kernel_mcp candidate process."""
    try:
        if b"kernel_mcp" in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def read_pid(path: Path, wait_s: float) -> int | None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if path.is_file():
            return int(path.read_text())
        time.sleep(0.05)
    return None


def _drop_ptrace_capability() -> None:
    """preexec_fn: the CLI runs without CAP_SYS_PTRACE, like root in a default Docker container or any
    non-root user (PR_CAPBSET_DROP; a no-op without CAP_SETPCAP, where the capability is absent anyway)."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(24, 19, 0, 0, 0)  # PR_CAPBSET_DROP, CAP_SYS_PTRACE


def _like_an_ordinary_user() -> None:
    """preexec_fn: keep only the capabilities a candidate process keeps (IPC_LOCK, SYS_NICE, SYS_RESOURCE),
    so that, as for two processes of one ordinary user, nothing but the caller's being non-dumpable keeps
    a candidate out of the caller's /proc files (a root caller's full capabilities would otherwise protect
    it: the kernel refuses access to a process holding capabilities the reader lacks)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):
        if cap not in (14, 23, 24):
            libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP


def cli(args: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT, timeout: float = 120,
        without_ptrace: bool = False) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "kernel_mcp", "check", *args, "--device", "cpu", "--fresh-seeds", "1",
               "--json"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=_drop_ptrace_capability if without_ptrace else None)




def minimal_env(**extra: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "KERNEL_MCP_TEST_STATE_DIR") if k in os.environ}
    # keep the machine's own extra package folders (the GPU machine installs dependencies under one)
    env["PYTHONPATH"] = repo_pythonpath()
    if "PYTHONPATH" in extra:
        extra = {**extra, "PYTHONPATH": os.pathsep.join(filter(None, [extra["PYTHONPATH"], env["PYTHONPATH"]]))}
    return {**env, **extra}


# --- cheats that must fail, with the verdicts they may get --------------------------------------------
# (fixture, problem, accepted verdicts, fresh seeds)
CHEATS_TABLE = [
    ("stale_empty", VECTOR_ADD, {"fail: mismatch"}, 1),
    ("stale_freed_answer", VECTOR_ADD, {"fail: mismatch"}, 1),
    # fresh_seeds=3: the shared-memory mappings of inputs are then reused at the same address within the
    # check, so the pointer-keyed cache really serves a stale answer instead of computing honestly
    ("cache_shape", VECTOR_ADD, {"fail: mismatch"}, 1),
    ("cache_sampled_values", VECTOR_ADD, {"fail: mismatch"}, 1),
    ("mutate_inplace_return", VECTOR_ADD, {"fail: mutation"}, 1),
    ("mutate_zero_input", VECTOR_ADD, {"fail: mutation"}, 1),
    ("alias_view_of_input", VECTOR_ADD, {"fail: alias"}, 1),
    ("subclass_lazy_tensor", VECTOR_ADD, {"fail: forged", "fail: structure"}, 1),
    ("patch_comparisons", VECTOR_ADD, {"fail: mismatch"}, 1),
    ("gc_scavenge", VECTOR_ADD, {"fail: mismatch"}, 1),
    ("frame_walk", VECTOR_ADD, {"fail: mismatch"}, 1),
    ("matmul_fp32_via_bf16", MATMUL_FP32, {"fail: mismatch", "fail: property"}, 1),
    ("matmul_fp32_via_fp16", MATMUL_FP32, {"fail: mismatch", "fail: property"}, 1),
    ("vector_add_via_fp16", VECTOR_ADD, {"fail: mismatch"}, 1),
    ("partial_zeros", VECTOR_ADD, {"fail: mismatch"}, 1),
    ("partial_empty", VECTOR_ADD, {"fail: mismatch"}, 1),
    ("forge_stdout_all_fds", VECTOR_ADD, {"fail: crash", "fail: forged"}, 1),
    ("forge_parent_pipes", VECTOR_ADD, {"fail: crash", "fail: forged"}, 1),
    ("crash_raise", VECTOR_ADD, {"fail: exception"}, 1),
    ("crash_sys_exit", VECTOR_ADD, {"fail: exception", "fail: crash"}, 1),
    ("crash_os_exit", VECTOR_ADD, {"fail: crash"}, 1),
    ("crash_segfault", VECTOR_ADD, {"fail: crash"}, 1),
    ("crash_on_import", VECTOR_ADD, {"fail: exception on import", "fail: crash on import"}, 1),
    ("oom_huge_tensor", VECTOR_ADD, {"fail: exception", "fail: crash"}, 1),
    ("recursion_infinite", VECTOR_ADD, {"fail: exception"}, 1),
    # Python 3.11 overflows the C stack (crash); 3.12+ guards C recursion and raises RecursionError
    ("recursion_c_stack", VECTOR_ADD, {"fail: crash", "fail: exception"}, 1),
    ("wrong_a_minus_b", VECTOR_ADD, {"fail: mismatch"}, 1),
]


@pytest.mark.parametrize("name, problem, verdicts, fresh_seeds", CHEATS_TABLE, ids=[c[0] for c in CHEATS_TABLE])
def test_cheat_fails(name: str, problem: Path, verdicts: set[str], fresh_seeds: int) -> None:
    r = run(problem, name, fresh_seeds)
    assert r.passed is False, explain(r)
    assert r.verdict in verdicts, explain(r)


def test_cache_keyed_on_pointer_never_passes_with_a_stale_answer() -> None:
    """Whether input addresses repeat depends on the allocator (they did on the 2-core CI machine, not on
    the H200 machine's Python 3.12): a cache hit must fail; without one the candidate is simply honest."""
    r = run(VECTOR_ADD, "cache_data_ptr", fresh_seeds=3)
    if "served from cache" in r.log_tail:
        assert r.passed is False and r.verdict in {"fail: mismatch", "fail: structure"}, explain(r)
    else:
        assert r.passed is True, explain(r)


def test_pickle_payload_is_refused_and_never_runs() -> None:
    marker = Path("/tmp/kernel_mcp_cheats_pickle_payload.marker")  # subclass_pickle_payload.MARKER
    marker.unlink(missing_ok=True)
    r = run(VECTOR_ADD, "subclass_pickle_payload")
    assert r.passed is False, explain(r)
    assert r.verdict == "fail: forged", explain(r)
    assert not marker.exists(), "the judge ran code from the candidate's pickle"


# --- output aliasing on a problem where returning the input has the right values -------------------
IDENTITY_TASK = """description: out = a copy of x (a new tensor).
tests:
  - {n: 1000, seed: 1}
  - {n: 7, seed: 2}
"""
IDENTITY_REFERENCE = '''import torch


def generate_input(n, seed, device="cpu"):
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return (torch.randn(n, generator=gen, device=device),)


def ref_kernel(data):
    (x,) = data
    return x.clone()
'''


@pytest.fixture(scope="module")
def identity_problem(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("problems") / "identity"
    folder.mkdir()
    (folder / "task.yml").write_text(IDENTITY_TASK)
    (folder / "reference.py").write_text(IDENTITY_REFERENCE)
    return folder


@pytest.mark.parametrize("name", ["alias_return_input", "alias_reshape_input"])
def test_output_aliasing_an_input_fails(identity_problem: Path, name: str) -> None:
    r = run(identity_problem, name)
    assert r.passed is False, explain(r)
    assert r.verdict == "fail: alias", explain(r)


def test_honest_copy_passes_the_identity_problem(identity_problem: Path) -> None:
    r = run(identity_problem, "honest_clone")
    assert r.passed is True, explain(r)


# --- honest controls ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["honest_side_thread", "honest_helper_module", "honest_reused_output_buffer",
                                  "honest_noisy_stdout"])
def test_honest_candidate_passes(name: str) -> None:
    r = run(VECTOR_ADD, name)
    assert r.passed is True, explain(r)
    assert r.verdict == "pass", explain(r)


# --- timeouts and the result channel ------------------------------------------------------------------
def test_hang_is_a_timeout(tmp_path: Path) -> None:
    problem = copy_problem(VECTOR_ADD, tmp_path / "vector_add_copy", {"call": 5, "import": 60})
    started = time.monotonic()
    r = run(problem, "hang_sleep")
    assert r.passed is False, explain(r)
    assert r.verdict == "fail: timeout", explain(r)
    assert time.monotonic() - started < 5 + 30


def test_partial_frame_on_the_socket_cannot_stall_the_judge(tmp_path: Path) -> None:
    problem = copy_problem(VECTOR_ADD, tmp_path / "vector_add_copy", {"call": 3, "import": 60})
    started = time.monotonic()
    r = run(problem, "channel_partial_frame_hang")
    elapsed = time.monotonic() - started
    assert r.passed is False, explain(r)
    assert r.verdict.startswith("fail:"), explain(r)
    # the fixture stalls 60 s mid-frame: only a judge with a deadline on the frame ends well before that
    assert elapsed < 40, f"the check took {elapsed:.1f} s with a 3 s call timeout ({explain(r)})"


def test_bad_frame_length_then_stall_is_blamed_on_the_candidate(tmp_path: Path) -> None:
    problem = copy_problem(VECTOR_ADD, tmp_path / "vector_add_copy", {"call": 3, "import": 60})
    started = time.monotonic()
    r = run(problem, "channel_bad_length_hang")
    assert r.passed is False, explain(r)
    assert r.verdict in {"fail: crash", "fail: forged", "fail: timeout"}, explain(r)
    assert time.monotonic() - started < 3 + 20


# --- processes the candidate leaves behind --------------------------------------------------------------
def heart_stopped(beat: Path) -> bool:
    """True if the daemon's heartbeat file (rewritten every 0.1 s while it lives) stays unchanged."""
    before = beat.read_bytes() if beat.exists() else b""
    time.sleep(1.0)
    return (beat.read_bytes() if beat.exists() else b"") == before


def test_daemon_is_dead_after_check() -> None:
    pidfile, beat = STATE_DIR / "daemon_double_fork.pid", STATE_DIR / "daemon_double_fork.beat"
    pidfile.unlink(missing_ok=True)
    beat.unlink(missing_ok=True)
    run(VECTOR_ADD, "daemon_double_fork")  # honest values: the verdict itself is not the point
    pid = read_pid(pidfile, wait_s=2)
    assert pid is not None, "the fixture's daemon never started"
    try:
        assert heart_stopped(beat), "the daemon outlived the check"
    finally:
        kill_if_ours(pid)


def test_daemon_that_kills_the_judge_dies_and_cannot_tamper_later(tmp_path: Path) -> None:
    problem = copy_problem(VECTOR_ADD, tmp_path / "vector_add_copy")
    original = (problem / "reference.py").read_bytes()
    pidfile, tampered = STATE_DIR / "daemon_kills_judge.pid", STATE_DIR / "daemon_kills_judge.tampered"
    pidfile.unlink(missing_ok=True)
    tampered.unlink(missing_ok=True)
    r = run(problem, "daemon_kills_judge")
    pid = read_pid(pidfile, wait_s=1.5)
    try:
        time.sleep(3.0)  # the daemon's TAMPER_DELAY_S, and a margin
        assert heart_stopped(STATE_DIR / "daemon_kills_judge.beat"), f"daemon outlived the check ({explain(r)})"
        assert (problem / "reference.py").read_bytes() == original, "reference.py changed after the check"
        assert not run(problem, "wrong_a_minus_b").passed
    finally:
        if pid is not None:
            kill_if_ours(pid)


def test_after_a_segfault_the_next_check_works() -> None:
    crashed = run(VECTOR_ADD, "crash_segfault")
    assert crashed.verdict == "fail: crash", explain(crashed)
    r = check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu", fresh_seeds=1)
    assert r.passed is True, explain(r)


# --- secrets ---------------------------------------------------------------------------------------------
def test_secret_in_callers_environment_is_not_visible(monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    r = run(VECTOR_ADD, "secret_env")
    assert r.passed is False, explain(r)
    assert r.verdict == "fail: mismatch", explain(r)


def test_secret_in_the_cli_processes_environment_is_not_visible() -> None:
    proc = cli([str(VECTOR_ADD), str(CHEATS / "secret_env.py")], env=minimal_env(ANTHROPIC_API_KEY=SECRET))
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and result["passed"] is False, result["verdict"]


def test_a_secret_printed_or_raised_by_a_candidate_never_reaches_a_result_or_the_cache(monkeypatch, tmp_path) -> None:
    """Belt and braces (worker/runners/redact.py): a candidate that has the caller's key anyway (here, written in
    it) prints it and raises with it, in a check and in a compile step."""
    from kernel_mcp.tools.compile import compile as compile_candidate
    from kernel_mcp.worker.runners.local import LocalRunner
    cache = tmp_path / "cache"
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(cache))
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    runner = LocalRunner()  # reads the secrets of this process now
    checked = check(VECTOR_ADD, CHEATS / "secret_print.py", device="cpu", fresh_seeds=1, runner=runner)
    compiled = compile_candidate(CHEATS / "secret_print.py", problem=VECTOR_ADD, runner=runner)
    for result in (checked, compiled):
        text = result.model_dump_json()
        assert SECRET not in text, text[:2000]
    assert "[redacted ANTHROPIC_API_KEY]" in checked.model_dump_json(), explain(checked)
    leaked = [p for p in cache.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert not leaked, leaked


@pytest.mark.parametrize("namespaces", ["1", "0"])
def test_a_compile_steps_candidate_cannot_read_the_callers_key(tmp_path, namespaces) -> None:
    """`kernel-mcp compile` run with an ordinary user's capabilities, with its own PID namespace for the step
    where it can be made and without one (KERNEL_MCP_PID_NAMESPACE=0: the step then sees the caller in
    /proc, and only the caller's being non-dumpable keeps its environment closed)."""
    seen, ran = STATE_DIR / "compile_secret_env.seen", STATE_DIR / "compile_secret_env.ran"
    seen.unlink(missing_ok=True)
    ran.unlink(missing_ok=True)
    env = minimal_env(ANTHROPIC_API_KEY=SECRET, KERNEL_MCP_CACHE=str(tmp_path / "cache"),
                      KERNEL_MCP_PID_NAMESPACE=namespaces)
    done = subprocess.run([sys.executable, "-m", "kernel_mcp", "compile", str(CHEATS / "compile_secret_env.py"),
                           "--problem", str(VECTOR_ADD), "--json"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300, preexec_fn=_like_an_ordinary_user)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert ran.exists(), "the fixture never ran, or could not report (the test would prove nothing)"
    assert not seen.exists(), "the compile step's candidate read the caller's API key"
    assert SECRET not in done.stdout + done.stderr


def test_a_caller_with_an_ordinary_users_capabilities_still_isolates_its_candidates(tmp_path) -> None:
    """Root without CAP_SYS_ADMIN (a container's default) cannot make a PID namespace directly; a user
    namespace first still gives the candidate its own PID and mount namespace (no no_pid_namespace)."""
    probe = subprocess.run([sys.executable, "-c", "import ctypes; print(ctypes.CDLL(None).unshare(0x10000000))"],
                           capture_output=True, text=True, preexec_fn=_like_an_ordinary_user)
    if probe.stdout.strip() != "0":
        pytest.skip("this machine allows no user namespace without privileges")
    env = minimal_env(KERNEL_MCP_CACHE=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-m", "kernel_mcp", "check", str(VECTOR_ADD), str(VECTOR_ADD / "baseline.py"),
                           "--device", "cpu", "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, preexec_fn=_like_an_ordinary_user)
    result = json.loads(done.stdout)
    assert result["passed"], done.stdout[-2000:]
    assert "no_pid_namespace" not in [f["code"] for f in result["findings"]], result["findings"]


def test_a_compile_step_ends_at_once_and_its_daemon_with_it(tmp_path, monkeypatch) -> None:
    """The daemon keeps the step's stdout and stderr open: the step's reply comes over its own socket
    and its log is a file, so nothing waits for the end of a pipe; the daemon dies with the step."""
    from kernel_mcp.tools.compile import compile as compile_candidate
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    beat = STATE_DIR / "compile_daemon.beat"
    beat.unlink(missing_ok=True)
    started = time.monotonic()
    result = compile_candidate(CHEATS / "compile_daemon.py", problem=VECTOR_ADD)
    seconds = time.monotonic() - started
    assert result.ok, result.model_dump_json()[:2000]
    assert seconds < 120, f"compile took {seconds:.0f} s"
    assert beat.exists(), "the fixture's daemon never started"
    assert heart_stopped(beat), "the compile step's daemon outlived it"


# --- tampering ---------------------------------------------------------------------------------------------
# Two defences, each tried: where candidates get a mount namespace the file systems are read-only to them
# ("sealed": the write fails, there is nothing to restore and the workspace is never guarded); without one
# (KERNEL_MCP_PID_NAMESPACE=0, or an OS that refuses namespaces) the runner's file guard catches and undoes
# the change ("guarded": fail: tampering).
@pytest.fixture(params=["sealed", "guarded"])
def defence(request, monkeypatch) -> str:
    from kernel_mcp.worker.isolation import sandbox
    if request.param == "guarded":
        monkeypatch.setenv("KERNEL_MCP_PID_NAMESPACE", "0")
    elif not sandbox.sealed_for_candidates((str(ROOT), "/tmp")):
        pytest.skip("this machine gives candidates no mount namespace")
    return request.param


def assert_tampering_stopped(r: CheckResult, defence: str) -> None:
    assert r.passed is False, explain(r)
    if defence == "guarded":
        assert r.verdict == "fail: tampering", explain(r)
    else:
        assert "Read-only file system" in r.model_dump_json(), explain(r)
        assert not any(f.code == "tampering" for f in r.findings), explain(r)


@pytest.mark.parametrize("name, planted", [("tamper_reference", []),
                                           ("tamper_plant_modules", ["utils.py", "task.py"])])
def test_tampering_is_caught_and_undone(tmp_path: Path, name: str, planted: list[str], defence: str) -> None:
    problem = copy_problem(VECTOR_ADD, tmp_path / "vector_add_copy")
    original = (problem / "reference.py").read_bytes()
    r = run(problem, name)
    assert_tampering_stopped(r, defence)
    assert (problem / "reference.py").read_bytes() == original
    for file in planted:
        assert not (problem / file).exists(), f"planted {file} is still there"
    honest = check(problem, VECTOR_ADD / "baseline.py", device="cpu", fresh_seeds=1)
    assert honest.passed is True, explain(honest)


def test_overwritten_bytecode_cache_is_caught(tmp_path: Path, defence: str) -> None:
    problem = copy_problem(VECTOR_ADD, tmp_path / "vector_add_copy")
    # someone imported reference.py once without -B (a test, a notebook): its .pyc exists
    py_compile.compile(str(problem / "reference.py"), doraise=True)
    r = run(problem, "tamper_pycache")
    assert_tampering_stopped(r, defence)
    after = run(problem, "wrong_a_minus_b")
    assert after.passed is False, explain(after)


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A copy of the kernel_mcp package (and the problems) whose root a candidate may write to."""
    root = tmp_path / "root"
    root.mkdir()
    shutil.copytree(ROOT / "kernel_mcp", root / "kernel_mcp", ignore=shutil.ignore_patterns("__pycache__"))
    copy_problem(VECTOR_ADD, root / "problems" / "vector_add")
    (root / COPY_MARKER).write_text("tests/test_cheats.py may let candidates damage this copy\n")
    return root


def test_planted_sitecustomize_next_to_the_package_is_caught(package_copy: Path, defence: str) -> None:
    env = minimal_env(PYTHONPATH=str(package_copy))
    if defence == "guarded":
        env["KERNEL_MCP_PID_NAMESPACE"] = "0"
    problem = package_copy / "problems" / "vector_add"
    first = json.loads(cli([str(problem), str(CHEATS / "tamper_sitecustomize.py")], env=env,
                           cwd=package_copy).stdout)
    second = json.loads(cli([str(problem), str(CHEATS / "wrong_a_minus_b.py")], env=env,
                            cwd=package_copy).stdout)
    assert second["passed"] is False, f"a wrong candidate passed after the plant: {second['verdict']}"
    assert first["passed"] is False, first["verdict"]
    if defence == "guarded":
        assert first["verdict"] == "fail: tampering", first["verdict"]
    else:
        assert not (package_copy / "sitecustomize.py").exists()
        assert "Read-only file system" in json.dumps(first), json.dumps(first)[:3000]


# --- the command line: the candidate's stdout is a log, never the result ----------------------------------
@pytest.mark.parametrize("name", ["forge_stdout_all_fds", "forge_parent_pipes"])
def test_cli_output_cannot_be_forged(name: str) -> None:
    proc = cli(["problems/vector_add", f"tests/cheats/{name}.py"])
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)  # exactly one JSON object, nothing printed around it
    assert isinstance(result, dict) and result["passed"] is False, result
    assert result["verdict"] in {"fail: crash", "fail: forged"}, result["verdict"]


# --- a caller without CAP_SYS_PTRACE (root in a default Docker container, or any non-root user) ----------
CALLER_IS_INSPECTABLE = (
    "the caller (CLI / MCP server / orchestrator: client.run_judge) is an ordinary dumpable process of the "
    "same user and, unlike the judge, is not hardened: where it has no capability the candidate lacks "
    "(root without CAP_SYS_PTRACE as in Docker's default set, or a non-root user without a working user "
    "namespace) and no Yama restriction applies, the candidate opens /proc/<caller>/fd/N for writing and "
    "reads /proc/<caller>/mem")


def test_cli_output_cannot_be_forged_when_the_caller_lacks_ptrace_capability() -> None:
    proc = cli(["problems/vector_add", "tests/cheats/forge_parent_pipes.py"], without_ptrace=True)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)  # raises on forged lines printed ahead of the real object
    assert result["passed"] is False, result


def test_result_channel_key_cannot_be_stolen_when_the_caller_lacks_ptrace_capability() -> None:
    proc = cli(["problems/vector_add", "tests/cheats/steal_key_forge_result.py"], without_ptrace=True)
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and result["passed"] is False, result
