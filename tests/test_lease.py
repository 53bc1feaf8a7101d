"""The per-device lease (worker/lease.py) between real processes: timing alone, checks side by side while
their memory fits, fairness, crash safety; and the CLI queueing behind it."""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import PROBLEMS, REPO, repo_pythonpath

from kernel_mcp.worker import lease, needs
from kernel_mcp.worker.protocol import Device

GIB = 1 << 30
FAKE_GPU = Device(kind="cuda", index=0, vendor="nvidia", name="test GPU", uuid="GPU-test-lease",
                  total_memory_bytes=10 * GIB)  # the lease is files: no GPU is needed to test it

HOLDER = textwrap.dedent('''
    import json, os, sys, time
    from kernel_mcp.worker import lease
    from kernel_mcp.worker.protocol import Device
    device = Device.model_validate_json(sys.argv[1])
    exclusive, need, hold_s, log = sys.argv[2] == "x", int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    waited, resized = [], None
    resize, until, resize_after = int(sys.argv[7]), sys.argv[8], sys.argv[9]
    def wait_said(message):
        waited.append(message)
        open(f"{log}.{sys.argv[6]}.waiting", "w").close()  # a test may wait for this
    def wait_for(path, start):  # the test's signal: process starts are slow on a loaded machine
        while path and not os.path.exists(path) and time.time() - start < 60:
            time.sleep(0.02)
    with lease.hold(device, exclusive, need, on_wait=wait_said) as reservation:
        start = time.time()
        open(f"{log}.{sys.argv[6]}.holding", "w").close()
        if resize:  # as a judge does once it has measured its problem
            wait_for(resize_after, start)
            reservation.resize(resize)
            resized = time.time()
        wait_for(until, start)
        time.sleep(hold_s)
        end = time.time()
    with open(log, "a") as f:
        f.write(json.dumps({"name": sys.argv[6], "start": start, "end": end, "waited": waited,
                            "resized": resized, "crowded": reservation.crowded}) + "\\n")
''')


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def holder(name: str, log: Path, exclusive: bool, hold_s: float, need: int = 0, device: Device = FAKE_GPU,
           resize: int = 0, until: Path | None = None, resize_after: Path | None = None) -> subprocess.Popen:
    """A process holding the lease for ``hold_s`` once admitted (after ``until`` exists, if given), resizing its
    reservation to ``resize`` bytes (once ``resize_after`` exists, if given)."""
    env = {**os.environ, "PYTHONPATH": repo_pythonpath()}
    return subprocess.Popen([sys.executable, "-c", HOLDER, device.model_dump_json(), "x" if exclusive else "s",
                             str(need), str(hold_s), str(log), name, str(resize), str(until or ""),
                             str(resize_after or "")], env=env)


def marker(log: Path, name: str, state: str) -> Path:
    """The file a holder writes once it is ``state`` ("holding" or "waiting")."""
    return Path(f"{log}.{name}.{state}")


def wait_for_marker(log: Path, name: str, state: str, timeout_s: float = 60) -> None:
    """Orders process starts by what the holders did, not by sleeps (a loaded machine starts them slowly)."""
    deadline = time.monotonic() + timeout_s
    while not marker(log, name, state).exists():
        assert time.monotonic() < deadline, f"{name} was not {state} within {timeout_s} s"
        time.sleep(0.02)


def wait_for_holders(count: int, timeout_s: float = 60) -> None:
    """Until ``count`` reservations are in the fake device's ledger."""
    ledger = lease.lease_dir() / f"{FAKE_GPU.lease_key}.ledger"
    deadline = time.monotonic() + timeout_s
    while (ledger.read_text() if ledger.exists() else "").count("bytes") < count:
        assert time.monotonic() < deadline, f"fewer than {count} holders admitted in {timeout_s} s"
        time.sleep(0.02)


def spans(log: Path) -> dict[str, dict]:
    return {row["name"]: row for row in map(json.loads, log.read_text().splitlines())}


def overlap(a: dict, b: dict) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def run_all(*procs: subprocess.Popen) -> None:
    for proc in procs:
        assert proc.wait(timeout=60) == 0


