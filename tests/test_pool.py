"""The pool (kernel_mcp/worker/runners/pool.py) with CPU workers: real judges, real candidates, real kills. Islands
are threads submitting their evaluations one after another, as the orchestrator's islands do."""
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from conftest import PROBLEMS

from kernel_mcp.errors import UsageError
from kernel_mcp.tools.check import check
from kernel_mcp.tools.profile import profile
from kernel_mcp.worker.protocol import ProfileSettings
from kernel_mcp.worker.runners.pool import RETRIED, PoolRunner, cpu_pool, parse_gpus, pin_for

VECTOR_ADD = PROBLEMS / "vector_add"
BASELINE = (VECTOR_ADD / "baseline.py").read_text()
WRONG = BASELINE.replace("a + b, mask=mask", "a - b, mask=mask")
# every call sleeps: a check (5 tests, each also on a secret seed) then lasts seconds, long enough to kill
SLOW = BASELINE.replace("    a, b = data\n", "    import time\n    time.sleep(0.4)\n    a, b = data\n")


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))


def _write(folder, name, source):
    path = folder / name
    path.write_text(source)
    return path


@pytest.mark.long
def test_islands_on_a_pool_get_each_result_once_for_their_own_candidate_in_their_order(tmp_path, private_cache):
    """Three islands, two workers: nine checks, a pass or a fail each as its candidate deserves, returned to
    the island that asked, in the order it asked; both workers served; nothing lost, nothing twice."""
    plans = {"0": [BASELINE, WRONG, BASELINE], "1": [WRONG, BASELINE, BASELINE], "2": [BASELINE, BASELINE, WRONG]}
    results: dict[str, list] = {island: [] for island in plans}
    pool = cpu_pool(2)
    try:
        def island(name: str) -> None:
            for k, source in enumerate(plans[name]):
                candidate = _write(tmp_path, f"island{name}_{k}.py", source)
                results[name].append((candidate, check(VECTOR_ADD, candidate, device="cpu", runner=pool)))

        threads = [threading.Thread(target=island, args=(name,)) for name in plans]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        served = {w.label: w.served for w in pool.workers}
        faults = {w.label: w.faults for w in pool.workers}
    finally:
        pool.close()
    for name, plan in plans.items():
        got = results[name]
        assert [str(c.name) for c, _ in got] == [f"island{name}_{k}.py" for k in range(3)], "out of order or lost"
        assert [r.candidate for _, r in got] == [str(c.resolve()) for c, _ in got], "a result of another island's"
        assert [r.passed for _, r in got] == [s == BASELINE for s in plan], [r.verdict for _, r in got]
    assert sum(served.values()) == 9 and all(served.values()), served  # each evaluation once; both workers used
    assert not any(faults.values()), faults


@pytest.mark.long
def test_a_worker_whose_judge_dies_is_recycled_and_its_check_runs_again_on_another(tmp_path, private_cache):
    """Worker 0's judge is killed mid-check: that check comes back once, passed, from worker 1 (saying so);
    worker 0 gets fresh processes; a check running on worker 1 meanwhile is untouched."""
    slow = _write(tmp_path, "slow.py", SLOW)
    pool = cpu_pool(2)
    try:
        first = pool.workers[0]
        deadline = time.monotonic() + 120
        while "judge cpu" not in first.runner.warm_processes() and time.monotonic() < deadline:
            time.sleep(0.2)  # its spare: the judge the next request on worker 0 gets (oldest first)
        victim = first.runner.warm_processes()["judge cpu"]
        old_runner = first.runner
        running = threading.Event()
        outcome = {}

        def killed_one():
            outcome["killed"] = check(VECTOR_ADD, slow, device="cpu", runner=pool,
                                      on_progress=lambda message, *_: running.set() if "test" in message else None)

        thread = threading.Thread(target=killed_one)
        thread.start()
        assert running.wait(120), "the slow check never started"
        assert first.busy and not pool.workers[1].busy  # the first request went to the first free worker
        beside = threading.Thread(target=lambda: outcome.setdefault("beside", check(VECTOR_ADD, slow, device="cpu",
                                                                                    runner=pool)))
        beside.start()
        time.sleep(0.5)
        os.kill(victim, signal.SIGKILL)
        thread.join(timeout=300)
        beside.join(timeout=300)
        killed, untouched = outcome["killed"], outcome["beside"]
        assert killed.passed, (killed.verdict, killed.findings)
        retried = [f for f in killed.findings if f.code == RETRIED]
        assert len(retried) == 1 and "cpu 0" in retried[0].message and "cpu 1" in retried[0].message
        assert retried[0].severity == "info"
        assert untouched.passed and not any(f.code == RETRIED for f in untouched.findings)
        assert first.faults == 1 and pool.workers[1].faults == 0
        assert first.runner is not old_runner and old_runner._closed
        assert pool.workers[1].served == 2 and first.served == 0
        deadline = time.monotonic() + 120
        while "judge cpu" not in first.runner.warm_processes() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert first.runner.warm_processes()["judge cpu"] != victim  # booted afresh
        assert check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu", runner=pool).passed  # it serves again
    finally:
        pool.close()


