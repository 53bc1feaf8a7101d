"""Judging by the batch (kernel_mcp/batch, ``kernel-mcp judge``) and the reward API: the same verdicts as
``check``, every candidate judged once whatever kills happen, nothing a candidate should not see in a reward.
Real check and profile on the CPU; the CLI as a subprocess."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO
from test_cheats import CHEATS, CHEATS_TABLE, VECTOR_ADD

from kernel_mcp.batch.ledger import Judged, Ledger, read_rows
from kernel_mcp.batch.reward import CORRECT, Rewarder, value_of
from kernel_mcp.batch.sources import find_items
from kernel_mcp.batch.summary import fast_p, markdown
from kernel_mcp.errors import UsageError
from kernel_mcp.tools.check import check

SOLUTIONS = VECTOR_ADD / "solutions"
SECRET = "sk-test-secret-kernel-mcp"


def judge_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernel_mcp", "judge", *args, "--device", "cpu"], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


# --- what a batch judges -----------------------------------------------------------------------------------
def _kernelbench_root(tmp_path: Path) -> Path:
    root = tmp_path / "KernelBench"
    for level, names in {1: ["1_Square_matrix_multiplication_.py", "23_Softmax.py"], 2: ["23_Conv3d_GroupNorm_Mean.py"]}.items():
        (root / f"level{level}").mkdir(parents=True)
        for name in names:
            (root / f"level{level}" / name).write_text("# a problem\n")
    return root


def test_candidates_find_their_problems_in_every_generations_layout(tmp_path):
    root = _kernelbench_root(tmp_path)
    runs = tmp_path / "runs"
    (runs / "flat").mkdir(parents=True)
    (runs / "flat" / "level_1_problem_23_sample_0_kernel.py").write_text("")
    (runs / "nested" / "level2" / "23" ).mkdir(parents=True)
    (runs / "nested" / "level2" / "23" / "3.py").write_text("")
    (runs / "nested" / "level_1" / "1_Square_matrix_multiplication_").mkdir(parents=True)
    (runs / "nested" / "level_1" / "1_Square_matrix_multiplication_" / "sample_0.py").write_text("")
    (runs / "nested" / "__pycache__").mkdir()
    (runs / "nested" / "__pycache__" / "x.py").write_text("")  # never a candidate
    (runs / "m.py").write_text("")
    (runs / "manifest.jsonl").write_text(json.dumps({"id": "from-manifest", "level": 1, "problem": "23_Softmax.py",
                                                     "candidate": "m.py"}) + "\n")
    items = find_items(root, [runs / "flat", runs / "nested", runs / "manifest.jsonl"])
    found = {i.id: (i.level, i.problem.name) for i in items}
    assert found == {"level_1_problem_23_sample_0_kernel": (1, "23_Softmax.py"),
                     "level2/23/3": (2, "23_Conv3d_GroupNorm_Mean.py"),
                     "level_1/1_Square_matrix_multiplication_/sample_0": (1, "1_Square_matrix_multiplication_.py"),
                     "from-manifest": (1, "23_Softmax.py")}


def test_a_candidate_whose_problem_cannot_be_told_is_a_usage_error(tmp_path):
    root = _kernelbench_root(tmp_path)
    (tmp_path / "loose.py").write_text("")
    with pytest.raises(UsageError, match="which KernelBench problem"):
        find_items(root, [tmp_path / "loose.py"])
    (tmp_path / "level_3_problem_1_sample_0.py").write_text("")
    with pytest.raises(UsageError, match="no level 3"):
        find_items(root, [tmp_path / "level_3_problem_1_sample_0.py"])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "level_1_problem_1_sample_0.py").write_text("")
    with pytest.raises(UsageError, match="share the id"):
        find_items(root, [tmp_path / "a", tmp_path / "b"])


def test_a_torn_last_row_is_dropped_and_the_next_row_starts_its_own_line(tmp_path):
    row = Judged(id="a", problem="p", candidate="c.py", verdict="pass", passed=True)
    (tmp_path / "results.jsonl").write_text(row.model_dump_json() + "\n" + '{"id": "b", "probl')
    ledger = Ledger(tmp_path)
    assert list(ledger.rows) == ["a"]
    ledger.append(row.model_copy(update={"id": "b"}))
    assert [r.id for r in read_rows(tmp_path / "results.jsonl")] == ["a", "b"]


def test_a_harness_error_is_judged_again_on_the_next_run(tmp_path):
    """Ours, not the candidate's: a row that says "error: harness" does not settle its candidate."""
    from kernel_mcp.batch.judging import judge_batch
    from kernel_mcp.worker import LocalRunner
    items = find_items(VECTOR_ADD, [HONEST[0]])
    Ledger(tmp_path).append(Judged(id=items[0].id, problem="vector_add", candidate=str(HONEST[0]),
                                   verdict="error: harness", error="the judge died"))
    ledger = judge_batch(items, tmp_path, LocalRunner(warm=False), device="cpu", jobs=1, timed=False)
    assert [r.verdict for r in read_rows(ledger.path)] == ["error: harness", "pass"]
    assert ledger.rows[items[0].id].verdict == "pass"


