"""The tune agent end to end on the CPU (Triton's interpreter), with the real profile tool: a copy of the
bundled vector_add whose one test shape has 16,384 elements, so that under the interpreter the time is
the number of programs (n / BLOCK): from the baseline's BLOCK 128 each doubling up to the search's largest
value, 1024, is ~1.9x faster. What a loaded machine still guarantees is asserted: the search moves on a
significant gain and only on one, the first steps (~1.9x each) are far above any noise, and the winner is
confirmed afresh; not that a quiet CPU reached the same last step."""
import time

from conftest import PROBLEMS, vector_add_on_one_shape

from kernel_mcp.agent.tune.driver import Tuner
from kernel_mcp.agent.tune.search import DELTA
from kernel_mcp.results import ProfileSettings


def _moved_only_on_significant_gains(steps, best):
    """The decision rule, step by step: the search went on from a comparison's configuration (a later
    comparison is made against it, or it is the winner) exactly when its 95% lower end cleared 1 + DELTA
    (in this landscape no wave holds two significant gains, so every significant one is taken)."""
    compares = [s for s in steps if s["what"] == "compare"]
    for step in compares:
        moved = step["config"] == best or any(later["against"] == step["config"] for later in compares)
        significant = step["ratio"] is not None and step["ratio"][1] > 1 + DELTA
        assert moved == significant, (step, steps)


def test_tune_climbs_the_known_landscape_on_significant_gains_and_confirms_its_winner(tmp_path):
    problem = vector_add_on_one_shape(tmp_path)
    said, steps = [], []
    tuner = Tuner(problem, problem / "baseline.py", tmp_path / "work", device="cpu", only=["BLOCK"],
                  settings=ProfileSettings(budget_s=3.0, shapes="tests", min_samples=8), on_progress=said.append,
                  on_step=lambda **step: steps.append(step))
    result = tuner.run()
    # The landscape's steps are ~1.4-1.6x each (BLOCK 128 -> 256 -> 512 -> 1024): a quiet machine climbs two or
    # three of them. What a loaded one guarantees is the rule: every move on a significant gain, never downhill,
    # and a winner kept only on a confirmation whose lower end clears 1 + DELTA. CI runs loaded stopped at 256
    # once, confirmed [1.74, 1.15, 2.63] once, and stayed at 128 once (two hogs and other checks beside it).
    assert result.start == {"BLOCK": 128} and result.best["BLOCK"] >= 128, (result, said)
    confirmed = [s["config"] for s in steps if s["what"] == "confirm"]  # the search's winner, timed again
    _moved_only_on_significant_gains(steps, confirmed[-1] if confirmed else result.best)
    assert result.failed == 0 and any("BLOCK 128 -> 256" in line for line in said), said
    if result.best == result.start:
        assert result.speedup is None, result
        return
    assert result.speedup and result.speedup[1] > 1 + DELTA, result
    best = result.best["BLOCK"]
    assert f"BLOCK = {best}" in (tmp_path / "work" / result.best_file.split("/")[-1]).read_text()


def test_on_two_workers_the_tune_compares_side_by_side_and_still_follows_its_rule(tmp_path):
    """A pool of two (CPU) workers: the start's two neighbours (BLOCK 64 and 256) are compared at once,
    each on its own worker; every comparison timed is told to ``on_step`` once, with its seconds."""
    from kernel_mcp.worker.runners.pool import cpu_pool
    problem = vector_add_on_one_shape(tmp_path)
    steps = []
    pool = cpu_pool(2)
    try:
        tuner = Tuner(problem, problem / "baseline.py", tmp_path / "work", device="cpu", only=["BLOCK"],
                      settings=ProfileSettings(budget_s=3.0, shapes="tests", min_samples=8), runner=pool,
                      on_step=lambda **step: steps.append({**step, "ended": time.monotonic()}))
        result = tuner.run()
    finally:
        pool.close()
    # Two comparisons timed at once on a CI machine's two busy cores can leave even the ~1.9x step from 128 to
    # 256 inside the noise (a CI run once kept 128): what still holds is the rule, never a climb downhill,
    # and a winner other than the start confirmed as significant.
    assert tuner.width == 2 and result.best["BLOCK"] >= 128, (result, steps)
    assert result.best == result.start or result.speedup[1] > 1 + DELTA, (result, steps)
    _moved_only_on_significant_gains(steps, result.best)
    first, second = steps[0], steps[1]
    assert {first["config"]["BLOCK"], second["config"]["BLOCK"]} == {64, 256}
    assert first["against"] == second["against"] == {"BLOCK": 128} and first["what"] == "compare"
    # side by side: each began before the other ended
    assert all(a["ended"] - a["seconds"] < b["ended"] for a, b in ((first, second), (second, first))), steps
    assert sum(w.served for w in pool.workers) >= len(steps) and all(w.served for w in pool.workers)
    confirmed = [s for s in steps if s["what"] == "confirm"]
    if result.speedup:  # a winner kept: the confirmation is the last timing, and its ratio is the result's
        assert confirmed == steps[-1:] and steps[-1]["ratio"] == result.speedup
    assert len(steps) == result.comparisons + len(confirmed)  # the search's comparisons, then any confirmation