@pytest.mark.long
def test_a_profile_and_its_counters_follow_one_worker(tmp_path, private_cache):
    """A profile through the pool is a ProfileResult as from a LocalRunner; the device its thread's judge
    ran on is the pool's answer to resolved() (profile's counters go to that worker)."""
    pool = cpu_pool(2, warm=False)
    try:
        result = profile(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu", runner=pool,
                         settings=ProfileSettings(budget_s=1.0, shapes="tests"))
        assert result.passed and result.shapes, (result.verdict, result.findings)
        assert pool.resolved("cpu").kind == "cpu"
        assert sum(w.served for w in pool.workers) == 1
    finally:
        pool.close()


def test_bad_gpu_lists_and_devices_the_pool_cannot_serve_are_usage_errors(monkeypatch):
    assert parse_gpus("all", 4) == [0, 1, 2, 3] and parse_gpus(" 0, 3 ", 4) == [0, 3]
    for text, count, said in (("0,0", 2, "each GPU once"), ("2", 2, "no GPU 2"), ("one", 2, "indices"),
                              ("", 2, "indices"), ("0", 0, "no GPU is visible")):
        with pytest.raises(UsageError, match=said):
            parse_gpus(text, count)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert pin_for(2, "nvidia") == {"CUDA_VISIBLE_DEVICES": "2"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,7")  # this process sees two GPUs: its 1 is the machine's 7
    assert pin_for(1, "nvidia") == {"CUDA_VISIBLE_DEVICES": "7"}
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1,2")
    assert pin_for(0, "amd") == {"HIP_VISIBLE_DEVICES": "1"}
    pool = PoolRunner([("cpu 0", "cpu", None, {})], warm=False)  # nothing booted: no process starts
    try:
        for device, said in (("cuda:1", "this pool has cpu 0"), ("cuda", "CPU workers only")):
            with pytest.raises(UsageError, match=said):
                check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device=device, runner=pool)
        assert pool.parallel == 1 and pool.local_gpu() is None
    finally:
        pool.close()
    with pytest.raises(UsageError):
        cpu_pool(0)


@pytest.mark.long
def test_two_mcp_clients_check_at_once_on_two_workers(tmp_path, private_cache):
    """Two MCP client sessions with one server (as over HTTP), each asking for a slow check at the same
    time: the pool serves them side by side, one per worker, and each gets its own result."""
    import asyncio
    import shutil

    from mcp import Client

    from kernel_mcp.server import build_server
    shutil.copytree(VECTOR_ADD, tmp_path / "vector_add")
    _write(tmp_path, "slow_a.py", SLOW)
    _write(tmp_path, "slow_b.py", WRONG.replace("    a, b = data\n", "    import time\n    time.sleep(0.4)\n"
                                                                     "    a, b = data\n"))
    pool = cpu_pool(2)
    server = build_server(tmp_path, pool)

    async def one(name):
        async with Client(server) as client:
            return await client.call_tool("check", {"problem": "vector_add", "candidate": name, "device": "cpu"})

    async def both():
        return await asyncio.gather(one("slow_a.py"), one("slow_b.py"))
    try:
        started = time.monotonic()
        a, b = asyncio.run(both())
        took = time.monotonic() - started
        served = [w.served for w in pool.workers]
    finally:
        pool.close()
    assert a.structured_content["passed"] is True and b.structured_content["passed"] is False
    assert a.structured_content["candidate"].endswith("slow_a.py")
    assert b.structured_content["candidate"].endswith("slow_b.py")
    assert served == [1, 1], (served, took)


def test_serve_and_optimize_refuse_gpus_they_cannot_have_before_any_work(tmp_path):
    """Exit 2 with the reason; optimize leaves no run folder behind."""
    import subprocess
    import sys
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no GPU visible, whatever the machine has
    for args, said in ((["serve", "--gpus", "0"], "no GPU is visible"),
                       (["serve", "--gpus", "0", "--cluster", "auto"], "one or the other"),
                       (["optimize", str(VECTOR_ADD), "--gpus", "all", "--run", str(tmp_path / "run")],
                        "no GPU is visible")):
        done = subprocess.run([sys.executable, "-m", "kernel_mcp", *args], capture_output=True, text=True,
                              timeout=120, env=env, cwd=tmp_path)
        assert done.returncode == 2 and said in done.stderr, (args, done.returncode, done.stderr[-2000:])
    assert not (tmp_path / "run").exists()