def test_fast_p_credits_only_trusted_speedups_and_counts_every_candidate():
    rows = [Judged(id="1", problem="p", candidate="", verdict="pass", passed=True, trusted=True, speedup=2.5,
                   speedup_compiled=1.2),
            Judged(id="2", problem="p", candidate="", verdict="pass", passed=True, trusted=False, speedup=9.0),
            Judged(id="3", problem="p", candidate="", verdict="fail: mismatch"),
            Judged(id="4", problem="p", candidate="", verdict="pass", passed=True, trusted=True, speedup=0.5)]
    assert fast_p(rows, 0) == 0.75
    assert fast_p(rows, 1.0) == 0.25 and fast_p(rows, 2.0) == 0.25
    assert fast_p(rows, 1.0, compiled=True) == 0.25 and fast_p(rows, 2.0, compiled=True) == 0.0
    assert "| p | 4 | 75% | 25% | 25% | 25% | 25% / 0% | fail: mismatch 1 |" in markdown(rows)


# --- the batch through the command line --------------------------------------------------------------------
VECTOR_ADD_CHEATS = [(name, verdicts) for name, problem, verdicts, _ in CHEATS_TABLE if problem == VECTOR_ADD]
HONEST = [SOLUTIONS / "correct" / "torch_add.py", SOLUTIONS / "correct" / "triton_block256.py"]


def test_every_cheat_fails_through_the_batch_and_honest_kernels_pass(tmp_path):
    """The vector_add cheats of test_cheats.py and two honest kernels in one batch, two at a time: each
    cheat gets a verdict check may give it, each honest kernel passes."""
    files = [str(CHEATS / f"{name}.py") for name, _ in VECTOR_ADD_CHEATS] + [str(p) for p in HONEST]
    done = judge_cli(str(VECTOR_ADD), *files, "--out", str(tmp_path / "out"), "--jobs", "2", "--no-time", "--json",
                     timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["id"]: row for row in json.loads(done.stdout)}
    for name, verdicts in VECTOR_ADD_CHEATS:
        assert rows[name]["passed"] is False and rows[name]["verdict"] in verdicts, rows[name]
    assert all(rows[p.stem]["verdict"] == "pass" for p in HONEST)
    assert (tmp_path / "out" / "index.html").read_text().count("<tr class=") == len(files)


POOLED = """
import sys
from pathlib import Path
from kernel_mcp.batch.judging import judge_batch
from kernel_mcp.batch.sources import find_items
from kernel_mcp.worker.runners.pool import cpu_pool
items = find_items(Path(sys.argv[1]), [Path(f) for f in sys.argv[3:]])
judge_batch(items, Path(sys.argv[2]), cpu_pool(2), device="cpu", jobs=2, timed=False)
"""


