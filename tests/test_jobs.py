"""kernel_mcp/server/jobs.py with real threads: a job reports progress while it runs, ends done or failed, is
waited on for at most the time asked, is kept for a while after it ends, and is refused when too many run."""
import threading
import time

import pytest
from pydantic import BaseModel

from kernel_mcp.errors import UsageError
from kernel_mcp.server.jobs import JobBoard


class Answer(BaseModel):
    verdict: str
    speedup: float | None = None


def gated(release: threading.Event, answer=None):
    """Work that reports one step, then blocks until the test releases it."""
    def work(progress):
        progress("timing shape 1/2", 1, 2)
        release.wait(30)
        return answer or Answer(verdict="pass", speedup=1.5)
    return work


def answering(result: dict):
    """Work that answers at once."""
    return lambda progress: result


def until_progress(board, job_id, timeout=10.0):
    deadline = time.monotonic() + timeout
    while (job := board.get(job_id)).progress.done == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    return job


def test_a_job_reports_progress_then_its_result():
    board, release = JobBoard(), threading.Event()
    started = board.start("evaluate", gated(release))
    assert started.state == "running" and started.tool == "evaluate" and started.result is None
    running = until_progress(board, started.id)
    assert running.state == "running"
    assert (running.progress.message, running.progress.done, running.progress.total) == ("timing shape 1/2", 1, 2)
    release.set()
    done = board.wait(started.id, 10)
    assert done.state == "done" and done.error is None
    assert done.result == {"verdict": "pass", "speedup": 1.5}  # the summary as the one-call tool gives it


def test_wait_returns_after_wait_s_while_the_job_runs_and_at_once_when_it_ends():
    board, release = JobBoard(), threading.Event()
    job = board.start("profile", gated(release))
    began = time.monotonic()
    still = board.wait(job.id, 0.3)
    waited = time.monotonic() - began
    assert still.state == "running" and 0.25 <= waited < 2.0
    threading.Timer(0.2, release.set).start()
    began = time.monotonic()
    ended = board.wait(job.id, 20)
    assert ended.state == "done" and time.monotonic() - began < 5.0  # not the 20 s asked for


def test_elapsed_time_grows_while_running_and_stops_at_the_end():
    board, release = JobBoard(), threading.Event()
    job = board.start("roofline", gated(release))
    first = board.wait(job.id, 0.2).elapsed_s
    second = board.wait(job.id, 0.2).elapsed_s
    assert 0.15 <= first < second
    release.set()
    final = board.wait(job.id, 10).elapsed_s
    time.sleep(0.2)
    assert board.get(job.id).elapsed_s == final


def test_misuse_found_while_working_is_the_error_and_a_crash_names_its_type():
    def misuse(progress):
        raise UsageError("problems/nowhere is not a problem folder (no task.yml)")

    def crash(progress):
        return {"ratio": 1 / 0}

    board = JobBoard()
    refused = board.wait(board.start("evaluate", misuse).id, 10)
    broke = board.wait(board.start("evaluate", crash).id, 10)
    assert refused.state == "failed" and refused.error == "problems/nowhere is not a problem folder (no task.yml)"
    assert broke.state == "failed" and broke.error == "ZeroDivisionError: division by zero"
    assert refused.result is None and broke.result is None


def test_an_unknown_id_is_a_clear_error():
    with pytest.raises(UsageError, match="no job 'abc123' on this server"):
        JobBoard().get("abc123")
    with pytest.raises(UsageError, match="no job"):
        JobBoard().wait("abc123", 0)


def test_finished_jobs_are_kept_up_to_a_count_and_running_ones_always():
    board, release = JobBoard(keep=2), threading.Event()
    running = board.start("evaluate", gated(release))
    finished = [board.wait(board.start("profile", answering({"n": n})).id, 10) for n in range(3)]
    assert [board.get(job.id).result for job in finished[1:]] == [{"n": 1}, {"n": 2}]
    with pytest.raises(UsageError, match="the last 2 finished jobs are kept"):
        board.get(finished[0].id)
    assert board.get(running.id).state == "running"  # never forgotten while it runs
    release.set()


def test_finished_jobs_are_forgotten_after_keep_s():
    board = JobBoard(keep_s=0.2)
    job = board.wait(board.start("profile", answering({})).id, 10)
    assert board.get(job.id).state == "done"
    time.sleep(0.3)
    with pytest.raises(UsageError, match="no job"):
        board.get(job.id)


def test_too_many_running_jobs_are_refused_until_one_ends():
    board, release = JobBoard(max_running=2), threading.Event()
    jobs = [board.start("evaluate", gated(release)) for _ in range(2)]
    with pytest.raises(UsageError, match="2 jobs are already running"):
        board.start("evaluate", gated(release))
    release.set()
    for job in jobs:
        board.wait(job.id, 10)
    assert board.wait(board.start("evaluate", answering({})).id, 10).state == "done"


def test_jobs_started_from_many_threads_all_run_once_with_their_own_ids():
    board = JobBoard(max_running=64)
    ids, lock = [], threading.Lock()

    def starter(n):
        for k in range(4):
            job = board.start("profile", answering({"value": [n, k]}))
            with lock:
                ids.append((job.id, [n, k]))

    threads = [threading.Thread(target=starter, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({job_id for job_id, _ in ids}) == 32
    for job_id, value in ids:
        assert board.wait(job_id, 10).result == {"value": value}
