"""The stall detector on synthetic histories (pure function: no git, no processes)."""
from kernel_mcp.snapshots import Snapshot
from kernel_mcp.stall import StallPolicy, assess


def _snap(i, speedup=None, passed=True, trusted=True, lines=50, verdict="pass", ci=None):
    return Snapshot(id=f"{i:040x}", problem="p", candidate="k.py", files=["k.py"], passed=passed, trusted=trusted,
                    speedup=speedup, speedup_ci=ci, verdict=verdict, lines=lines, created=float(i))


def test_empty_history_says_where_to_start():
    status = assess([])
    assert status.evaluations == 0 and not status.stalled and "first candidate" in status.suggestion


def test_steady_progress_is_not_a_stall():
    history = [_snap(i, speedup=1.0 + 0.1 * i, ci=[0.98 + 0.1 * i, 1.02 + 0.1 * i]) for i in range(10)]
    status = assess(history)
    assert status.since_improvement == 0 and not status.stalled and status.best_id == history[-1].id
    assert status.suggestion.startswith("keep going")


def test_noise_level_gains_do_not_count_as_improvement():
    history = [_snap(0, speedup=2.0, ci=[1.95, 2.05])]
    history += [_snap(i, speedup=2.01, ci=[1.9, 2.1]) for i in range(1, 10)]  # +0.5%, inside the noise
    status = assess(history)
    assert status.best_id == history[0].id and status.since_improvement == 9 and status.stalled
    assert status.suggestion.startswith("change approach")


def test_untrusted_speedups_are_ignored():
    history = [_snap(0, speedup=1.5), _snap(1, speedup=40.0, trusted=False)]
    assert assess(history).best_speedup == 1.5


def test_failure_streak_asks_for_correctness_first():
    history = [_snap(0, speedup=1.5)] + [_snap(i, passed=False, verdict="fail: mismatch") for i in range(1, 6)]
    status = assess(history)
    assert status.failures_in_a_row == 5 and status.common_failure == "fail: mismatch"
    assert status.suggestion.startswith("fix correctness first")


def test_stall_with_code_growth_suggests_a_restart():
    history = [_snap(0, speedup=1.5, lines=60)]
    history += [_snap(i, speedup=1.4, lines=60 + 20 * i) for i in range(1, 10)]
    status = assess(history, StallPolicy(patience=8, growth=2.0))
    assert status.stalled and status.growth >= 2.0 and status.suggestion.startswith("restart from scratch")
    assert any("size" in r for r in status.reasons)