def test_a_kernelbench_batch_is_timed_against_eager_and_torch_compile(tmp_path):
    """KernelBench's layout end to end: a root with one level-1 problem, two samples named as its
    generation scripts name them; the one that passes is timed against the Model as written and against
    torch.compile of it (batch/contestants.py) in the same run, and KernelBench's own rule is reported."""
    kernelbench = REPO / "tests" / "fixtures" / "kernelbench"
    (tmp_path / "KB" / "level1").mkdir(parents=True)
    (tmp_path / "KB" / "level1" / "1_linear_gelu.py").write_text((kernelbench / "linear_gelu.py").read_text())
    (tmp_path / "gen").mkdir()
    for sample, fixture in enumerate(("linear_gelu_new.py", "linear_gelu_tanh.py")):
        (tmp_path / "gen" / f"level_1_problem_1_sample_{sample}_kernel.py").write_text((kernelbench / fixture).read_text())
    done = judge_cli(str(tmp_path / "KB"), str(tmp_path / "gen"), "--out", str(tmp_path / "out"), "--jobs", "2",
                     "--budget", "1", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["id"]: row for row in json.loads(done.stdout)}
    honest, tanh = rows["level_1_problem_1_sample_0_kernel"], rows["level_1_problem_1_sample_1_kernel"]
    assert honest["passed"] and honest["kernelbench"] is True and honest["level"] == 1
    assert honest["kernelbench_v01"] is True and tanh["kernelbench_v01"] is not None  # both of its rules
    assert honest["trusted"] and honest["speedup"] > 0 and honest["speedup_compiled"] > 0, honest
    assert tanh["verdict"] == "fail: mismatch" and tanh["speedup"] is None  # a failure is never timed
    assert "| level 1 | 2 | 50% |" in (tmp_path / "out" / "summary.md").read_text()


