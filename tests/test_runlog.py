"""The run folder of the headless loop (kernel_mcp/agent): an fsynced journal that survives kill -9 at any
instant, state derived from it alone, one driving process at a time, and an evaluation cache that keeps
a resumed run from evaluating anything twice."""
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from conftest import REPO, repo_pythonpath

from kernel_mcp.agent.run.folder import RunBusy, RunConfig, RunFolder, candidate_hash
from kernel_mcp.agent.run.journal import CorruptJournal, RunLog, read
from kernel_mcp.agent.run.state import derive

LOOP = REPO / "tests" / "fakes" / "journal_loop.py"
CONFIG = RunConfig(problem="p", problem_hash="0", agent="scripted")


def test_records_come_back_in_order_with_their_fields(tmp_path):
    with RunLog(tmp_path / "journal.jsonl") as log:
        log.append("run_started")
        log.append("turn", usage={"input": 5}, cost_usd=0.5)
    records = read(tmp_path / "journal.jsonl")
    assert [(r.seq, r.kind) for r in records] == [(0, "run_started"), (1, "turn")]
    assert records[1].usage == {"input": 5} and records[1].cost_usd == 0.5 and records[1].kind == "turn"


def test_a_record_cut_short_by_a_crash_is_dropped_and_appends_start_clean(tmp_path):
    path = tmp_path / "journal.jsonl"
    with RunLog(path) as log:
        log.append("run_started")
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"seq": 1, "at": 1.0, "kind": "tu')  # the crash's half line
    with RunLog(path) as log:
        assert len(log.records) == 1
        log.append("turn", cost_usd=0.1)
    assert [r.kind for r in read(path)] == ["run_started", "turn"]
    path.write_bytes(path.read_bytes() + b'{"seq": 2, "at"\n')  # whole line, holes inside (power loss)
    assert len(read(path)) == 2


def test_a_damaged_line_before_the_last_is_refused(tmp_path):
    path = tmp_path / "journal.jsonl"
    with RunLog(path) as log:
        for _ in range(3):
            log.append("turn", cost_usd=0.0)
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([lines[0], b"garbage", *lines[2:]]))
    with pytest.raises(CorruptJournal, match="line 2"):
        read(path)
    path.write_bytes(b"\n".join([lines[0], *lines[2:]]))  # a record lost from the middle
    with pytest.raises(CorruptJournal, match="seq"):
        read(path)


def test_spend_counts_priced_turns_and_unpriced_ones_are_never_zero_dollars(tmp_path):
    with RunLog(tmp_path / "j") as log:
        log.append("turn", usage={"input": 100, "output": 10, "cache_read": 50}, cost_usd=0.25)
        log.append("turn", usage={"input": 7, "reasoning": 3}, cost_usd=None)
        state = derive(log.records)
    assert state.spend_usd == 0.25 and state.unpriced_turns == 1 and state.turns == 2
    assert state.tokens == {"input": 107, "output": 10, "cache_read": 50, "cache_write": 0, "reasoning": 3}