def test_exclusive_holders_take_turns(cache, tmp_path):
    log = tmp_path / "log"
    first = holder("a", log, exclusive=True, hold_s=0.2, until=marker(log, "b", "waiting"))
    wait_for_marker(log, "a", "holding")
    run_all(first, holder("b", log, exclusive=True, hold_s=0.2))
    rows = spans(log)
    assert not overlap(rows["a"], rows["b"])
    assert rows["b"]["waited"] and "waiting for test GPU" in rows["b"]["waited"][0]


def test_shared_holders_run_side_by_side(cache, tmp_path):
    log = tmp_path / "log"
    run_all(holder("a", log, exclusive=False, hold_s=1.0, need=GIB),
            holder("b", log, exclusive=False, hold_s=1.0, need=GIB))
    rows = spans(log)
    assert overlap(rows["a"], rows["b"]) and not rows["a"]["waited"] and not rows["b"]["waited"]


def test_a_check_passing_the_memory_turnstile_is_no_wait_for_another(cache):
    """Two checks that fit, arriving together, meet at the memory turnstile for the moment one is admitted: the
    other is not told it waits (it was, on a busy machine, when one found the turnstile held at its first try)."""
    said = []
    with open(lease.lease_dir() / f"{FAKE_GPU.lease_key}.memory", "a+") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)  # as another check does while it is admitted
        passing = threading.Timer(0.05, fcntl.flock, (turn, fcntl.LOCK_UN))
        passing.start()
        try:
            with lease.hold(FAKE_GPU, exclusive=False, need_bytes=GIB, on_wait=said.append) as reservation:
                assert reservation.token
        finally:
            passing.join()
    assert said == []


def test_a_check_waits_for_timing_and_timing_waits_for_checks(cache, tmp_path):
    log = tmp_path / "log"
    check_a = holder("check a", log, exclusive=False, hold_s=0.2, until=marker(log, "timing", "waiting"))
    wait_for_marker(log, "check a", "holding")
    timing = holder("timing", log, exclusive=True, hold_s=0.2, until=marker(log, "check b", "waiting"))
    wait_for_marker(log, "timing", "waiting")
    check_b = holder("check b", log, exclusive=False, hold_s=0.2)  # arrives after the timing asked: waits
    run_all(check_a, timing, check_b)
    rows = spans(log)
    assert rows["timing"]["start"] >= rows["check a"]["end"]
    assert rows["check b"]["start"] >= rows["timing"]["end"], "a late check overtook the waiting timing run"
    assert "a timing run holds it" in rows["check b"]["waited"][0]


def test_checks_are_admitted_only_while_their_memory_fits(cache, tmp_path):
    log = tmp_path / "log"
    big = holder("big", log, exclusive=False, hold_s=0.2, need=6 * GIB, until=marker(log, "second", "waiting"))
    wait_for_marker(log, "big", "holding")
    run_all(big, holder("second", log, exclusive=False, hold_s=0.1, need=6 * GIB),
            holder("small", log, exclusive=False, hold_s=0.1, need=GIB))
    rows = spans(log)
    assert rows["second"]["start"] >= rows["big"]["end"], "6 + 6 GiB of a 10 GiB device were admitted together"
    assert "GiB" in rows["second"]["waited"][0]


def test_a_check_that_fits_passes_one_waiting_for_more_memory(cache, tmp_path):
    """Backfill: a check waiting for memory that is not free steps out of the turnstile between tries, so a check
    that fits now is admitted before it (one large check waiting held up every check behind it)."""
    log, release = tmp_path / "log", tmp_path / "release"
    big = holder("big", log, exclusive=False, hold_s=0.1, need=6 * GIB, until=release)
    wait_for_marker(log, "big", "holding")
    second = holder("second", log, exclusive=False, hold_s=0.1, need=6 * GIB)
    wait_for_marker(log, "second", "waiting")
    small = holder("small", log, exclusive=False, hold_s=0.1, need=GIB)
    wait_for_marker(log, "small", "holding")  # admitted while the second still waits
    release.touch()
    run_all(big, second, small)
    rows = spans(log)
    assert rows["small"]["start"] < rows["second"]["start"] and not rows["small"]["waited"]
    assert rows["second"]["start"] >= rows["big"]["end"]