def test_a_killed_batch_carries_on_and_judges_every_candidate_once(tmp_path):
    """A batch spread over a pool of two CPU workers, SIGKILLed once the first rows are on disk, then carried
    on by the command line on the same folder: the rows written before the kill are kept as they were,
    and each candidate has exactly one row."""
    files = [str(p) for p in HONEST] + [str(CHEATS / f"{n}.py") for n in ("wrong_a_minus_b", "stale_empty",
                                                                           "crash_raise", "partial_zeros",
                                                                           "mutate_zero_input", "partial_empty")]
    out = tmp_path / "out"
    results = out / "results.jsonl"
    first = subprocess.Popen([sys.executable, "-c", POOLED, str(VECTOR_ADD), str(out), *files], cwd=REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and (not results.exists() or len(read_rows(results)) < 2):
        time.sleep(0.1)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    before = read_rows(results)
    assert 2 <= len(before) < len(files)
    again = judge_cli(str(VECTOR_ADD), *files, "--out", str(out), "--jobs", "2", "--no-time", "--json")
    assert again.returncode == 0, again.stderr[-3000:]
    after = read_rows(results)
    assert sorted(r.id for r in after) == sorted(Path(f).stem for f in files)  # once each
    assert after[:len(before)] == before
    assert len(json.loads(again.stdout)) == len(files)  # the summary covers the rows of both processes


# --- the reward API ----------------------------------------------------------------------------------------
def test_the_reward_is_zero_for_failures_and_pays_speed_only_for_a_trusted_lower_bound():
    assert value_of(False, True, [3.0, 4.0]) == {"correct": 0.0, "speed": 0.0}
    assert value_of(True, False, [3.0, 4.0]) == {"correct": CORRECT, "speed": 0.0}  # untrusted timing
    assert value_of(True, True, [0.8, 4.0]) == {"correct": CORRECT, "speed": 0.0}  # a gain inside the noise
    assert value_of(True, True, [2.0, 2.2])["speed"] == pytest.approx(1.0)
    assert value_of(True, True, [1e6, 2e6])["speed"] == 5.0  # capped


def _children() -> set[int]:
    """Live processes descended from this one (from /proc: no library between the test and the answer), but
    the caller's fork server: one per caller process for its lifetime (worker/launch/fork_server.py), which
    dies with the caller (tests/test_caller_death.py)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                if stat[stat.rindex(")") + 2] != "Z":
                    parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return {pid for pid in found if b"fork_server import serve" not in _cmdline(pid)}


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_concurrent_rewards_judge_each_source_alone_leak_no_secret_and_leave_no_process(monkeypatch):
    """Sixteen rollouts at once through one Rewarder: the honest ones pass, every cheat and broken source
    gets 0, the caller's secret (which one rollout prints and raises with) appears in no reward, and once
    the Rewarder is closed no process it started is left."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    honest = (SOLUTIONS / "correct" / "torch_add.py").read_text()
    leaker = ("import torch\nprint('" + SECRET + "')\n\ndef custom_kernel(data):\n"
              "    raise RuntimeError('the key is " + SECRET + "')\n")
    cheats = [(CHEATS / f"{name}.py").read_text() for name in ("stale_empty", "wrong_a_minus_b", "mutate_zero_input")]
    sources = ([honest] * 2 + cheats + [leaker, "this is not python", ""]) * 2
    before = _children()

    async def rollouts():
        async with Rewarder(VECTOR_ADD, device="cpu", timed=False, concurrency=16) as rewarder:
            return await rewarder.many(sources)
    rewards = asyncio.run(rollouts())
    assert [r.passed for r in rewards] == ([True] * 2 + [False] * 6) * 2
    assert [r.value for r in rewards] == ([CORRECT] * 2 + [0.0] * 6) * 2
    assert rewards[2].verdict == "fail: mismatch" and rewards[4].verdict == "fail: mutation"
    assert all(SECRET not in r.model_dump_json() for r in rewards)
    deadline = time.monotonic() + 30
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _children() - before


SELF_CONTAINED = [(name, problem, verdicts) for name, problem, verdicts, _ in CHEATS_TABLE
                  if "from _" not in (CHEATS / f"{name}.py").read_text()]  # a reward gets one file's source


def test_every_cheat_earns_nothing_through_the_reward_api():
    """Each self-contained cheat of test_cheats.py as a rollout's source, per problem in one Rewarder: value
    0 and a verdict check may give it."""
    for problem in sorted({p for _, p, _ in SELF_CONTAINED}):
        mine = [(name, verdicts) for name, p, verdicts in SELF_CONTAINED if p == problem]

        async def rollouts():
            async with Rewarder(problem, device="cpu", timed=False, concurrency=4) as rewarder:
                return await rewarder.many([(CHEATS / f"{name}.py").read_text() for name, _ in mine])
        for (name, verdicts), reward in zip(mine, asyncio.run(rollouts())):
            assert reward.value == 0.0 and reward.verdict in verdicts, (name, reward)


def test_colluding_candidates_gain_nothing(tmp_path):
    """A writer that leaves every input it saw with its answer wherever it can write, judged first, and a
    reader that serves those answers and never computes, judged after it from the same folder, in one
    batch and through one Rewarder: the writer passes, the reader fails both ways, on every case."""
    import shutil
    folder = tmp_path / "pair"
    folder.mkdir()
    for name in ("collude_writer", "collude_reader"):
        shutil.copy(CHEATS / f"{name}.py", folder)
    places = [Path("/dev/shm"), Path("/dev"), Path("/tmp"), Path.home() / ".cache", folder]
    try:
        done = judge_cli(str(VECTOR_ADD), str(folder / "collude_writer.py"), str(folder / "collude_reader.py"),
                         "--out", str(tmp_path / "out"), "--jobs", "1", "--no-time", "--json")
        assert done.returncode == 0, done.stderr[-3000:]
        rows = {row["id"]: row for row in json.loads(done.stdout)}
        assert rows["collude_writer"]["passed"] and not rows["collude_reader"]["passed"], rows

        async def in_turn():
            async with Rewarder(VECTOR_ADD, device="cpu", timed=False, concurrency=1) as rewarder:
                return [await rewarder.one((folder / f"{name}.py").read_text())
                        for name in ("collude_writer", "collude_reader")]
        writer, reader = asyncio.run(in_turn())
        assert writer.passed and not reader.passed and reader.value == 0.0, (writer, reader)
        # not even the listed seeds' cases, whose inputs the writer saw too: its /dev/shm was its check's own
        # (worker/isolation/check_namespaces.py), gone with it; every other place it tried is read-only
        alone = check(VECTOR_ADD, folder / "collude_reader.py", device="cpu")
        assert not any(case.passed for case in alone.cases), [(c.name, c.passed) for c in alone.cases]
        assert not (Path("/dev/shm") / "kernel_mcp_collusion").exists()
    finally:
        for place in places:
            shutil.rmtree(place / "kernel_mcp_collusion", ignore_errors=True)


def test_a_candidate_sees_no_other_candidates_scratch_or_temporary_folder():
    """Another candidate's scratch and temporary folders, planted beside where this check's host gets its own
    (a live oracle wrote its answers into its scratch and read requests from the others', through the batch
    and the reward API: a review, twenty-fourth session): covered in the host's mount namespace, so the probe
    sees only its own and passes. With namespaces off (KERNEL_MCP_PID_NAMESPACE=0) it sees them and fails."""
    from kernel_mcp.worker.isolation import folders
    planted = [folders.scratch_root() / "kmcp-candidate-planted", folders.host_tmp_root() / "kmcp-tmp-planted"]
    for folder in planted:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "kmcpreq_note.pt").write_bytes(b"a request")
    try:
        result = check(VECTOR_ADD, CHEATS / "peek_other_folders.py", device="cpu")
        assert result.passed, (result.verdict, result.findings)
    finally:
        for folder in planted:
            shutil.rmtree(folder, ignore_errors=True)