def test_once_the_budget_is_spent_the_search_stops_but_its_winner_is_still_confirmed(tmp_path, monkeypatch):
    """A search cut off by the run's budget must not throw away what it found: its confirmation (one
    comparison) runs anyway; ordinary comparisons do not."""
    from kernel_mcp.agent.tune import driver
    from kernel_mcp.stats import Ratio
    timed = []

    def fake_compare(problem, a, b, device, settings, runner):  # what the real profile would answer
        timed.append((a.name, b.name))
        return Ratio(1.5, 1.3, 1.7)
    monkeypatch.setattr(driver, "compare_files", fake_compare)
    tuner = Tuner(PROBLEMS / "vector_add", PROBLEMS / "vector_add" / "baseline.py", tmp_path, device="cpu",
                  stop=lambda: True)
    start = {p.name: p.current for p in tuner.params}
    other = {**start, "BLOCK": start["BLOCK"] * 2}
    assert tuner.compare(start, other) is None and not timed
    assert tuner.compare(start, other, what="confirm") == Ratio(1.5, 1.3, 1.7) and len(timed) == 1


def test_a_budget_spent_during_the_halving_keeps_its_winner_compared_and_confirmed(tmp_path, monkeypatch):
    """The budget ends after the halving's first round (matmul_fp32 under the interpreter: 125 tile
    configurations): the fastest of that round is still compared against the start and confirmed, so the
    round's work is not thrown away (a Ray run on the H200 lost a whole halving that way before), and
    nothing else is timed."""
    from kernel_mcp.agent.tune import driver
    from kernel_mcp.stats import Ratio
    compared, timed = [], []

    def fake_compare(problem, a, b, device, settings, runner):
        compared.append(b.name)
        return Ratio(1.5, 1.3, 1.7)
    monkeypatch.setattr(driver, "compare_files", fake_compare)
    tuner = Tuner(PROBLEMS / "matmul_fp32", PROBLEMS / "matmul_fp32" / "baseline.py", tmp_path, device="cpu",
                  stop=lambda: len(timed) >= 16)
    start = {p.name: p.current for p in tuner.params}

    def time_alone(file, settings):  # the round's fastest: its second configuration (the start is first)
        timed.append(file)
        return 1.0 if len(timed) == 2 else 2.0
    monkeypatch.setattr(tuner, "_time_alone", time_alone)
    result = tuner.run()
    assert len(timed) == 16 and len(compared) == 2  # the round; then the winner against the start, confirmed
    assert tuner.file_of(result.best) == timed[1] != tuner.file_of(start)
    assert result.speedup == [1.5, 1.3, 1.7] and result.start == start


def test_a_configuration_file_torn_by_a_kill_is_written_again_whole(tmp_path):
    tuner = Tuner(PROBLEMS / "vector_add", PROBLEMS / "vector_add" / "baseline.py", tmp_path, device="cpu")
    config = {p.name: p.current for p in tuner.params}
    path = tuner.file_of(config)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # what a kill in the middle of a plain write leaves
    assert tuner.file_of(config) == path and path.read_bytes() == whole