def test_a_run_folder_is_created_once_and_driven_by_one_process(tmp_path):
    run = tmp_path / "run"
    with RunFolder.create(run, CONFIG) as folder:
        assert folder.state.turns == 0 and (run / "state.json").exists()
        with pytest.raises(FileExistsError, match="resume"):
            RunFolder.create(run, CONFIG)
        other = subprocess.run([sys.executable, "-c", "import sys; from kernel_mcp.agent.run.folder import RunFolder\n"
                                f"RunFolder.resume({str(run)!r})"], capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": repo_pythonpath()})
        assert other.returncode != 0 and "RunBusy" in other.stderr and "heartbeat" in other.stderr, other.stderr
        with pytest.raises(RunBusy):  # another open in this process is refused too (flock per open file)
            RunFolder.resume(run)
    with RunFolder.resume(run) as folder:  # once closed, it is free
        assert folder.config == CONFIG and folder.state.resumptions == 1
    with pytest.raises(FileNotFoundError, match="no run"):
        RunFolder.resume(tmp_path / "elsewhere")


def test_a_result_cut_short_in_the_cache_is_evaluated_again(tmp_path):
    with RunFolder.create(tmp_path / "run", CONFIG) as folder:
        key = candidate_hash(b"kernel")
        assert folder.cached(key) is None
        folder.cache(key, {"verdict": "pass"})
        assert folder.cached(key) == {"verdict": "pass"}
        (tmp_path / "run" / "cache" / f"{key}.json").write_text('{"verdict": "pa')
        assert folder.cached(key) is None


def _wait_for(ready, limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while not ready() and time.monotonic() < deadline:
        time.sleep(0.01)


def _loop(run, n, work):
    return subprocess.Popen([sys.executable, str(LOOP), str(run), str(n), str(work)],
                            env={**os.environ, "PYTHONPATH": repo_pythonpath()},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.long
def test_twenty_kill_9s_at_random_instants_lose_nothing_and_evaluate_nothing_twice(tmp_path):
    """The scripted loop (tests/fakes/journal_loop.py) killed 20 times at random instants, resumed after
    each: the finished run evaluated exactly the baseline and every candidate, an evaluation ran twice
    only when a kill cut it between its work and its cached result (at most once per kill), the baseline
    was added once, and the spend is every turn ever made, the killed processes' included."""
    run, work, n, kills = tmp_path / "run", tmp_path / "work.log", 1000, 0
    rng = random.Random(20261201)
    while kills < 20:
        proc = _loop(run, n, work)
        if kills % 4 == 0:  # now and then at any instant, start-up included (~0.3 s idle, seconds when loaded)
            time.sleep(rng.uniform(0.05, 1.0))
        else:  # else once the run is under way: a loaded machine's start-up alone outlasted every kill once
            _wait_for(lambda: (run / "journal.jsonl").exists() or proc.poll() is not None, 60)
            time.sleep(rng.uniform(0.0, 0.5))
        if proc.poll() is not None:
            break  # it finished before this kill
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
    final = _loop(run, n, work)
    _, err = final.communicate(timeout=120)
    assert final.returncode == 0, err.decode()[-2000:]
    assert kills >= 10, "the loop finished too early to be killed often: raise n"

    records = read(run / "journal.jsonl")
    state = derive(records)
    expected = {candidate_hash(b"baseline")} | {candidate_hash(f"candidate {i}".encode()) for i in range(n)}
    assert state.finished and not state.pending and set(state.evaluated) == expected
    performed = work.read_text().split()
    assert set(performed) == expected
    assert sum(c - 1 for c in Counter(performed).values()) <= kills
    assert sum(1 for r in records if r.kind == "done" and r.fields().get("role") == "baseline") == 1
    turns = [r for r in records if r.kind == "turn"]
    assert len(turns) >= n and state.spend_usd == pytest.approx(0.01 * len(turns))
    assert state.resumptions >= 1
    assert json.loads((run / "state.json").read_text())["spend_usd"] == pytest.approx(state.spend_usd)


def test_a_resume_killed_before_its_resumed_record_does_not_charge_the_time_the_run_lay_dead(tmp_path):
    """A resuming process killed after it opened the run folder but before its 'resumed' record was durable
    (here it dies inside that record's append, the window held open) leaves no heartbeat of its own: the
    next resume takes the heartbeat for the dead process's last sign of life, and one written by the process
    that died at once charged the whole time the run lay dead to the budget (it started the heartbeat first)."""
    run = tmp_path / "run"
    with RunFolder.create(run, CONFIG) as folder:
        folder.record("intent", candidate_hash="a", role="baseline", island="0")
    time.sleep(1.5)  # the run lies dead
    script = ("import os, time\n"
              "from kernel_mcp.agent.run.journal import RunLog\n"
              "from kernel_mcp.agent.run.folder import RunFolder\n"
              "append = RunLog.append\n"
              "def dying(self, kind, **fields):\n"
              "    if kind == 'resumed':\n"
              "        time.sleep(0.5)  # a kill -9 before the record is durable\n"
              "        os._exit(9)\n"
              "    return append(self, kind, **fields)\n"
              "RunLog.append = dying\n"
              f"RunFolder.resume({str(run)!r})\n")
    died = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": repo_pythonpath()},
                          capture_output=True, text=True, timeout=120)
    assert died.returncode == 9, died.stderr[-2000:]
    with RunFolder.resume(run) as folder:
        assert folder.state.resumptions == 1 and folder.state.active_s < 1.0, folder.state.active_s