def _keyring_works() -> bool:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    key = libc.syscall(248, b"user", b"kmcp-probe", b"x", ctypes.c_size_t(1), ctypes.c_int(-2))  # this process's
    return key > 0


@pytest.mark.skipif(not _keyring_works(), reason="this machine's kernel (or container) offers no keyring")
def test_the_keyring_passes_no_notes_between_candidates(tmp_path):
    """A writer that leaves each answer in the per-user keyring, and a reader judged after it in the same batch
    (served the same secret inputs) that serves them: the keyring belongs to the user namespace, which a root
    candidate shares with every check, and outlives its process. Hosts' keyring calls are refused (seccomp)."""
    from kernel_mcp.worker.isolation import syscalls
    assert sandbox_denies_keyring(syscalls)
    # not even the listed seeds' small cases, whose answers the writer computed (an open keyring serves them)
    _writer_then_reader(tmp_path, {"keyring_writer": "keyring_writer", "keyring_reader": "keyring_reader"})


def test_byte_identical_twins_keep_their_builds_apart(tmp_path):
    """The same bytes under two names in one folder: what the writer leaves in its build caches is kept for the
    next check of *it*, not of its twin (kernel_cache.key_for), so the reader, judged after it in the same batch
    on the same inputs, finds nothing, not even for the listed seeds."""
    _writer_then_reader(tmp_path, {"twin_writer": "twin_cache_note", "twin_reader": "twin_cache_note"})


def _writer_then_reader(tmp_path, sources: dict[str, str]) -> None:
    """A writer and a reader (names -> the cheat each is a copy of) in one folder, judged in one batch in that
    order on the same inputs: the writer passes, the reader fails; then the reader checked alone passes no
    case, the listed seeds' included, whose answers the writer computed."""
    folder = tmp_path / "pair"
    folder.mkdir()
    for name, cheat in sources.items():
        shutil.copy(CHEATS / f"{cheat}.py", folder / f"{name}.py")
    writer, reader = sources
    done = judge_cli(str(VECTOR_ADD), str(folder / f"{writer}.py"), str(folder / f"{reader}.py"),
                     "--out", str(tmp_path / "out"), "--jobs", "1", "--no-time", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["id"]: row for row in json.loads(done.stdout)}
    assert rows[writer]["passed"] and not rows[reader]["passed"], rows
    alone = check(VECTOR_ADD, folder / f"{reader}.py", device="cpu")
    assert not any(case.passed for case in alone.cases), [(c.name, c.passed) for c in alone.cases]