def test_a_check_waiting_longer_than_the_backfill_keeps_the_turnstile(cache, monkeypatch):
    """Not starved: once a check has waited BACKFILL_S for memory, checks arriving after it wait for it, even
    those that would fit."""
    monkeypatch.setattr(lease, "BACKFILL_S", 0.3)
    events = {name: threading.Event() for name in ("held", "release", "second in", "small in")}
    order: list[str] = []

    def run(name: str, need: int, until: str | None = None, on_wait=None):
        with lease.hold(FAKE_GPU, False, need, on_wait=on_wait):
            order.append(name)
            events[f"{name} in" if name != "big" else "held"].set()
            if until:
                assert events[until].wait(30)
    said = threading.Event()
    threads = [threading.Thread(target=run, args=("big", 6 * GIB, "release"))]
    threads[0].start()
    assert events["held"].wait(30)
    threads.append(threading.Thread(target=run, args=("second", 6 * GIB), kwargs={"on_wait": lambda m: said.set()}))
    threads[1].start()
    assert said.wait(30)
    time.sleep(2.0)  # well past the backfill: the second now keeps the turnstile
    threads.append(threading.Thread(target=run, args=("small", GIB)))
    threads[2].start()
    time.sleep(1.0)
    assert not events["small in"].is_set(), "a check overtook one waiting past the backfill"
    events["release"].set()
    for thread in threads:
        thread.join(30)
    assert order == ["big", "second", "small"]


@pytest.mark.parametrize("waiting", [1, 3])
def test_a_check_keeps_the_turnstile_for_a_bounded_time_then_lets_checks_that_fit_pass_again(cache, monkeypatch,
                                                                                             waiting):
    """Kept until admitted, the turnstile idled the device for as long as one slow check held the memory the waiting
    ones need (an H100, thirty-fifth session: 86 s, eleven judges ready, two checks keeping it in turn). It is kept
    DRAIN_S at a time, then rests BACKFILL_S for every waiting check: a check that fits passes then, however many
    wait, and the waiting ones are still admitted once the memory is free."""
    monkeypatch.setattr(lease, "BACKFILL_S", 0.3)
    monkeypatch.setattr(lease, "DRAIN_S", 0.6)
    release, small_in = threading.Event(), threading.Event()
    waits = [threading.Event() for _ in range(waiting)]
    order: list[str] = []

    def run(name: str, need: int, until: threading.Event | None = None, on_wait=None):
        with lease.hold(FAKE_GPU, False, need, on_wait=on_wait):
            order.append(name)
            if name == "small":
                small_in.set()
            if until is not None:
                until.wait(60)
    threads = [threading.Thread(target=run, args=("big", 6 * GIB, release))]
    threads[0].start()
    try:
        wait_for_holders(1)
        for n, said in enumerate(waits):
            threads.append(threading.Thread(target=run, args=(f"waiting {n}", 6 * GIB),
                                            kwargs={"on_wait": lambda m, said=said: said.set()}))
            threads[-1].start()
        assert all(said.wait(30) for said in waits)
        time.sleep(0.5)  # past the backfill: the waiting checks keep the turnstile now, or will again
        threads.append(threading.Thread(target=run, args=("small", GIB)))
        threads[-1].start()
        assert small_in.wait(30), "a check that fits never passed checks that kept the turnstile past DRAIN_S"
        assert order == ["big", "small"], order  # while the big one still holds the memory the others wait for
    finally:
        release.set()
        for thread in threads:
            thread.join(60)
    assert order[:2] == ["big", "small"] and len(order) == waiting + 2, order


