"""Stall signals S1-S8 and the restart ladder (kernel_mcp/history/stall.py) on synthetic histories: a pure function,
no git, no processes. The server's status tool returns the same (tests/test_server.py drives it)."""
import pytest

from kernel_mcp.history.snapshots import Snapshot
from kernel_mcp.history.stall import RunFacts, StallPolicy, assess, window


def _snap(i, speedup=None, passed=True, trusted=True, lines=50, verdict="pass", ci=None, sol=None):
    return Snapshot(id=f"{i:040x}", problem="p", candidate="k.py", files=["k.py"], passed=passed, trusted=trusted,
                    speedup=speedup, speedup_ci=ci, verdict=verdict, lines=lines, created=float(i),
                    roofline_percent=sol)


def _flat(n, speedup=2.0, start=0, **kw):
    """n valid evaluations inside the noise of ``speedup``."""
    return [_snap(start + i, speedup=speedup, ci=[speedup * 0.99, speedup * 1.01], **kw) for i in range(n)]


def _rising(n, **kw):
    return [_snap(i, speedup=1.0 + 0.1 * i, ci=[0.99 + 0.1 * i, 1.01 + 0.1 * i], **kw) for i in range(n)]


def _fails(n, start, verdict="fail: mismatch"):
    return [_snap(start + i, passed=False, trusted=False, verdict=verdict) for i in range(n)]


KERNEL = "import triton\n\n@triton.jit\ndef kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n" + \
    "".join(f"    v{i} = tl.load(x_ptr + {i})\n    tl.store(y_ptr + {i}, v{i} * {i})\n" for i in range(12))

# (name, history, facts, signals expected, rung expected)
CASES = [
    ("empty", [], None, set(), 0),
    ("steady progress", _rising(12), None, set(), 0),
    ("noise-level gains after one real one", _flat(1) + _flat(24, speedup=2.01, start=1), None, {"S1"}, 1),
    ("the second stall climbs to a soft restart", _flat(25), RunFacts(last_level=1), {"S1"}, 2),
    ("the third to a restart from scratch", _flat(25), RunFacts(last_level=2), {"S1"}, 3),
    ("the ladder tops out at L3 until the stop rules", _flat(25), RunFacts(last_level=3), {"S1"}, 3),
    ("a hard stall below half of speed-of-light goes straight to L3", _flat(25, sol=30.0), None, {"S1"}, 3),
    ("five failures in a row, of mixed kinds", _flat(1) + [_snap(1 + i, passed=False, trusted=False, verdict=v)
     for i, v in enumerate(["fail: crash", "fail: timeout", "fail: crash", "fail: structure", "fail: timeout"])],
     None, {"S2"}, 1),
    ("three failures of one kind", _flat(1) + _fails(3, 1, "fail: mismatch while timing"), None, {"S2"}, 1),
    ("two failures are not a streak", _flat(1) + _fails(2, 1), None, set(), 0),
    ("code rot: the best 3x the baseline for 1.05x", [_snap(0, speedup=1.0, lines=40)]
     + [_snap(1, speedup=1.05, ci=[1.04, 1.06], lines=120)], None, {"S3"}, 3),
    ("big but fast is not rot", [_snap(0, speedup=1.0, lines=40), _snap(1, speedup=3.0, ci=[2.9, 3.1], lines=200)],
     None, set(), 0),
    ("mode collapse", _rising(10), RunFacts(sources=[KERNEL] * 2 + [KERNEL.replace("v3", "w3")] * 8), {"S4"}, 1),
    ("varied proposals are no collapse", _rising(10),
     RunFacts(sources=[KERNEL.replace("x_ptr", f"p{i}").replace("* ", f"* {i} + ") for i in range(10)]), set(), 0),
    ("a cheat caught", _rising(3) + [_snap(3, passed=False, trusted=False, verdict="fail: alias")], None, {"S5"}, 0),
    ("timing not trusted", _rising(3) + [_snap(3, speedup=50.0, trusted=False, verdict="pass (timing not trusted)")],
     None, {"S5"}, 0),
    ("a silent agent", _rising(3), RunFacts(idle_s=900), {"S6"}, 2),
    ("speed-of-light reached", _rising(3)[:-1] + [_snap(2, speedup=1.2, ci=[1.19, 1.21], sol=92.0)],
     RunFacts(until_sol=0.9), {"S7"}, 4),
    ("budget committed", _rising(3), RunFacts(spend_usd=4.0, committed_usd=1.5, budget_usd=5.0), {"S8"}, 4),
    ("two epochs without a gain stop", _rising(3), RunFacts(epochs_without_gain=2), set(), 4),
]


@pytest.mark.parametrize("name,history,facts,expected,rung", CASES, ids=[c[0] for c in CASES])
def test_signals_and_the_ladder(name, history, facts, expected, rung):
    status = assess(history, facts=facts)
    assert {s.code for s in status.signals} == expected, status.signals
    assert status.level == rung, (status.level, status.signals)


def test_the_window_grows_as_improvements_get_rare():
    policy = StallPolicy()
    assert window(0, 0, policy) == 6  # nothing known: a short first window
    assert window(5, 10, policy) == 6  # improving often
    assert window(1, 20, policy) == 24  # rarely: the longest window
    assert window(2, 20, policy) == 17  # ceil(ln 10 / (3/22))
    assert window(0, 3, policy) == 12  # three valid, no gain yet: ceil(ln 10 / (1/5))


def test_an_untrusted_speedup_never_becomes_the_best():
    history = [_snap(0, speedup=1.5), _snap(1, speedup=40.0, trusted=False, verdict="pass (timing not trusted)")]
    assert assess(history).best_speedup == 1.5


def test_suggestions_name_the_next_move():
    assert "first candidate" in assess([]).suggestion
    assert assess(_rising(5)).suggestion.startswith("keep going")
    assert assess(_flat(1) + _fails(5, 1)).suggestion.startswith("fix correctness first")
    assert assess(_flat(25, sol=30.0)).suggestion.startswith("restart from scratch")
    caught = assess(_rising(3) + [_snap(3, passed=False, trusted=False, verdict="fail: tampering")])
    assert "integrity" in caught.suggestion