@pytest.mark.gpu
def test_a_gpu_worker_sees_only_its_gpu_and_times_there(tmp_path, private_cache):
    """A worker per GPU (all of them): each judge is pinned (CUDA_VISIBLE_DEVICES) and reports its GPU as
    cuda:0 with that GPU's UUID; a check and a profile pass; recording for compile runs pinned too."""
    import torch

    from kernel_mcp.tools.compile import compile as compile_candidate
    from kernel_mcp.worker.runners.pool import gpu_pool
    pool = gpu_pool("all")
    try:
        assert len(pool.workers) == torch.cuda.device_count()
        for worker in pool.workers:
            assert pin_for(worker.index, "amd" if torch.version.hip else "nvidia").items() <= worker.pin.items()
            assert check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device=f"cuda:{worker.index}", runner=pool).passed
            seen = pool.resolved("auto")
            assert seen.index == 0 and seen.uuid == str(torch.cuda.get_device_properties(worker.index).uuid)
        timed = profile(VECTOR_ADD, VECTOR_ADD / "baseline.py", runner=pool, settings=ProfileSettings(budget_s=1.0))
        assert timed.passed and timed.trusted and timed.shapes, (timed.verdict, timed.findings)
        built = compile_candidate(VECTOR_ADD / "baseline.py", problem=VECTOR_ADD, runner=pool)
        assert built.ok, built.findings
    finally:
        pool.close()


def test_each_worker_runs_its_candidates_with_its_share_of_the_cores(tmp_path, private_cache, monkeypatch):
    """The thread share reaches the candidate's process (forked from copies that loaded torch before
    the share was in their environment): on a 2-core machine, 2 workers run 1 thread each."""
    import shutil
    import uuid
    # shared memory: where a sandboxed candidate may write outside its scratch (conftest.CHEATS_STATE)
    state = Path("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp") / f"kmcp-threads-{uuid.uuid4().hex}"
    state.mkdir()
    monkeypatch.setenv("KERNEL_MCP_TEST_STATE_DIR", str(state))
    reporter = BASELINE.replace("def custom_kernel(data):\n", "def custom_kernel(data):\n"
                                "    import os\n    from pathlib import Path\n"
                                "    Path(os.environ['KERNEL_MCP_TEST_STATE_DIR'], str(os.getpid())).write_text("
                                "str(torch.get_num_threads()))\n")
    candidate = _write(tmp_path, "reporter.py", reporter)
    pool = cpu_pool(2)
    try:
        share = pool.workers[0].pin["OMP_NUM_THREADS"]
        result = check(VECTOR_ADD, candidate, device="cpu", runner=pool)
        seen = {p.read_text() for p in state.iterdir()}
    finally:
        pool.close()
        shutil.rmtree(state, ignore_errors=True)
    assert result.passed, (result.verdict, result.findings)
    assert share == str(max(1, (os.cpu_count() or 1) // 2)) and seen == {share}, (share, seen)


def test_the_queue_serves_first_come_first_and_never_leaves_a_free_worker_idle():
    """The queue alone (no process starts): requests get a worker in the order they came, and when two
    workers free at once, both waiting requests get one at once (not after the queue's 30 s re-check)."""
    pool = PoolRunner([("cpu 0", "cpu", None, {}), ("cpu 1", "cpu", None, {})], warm=False)
    say = lambda *_: None  # noqa: E731
    try:
        for worker in pool.workers:
            worker.busy = True
        order: list[str] = []

        def waiter(name: str) -> None:
            worker = pool._acquire(lambda w: w.label == "cpu 0", say)
            order.append(name)
            pool._release(worker)

        threads = []
        for name in ("first", "second", "third"):
            threads.append(threading.Thread(target=waiter, args=(name,)))
            threads[-1].start()
            while len(pool._queue) < len(threads):
                time.sleep(0.01)
        pool._release(pool.workers[0])
        for thread in threads:
            thread.join(timeout=5)
        assert order == ["first", "second", "third"]
        for _ in range(20):  # two freed at once: whichever waiter wakes first, both are served at once
            pool.workers[0].busy = pool.workers[1].busy = True
            got: list = []
            pair = [threading.Thread(target=lambda: got.append(pool._acquire(lambda w: True, say))) for _ in range(2)]
            for thread in pair:
                thread.start()
            while len(pool._queue) < 2:
                time.sleep(0.01)
            with pool._cond:
                pool.workers[0].busy = pool.workers[1].busy = False
                pool._cond.notify_all()
            started = time.monotonic()
            for thread in pair:
                thread.join(timeout=10)
            assert len(got) == 2 and time.monotonic() - started < 5, "a request waited beside a free worker"
    finally:
        pool.close()