def turn_kept(deadline: float) -> None:
    """Until a waiting check holds the fake device's memory turnstile (after a rest only a keeper holds it)."""
    with open(lease.lease_dir() / f"{FAKE_GPU.lease_key}.memory", "a+") as turn:
        while True:
            try:
                fcntl.flock(turn, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            fcntl.flock(turn, fcntl.LOCK_UN)
            assert time.monotonic() < deadline, "no check kept the turnstile"
            time.sleep(0.01)


def test_a_check_whose_window_ended_keeps_the_turnstile_longer_next_time(cache, monkeypatch):
    """Not starved: each window a waiting check keeps the turnstile is twice the last, so one outlasts the checks
    on the device. Here a holder outlives the first window (1 s) and ends within the second (2 s): the waiting
    check is admitted at its end, before a check that fits and arrived during that window."""
    monkeypatch.setattr(lease, "BACKFILL_S", 0.2)
    monkeypatch.setattr(lease, "DRAIN_S", 1.0)
    order: list[str] = []
    release = threading.Event()

    def run(name: str, need: int, until: threading.Event | None = None, on_wait=None):
        with lease.hold(FAKE_GPU, False, need, on_wait=on_wait):
            order.append(name)
            if until is not None:
                until.wait(60)
    rest = lease.lease_dir() / f"{FAKE_GPU.lease_key}.rest"
    threads = [threading.Thread(target=run, args=("big", 6 * GIB, release))]
    threads[0].start()
    try:
        wait_for_holders(1)
        threads.append(threading.Thread(target=run, args=("second", 6 * GIB)))
        threads[-1].start()
        deadline = time.monotonic() + 30
        while not rest.exists():  # the second's first window ended unadmitted
            assert time.monotonic() < deadline, "the first window never ended"
            time.sleep(0.02)
        while time.time() < float(rest.read_text()) + 0.05:  # the rest; then the second keeps it again, for 2 s
            time.sleep(0.02)
        turn_kept(deadline)
        threads.append(threading.Thread(target=run, args=("small", GIB)))
        threads[-1].start()
        time.sleep(0.2)
        release.set()  # within the second window
    finally:
        release.set()
        for thread in threads:
            thread.join(60)
    assert order == ["big", "second", "small"], order


def test_a_run_that_reserves_no_memory_never_waits_behind_a_check_short_of_memory(cache, monkeypatch):
    """A judge's boot and a build ahead hold the device shared with no memory reserved: they cannot delay a waiting
    check's admission, so they pass it even once it keeps the memory turnstile (on an H100 a 36 GiB check waiting
    stopped every judge's boot and every build for minutes, thirty-fourth session). A check that reserves memory
    still waits for it, and says so."""
    monkeypatch.setattr(lease, "BACKFILL_S", 0.3)
    release, second_waits, boot_in, small_waits = (threading.Event() for _ in range(4))
    order: list[str] = []

    def run(name: str, need: int, until: threading.Event | None = None, on_wait=None):
        with lease.hold(FAKE_GPU, False, need, on_wait=on_wait):
            order.append(name)
            if until is not None:
                until.wait(30)
    threads = [threading.Thread(target=run, args=("big", 6 * GIB, release))]
    threads[0].start()
    wait_for_holders(1)
    threads.append(threading.Thread(target=run, args=("second", 6 * GIB),
                                    kwargs={"on_wait": lambda m: second_waits.set()}))
    threads[1].start()
    assert second_waits.wait(30)
    time.sleep(2.0)  # well past the backfill: the second keeps the memory turnstile
    threads.append(threading.Thread(target=run, args=("boot", 0)))
    threads.append(threading.Thread(target=run, args=("small", GIB), kwargs={"on_wait": lambda m: small_waits.set()}))
    threads[2].start()
    threads[3].start()
    threads[2].join(10)
    assert "boot" in order, "a run reserving no memory waited behind a check short of memory"
    assert small_waits.wait(30), "a check that fits did not wait for one waiting past the backfill"
    release.set()
    for thread in threads:
        thread.join(30)
    assert order == ["big", "boot", "second", "small"], order


def test_a_run_alone_is_admitted_whatever_it_needs(cache, tmp_path):
    log = tmp_path / "log"
    run_all(holder("huge", log, exclusive=False, hold_s=0.1, need=50 * GIB))
    assert not spans(log)["huge"]["waited"]


def test_a_reservation_resized_to_the_measured_need_lets_the_next_run_in(cache, tmp_path):
    """A run reserving the whole device (nothing measured yet); once its judge has measured the reference
    it resizes the reservation to what the check needs, and the next run is admitted beside it."""
    log, release = tmp_path / "log", tmp_path / "release"
    first = holder("first", log, exclusive=False, hold_s=0.1, need=needs.memory_need(FAKE_GPU, "never seen"),
                   resize=GIB, until=release, resize_after=marker(log, "second", "waiting"))
    wait_for_holders(1)  # the first run holds its reservation
    second = holder("second", log, exclusive=False, hold_s=0.1, need=6 * GIB)
    wait_for_holders(2)  # admitted beside the first, once it resized
    release.touch()
    run_all(first, second)
    rows = spans(log)
    assert rows["second"]["waited"] and rows["second"]["start"] >= rows["first"]["resized"]
    assert overlap(rows["first"], rows["second"]), "the resized reservation still kept the device"


def test_a_reservation_knows_whether_it_shared_the_device(cache, tmp_path):
    """A device-wide reading of a run's peak counts its neighbours' allocations: the runner records it only for
    a run that had the device to itself (Reservation.crowded), else the judge's own estimate. A run joined by
    another, and the one that joined it, were crowded; a run before them, and one after, were not."""
    log, release = tmp_path / "log", tmp_path / "release"
    run_all(holder("before", log, exclusive=False, hold_s=0.0, need=GIB))
    first = holder("first", log, exclusive=False, hold_s=0.0, need=GIB, until=release)
    wait_for_holders(1)
    joined = holder("joined", log, exclusive=False, hold_s=0.0, need=GIB)
    run_all(joined)  # admitted, held and gone while the first still holds
    release.touch()
    run_all(first, holder("after", log, exclusive=False, hold_s=0.0, need=GIB))
    rows = spans(log)
    assert {name: row["crowded"] for name, row in rows.items()} == {
        "before": False, "first": True, "joined": True, "after": False}


def test_measured_needs_are_shared_by_devices_of_one_model(cache):
    """A pool's GPUs of one model measure a problem once: the need is kept per model and memory size, not per
    GPU; another model, or another memory size, measures its own. A need recorded before any check (a batch's
    survey: needs.record_need) is what the next check reserves."""
    twin = FAKE_GPU.model_copy(update={"uuid": "GPU-other", "index": 1})
    needs.record_need(FAKE_GPU, "problem", 3 * GIB)
    assert needs.measured_need(twin, "problem") == pytest.approx(3 * GIB, rel=1e-6)
    for other in (FAKE_GPU.model_copy(update={"name": "other GPU"}),
                  FAKE_GPU.model_copy(update={"total_memory_bytes": 20 * GIB})):
        assert needs.measured_need(other, "problem") is None
    needs.record_peak(twin, "problem", GIB)  # a lower reading later does not shrink it
    assert needs.measured_need(FAKE_GPU, "problem") == pytest.approx(3 * GIB, rel=1e-6)


def test_a_killed_holder_frees_the_device(cache, tmp_path):
    log = tmp_path / "log"
    victim = holder("victim", log, exclusive=False, hold_s=60, need=9 * GIB)
    time.sleep(1.0)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    started = time.monotonic()
    run_all(holder("after", log, exclusive=True, hold_s=0.1), holder("check", log, exclusive=False, hold_s=0.1,
                                                                   need=9 * GIB))
    assert time.monotonic() - started < 20
    assert set(spans(log)) == {"after", "check"}


def test_memory_need_comes_from_measured_peaks(cache):
    assert needs.measured_need(FAKE_GPU, "problem") is None  # never measured: a judge gets a first share
    assert needs.first_need(FAKE_GPU) == int(needs.FIRST_SHARE * FAKE_GPU.total_memory_bytes)
    assert needs.memory_need(FAKE_GPU, "problem") == FAKE_GPU.total_memory_bytes  # nothing measures it: alone
    needs.record_peak(FAKE_GPU, "problem", 2 * GIB)
    assert needs.measured_need(FAKE_GPU, "problem") == int(2 * GIB * needs.NEED_MARGIN)
    assert needs.memory_need(FAKE_GPU, "problem") == int(2 * GIB * needs.NEED_MARGIN)
    needs.record_peak(FAKE_GPU, "problem", GIB)  # a lower reading (another run freed memory) does not shrink it
    assert needs.memory_need(FAKE_GPU, "problem") == int(2 * GIB * needs.NEED_MARGIN)
    assert needs.memory_need(Device(kind="cpu"), "problem") == 0
    assert needs.need_from_measure(GIB) == int(GIB * needs.NEED_MARGIN) + needs.CONTEXTS_BYTES


def test_first_runs_go_side_by_side_until_their_shares_fill_the_device(cache, tmp_path):
    """Never-measured problems' checks are admitted with a first share each: three side by side on one
    device, a fourth waits for one of them."""
    log, first, release = tmp_path / "log", needs.first_need(FAKE_GPU), tmp_path / "release"
    early = [holder(f"first {i}", log, exclusive=False, hold_s=0.5, need=first, until=release) for i in range(3)]
    wait_for_holders(3)
    fourth = holder("fourth", log, exclusive=False, hold_s=0.1, need=first)
    deadline = time.monotonic() + 60
    while not Path(f"{log}.fourth.waiting").exists():  # the fourth asks while the three hold
        assert time.monotonic() < deadline and fourth.poll() is None, "the fourth was never kept waiting"
        time.sleep(0.02)
    release.touch()
    run_all(*early, fourth)
    rows = spans(log)
    assert all(overlap(rows["first 0"], rows[f"first {i}"]) for i in (1, 2)), rows
    assert rows["fourth"]["waited"] and rows["fourth"]["start"] >= min(rows[f"first {i}"]["end"] for i in range(3))


@pytest.mark.long
def test_two_cli_runs_on_one_device_queue(cache, tmp_path):
    """While a `kernel-mcp profile` times on the CPU, a second profile and a check started beside it wait
    for it instead of running beside it, and say so; all of them pass."""
    env = {**os.environ, "PYTHONPATH": repo_pythonpath()}
    problem = PROBLEMS / "vector_add"
    base = [sys.executable, "-m", "kernel_mcp"]
    timed = [*base, "profile", str(problem), str(problem / "baseline.py"), "--device", "cpu", "--shapes", "tests"]
    run = dict(env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = subprocess.Popen([*timed, "--budget", "10"], **run)  # its timing holds the lease ~10 s
    seen = []
    for line in first.stderr:  # its progress: once it times the reference, it holds the lease
        seen.append(line)
        if "timing the reference alone" in line:
            break
    second = subprocess.Popen([*timed, "--budget", "2"], **run)
    checked = subprocess.Popen([*base, "check", str(problem), str(problem / "baseline.py"), "--device", "cpu"], **run)
    outputs = [p.communicate(timeout=400) for p in (first, second, checked)]
    assert [p.returncode for p in (first, second, checked)] == [0, 0, 0], outputs
    assert "waiting for" in outputs[1][1], outputs[1][1][-2000:]
    assert "waiting for" in outputs[2][1], outputs[2][1][-2000:]


def test_only_a_check_short_of_memory_before_any_candidate_is_run_again_alone():
    """What the runner runs again alone (the GPU test beside it: tests/test_gpu.py; where the judge says so:
    tests/test_host_factory.py): a judge that ran out of device memory before any candidate was sent an input.
    Not the candidate's call raising torch's OutOfMemoryError (its own message, or memory it filled itself: a
    rerun would grant it fresh secret inputs), not the judge's shortage once candidates ran, not a first run
    that outgrew its share (run again with its need)."""
    from kernel_mcp.results import CaseResult, CheckResult, Finding

    def result(findings=(), failure="", message=""):
        cases = [CaseResult(name="test 0", params={}, passed=not failure, failure=failure, message=message)]
        return CheckResult(passed=False, verdict="", problem="p", candidate="c", cases=cases, findings=list(findings))

    assert needs.ran_short(result([Finding(code=needs.SHORT, message="no room for the reference's run")]))
    assert not needs.ran_short(result(failure="exception", message="custom_kernel raised: OutOfMemoryError"))
    assert not needs.ran_short(result([Finding(code="out_of_memory", message="the judge ran out of memory")]))
    assert not needs.ran_short(result([Finding(code=needs.OUTGREW, message="needs about 5 GiB")]))