def sandbox_denies_keyring(syscalls) -> bool:
    """In a throwaway child: the filter taken, ``add_key`` then refused with EPERM, ``getpid`` still fine."""
    import ctypes
    from kernel_mcp.worker.isolation import sandbox

    def attempt() -> bool:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        if not syscalls.deny_keyring():
            return False
        refused = libc.syscall(248, b"user", b"kmcp-probe", b"x", ctypes.c_size_t(1), ctypes.c_int(-2)) == -1
        return refused and ctypes.get_errno() == 1 and os.getpid() > 0
    return sandbox.true_in_a_child(attempt)


def test_a_candidate_reaches_no_socket_outside_its_check(monkeypatch):
    """A live channel between candidates judged at the same moment: the candidate calls a loopback port and
    an abstract Unix socket this test listens on. Its check has a network namespace of its own, so it passes
    (it is honest) and nothing arrives. Without one, both calls arrive (the candidate's check on the
    machine's network, 2026-12-05)."""
    import socket
    tcp = socket.create_server(("127.0.0.1", 0))
    port = tcp.getsockname()[1]
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(f"\0kernel_mcp_phone_{port}")
    unix.listen()
    monkeypatch.setenv("KERNEL_MCP_TEST_PHONE", str(port))
    try:
        result = check(VECTOR_ADD, CHEATS / "phone_home.py", device="cpu")
        assert result.passed, (result.verdict, result.findings)
        for listener in (tcp, unix):
            listener.setblocking(False)
            with pytest.raises(BlockingIOError):
                listener.accept()
    finally:
        tcp.close()
        unix.close()


def test_a_timed_reward_pays_for_speed_only_what_its_interval_vouches_for():
    """The timed path: an honest kernel profiled against the reference (test shapes on a CPU); its speed
    term is log2 of the interval's lower end, clipped at 0, exactly as value_of says."""
    honest = (SOLUTIONS / "correct" / "triton_block256.py").read_text()

    async def rollout():
        async with Rewarder(VECTOR_ADD, device="cpu", timed=True, budget_s=1.0, concurrency=1) as rewarder:
            return await rewarder.one(honest)
    reward = asyncio.run(rollout())
    assert reward.passed and reward.trusted is not None and reward.speedup_ci and reward.seconds > 0
    assert reward.terms == value_of(True, reward.trusted, reward.speedup_ci)
    assert reward.value == pytest.approx(sum(reward.terms.values())) and reward.value >= CORRECT


def test_a_checks_phases_are_read_from_its_progress_messages():
    """The clock a batch row's phases come from: a wait for the device (worker/lease.py's messages) ends at the
    next message; the import and the first case are marked once each, in order."""
    from kernel_mcp.batch.judging import PhaseClock
    clock = PhaseClock()
    clock("booting the judge")
    assert clock.marks == {}
    clock("waiting for NVIDIA H100 (other runs are on it)")
    clock("waiting for NVIDIA H100 (other runs are on it): 10 s so far")
    clock("the reference measured: 1.0 s")
    clock("importing the candidate")
    clock("test 0", 0, 3)
    clock("test 1", 1, 3)
    assert list(clock.marks) == ["admitted_at", "measured_at", "import_at", "cases_at"]
    assert clock.marks["admitted_at"] <= clock.marks["measured_at"] <= clock.marks["import_at"] <= clock.marks["cases_at"]
    unwaited = PhaseClock()
    unwaited("importing the candidate")
    assert "admitted_at" not in unwaited.marks
