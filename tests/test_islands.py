"""Islands, restarts and the report on journals written by hand (no evaluation runs), and two islands run
for real against a loopback Anthropic API on the CPU."""
import shutil

import pytest
import yaml
from conftest import PROBLEMS
from fakes.scripted_apis import Move, Scripted

from kernel_mcp.agent.loop.conversation import Conversation
from kernel_mcp.agent.loop.migrate import adopt_best, best_parent
from kernel_mcp.agent.loop.optimizer import Optimizer
from kernel_mcp.agent.loop.promotion import better
from kernel_mcp.agent.report.report import report
from kernel_mcp.agent.run.budget import Budget
from kernel_mcp.agent.run.folder import RunConfig, RunFolder, candidate_hash
from kernel_mcp.agent.run.journal import read

BASE, NARROW, WIDE = "BLOCK = 1024\n", "BLOCK = 4096\n", "BLOCK = 8192\n"


def _run_with(tmp_path, islands=2):
    """A run whose baseline and two candidates were evaluated: NARROW 1.5x [1.4, 1.6] on island 0, WIDE 1.8x
    but with a wide interval [1.1, 2.5] on island 1."""
    config = RunConfig(problem=str(tmp_path), problem_hash="-", agent="anthropic:claude-opus-4-5", islands=islands)
    folder = RunFolder.create(tmp_path / "run", config)
    opt = Optimizer(folder, PROBLEMS / "vector_add", _start(tmp_path), config.agent, Budget(), device="cpu", tune=False)
    for source, island, speedup, ci, role in ((BASE, "0", 1.0, [0.9, 1.1], "baseline"),
                                              (NARROW, "0", 1.5, [1.4, 1.6], "candidate"),
                                              (WIDE, "1", 1.8, [1.1, 2.5], "candidate")):
        key, _ = opt.file_of(source)
        folder.record("intent", candidate_hash=key, role=role, island=island, idea=f"try {source.strip()}")
        folder.record("done", candidate_hash=key, role=role, island=island, verdict="pass", passed=True,
                      trusted=True, speedup=speedup, speedup_ci=ci, idea=f"try {source.strip()}",
                      parent=None if role == "baseline" else candidate_hash(BASE.encode()))
    base = candidate_hash(BASE.encode())
    for island in ("0", "1"):
        opt.promote(base, island, None, how="baseline")
    opt.promote(candidate_hash(NARROW.encode()), "0", [1.5, 1.4, 1.6], how="proposal")
    opt.promote(candidate_hash(WIDE.encode()), "1", [1.8, 1.1, 2.5], how="proposal")
    return folder, opt


def _start(tmp_path):
    start = tmp_path / "start.py"
    start.write_text(BASE)
    return start


def test_a_parent_is_chosen_by_its_lower_confidence_bound_and_migrates_only_when_better(tmp_path):
    folder, opt = _run_with(tmp_path)
    with folder:
        assert best_parent(opt) == ("0", candidate_hash(NARROW.encode()))  # 1.4 beats 1.1, though 1.8 > 1.5
        assert adopt_best(opt, "1") == "0"
        assert opt.state.incumbents["1"] == candidate_hash(NARROW.encode())
        assert adopt_best(opt, "0") == ""  # it already holds the best: nothing recorded
        migrations = [r.fields()["how"] for r in folder.log.records if r.kind == "promotion"]
        assert migrations.count("migrated from island 0") == 1


def test_a_hard_restart_puts_the_baseline_back_and_starts_an_epoch(tmp_path):
    folder, opt = _run_with(tmp_path)
    with folder:
        conversation = Conversation(opt, "1")
        conversation._restart(3, "no gain in three sessions")
        assert opt.state.incumbents["1"] == opt.state.baseline_hash and opt.state.epoch == 1
        assert opt.incumbent_source("1") == BASE  # the next session sees no code of the run
        conversation._restart(2, "a fresh session")  # a soft restart then takes the best incumbent again
        assert opt.state.incumbents["1"] == candidate_hash(NARROW.encode())


def test_the_report_shows_lineage_restarts_cost_and_the_best_diff(tmp_path):
    folder, opt = _run_with(tmp_path)
    with folder:
        folder.record("turn", island="0", usage={"input": 1000, "output": 200}, cost_usd=0.02)
        folder.record("turn", island="1", usage={"input": 10}, cost_usd=None)
        Conversation(opt, "1")._restart(2, "the ladder said so")
        folder.record("finished", reason="stop: budget")
    text = report(tmp_path / "run").read_text()
    assert "restart L2 (the ladder said so)" in text
    assert "-BLOCK = 1024" in text and "+BLOCK = 4096" in text  # best by lower bound, against the baseline
    assert "$0.0200 + 1 unpriced turns" in text and "$0.0100" in text  # two confirmed improvements
    assert "* " in text and "| pass | 3 |" in text
    assert (tmp_path / "run" / "report" / "progress.png").exists()
    html = (tmp_path / "run" / "report" / "report.html").read_text()
    assert "<h2>Lineage</h2>" in html and "<img src='progress.png'" in html


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_two_islands_each_hold_their_own_sessions_and_share_one_baseline(tmp_path, monkeypatch):
    problem = tmp_path / "vector_add"
    shutil.copytree(PROBLEMS / "vector_add", problem)
    spec = yaml.safe_load((problem / "task.yml").read_text())
    spec["tests"] = [{"n": 4096, "itemsize": 4, "seed": 7}]
    (problem / "task.yml").write_text(yaml.safe_dump(spec))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with Scripted([Move(text="Nothing to add.")]) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        config = RunConfig(problem=str(problem), problem_hash="-", agent="anthropic:claude-opus-4-5", islands=2)
        with RunFolder.create(tmp_path / "run", config) as folder:
            reason = Optimizer(folder, problem, problem / "baseline.py", config.agent, Budget(evaluations=5),
                               device="cpu", budget_s=2.0, shapes="tests", tune=False).run()
    records = read(tmp_path / "run" / "journal.jsonl")
    assert reason.count("proposed nothing") == 2, reason  # each island ran dry on its own
    assert [r.fields()["role"] for r in records if r.kind == "done"] == ["baseline"]
    assert {r.fields()["island"] for r in records if r.kind == "episode_started"} == {"0", "1"}
    assert sorted(r.fields()["island"] for r in records if r.kind == "restart") == ["0", "1"]
    assert len(fake.requests) == 4 and len(list((tmp_path / "run" / "episodes").glob("island-*.jsonl"))) == 4


def test_candidates_evaluated_but_not_judged_before_a_kill_are_judged_on_resume(tmp_path, monkeypatch):
    """NARROW and WIDE were promoted but their lessons never written (a kill in between): they are judged
    as worked without timing them again. A third, evaluated and never judged, is judged now: timed against
    its island's best (here a stand-in for the interleaved comparison) and promoted once."""
    from kernel_mcp.agent.loop import promotion
    from kernel_mcp.stats import Ratio
    folder, opt = _run_with(tmp_path)
    with folder:
        key, _ = opt.file_of("BLOCK = 2048\n")
        folder.record("done", candidate_hash=key, role="candidate", island="1", verdict="pass", passed=True,
                      trusted=True, speedup=2.0, speedup_ci=[1.9, 2.1], idea="2048")
        timed = []
        monkeypatch.setattr(promotion, "better", lambda opt, k, island: timed.append(k) or Ratio(1.2, 1.1, 1.3))
        monkeypatch.setattr(promotion, "unseen_shapes", lambda opt, k, island: "")  # held_out's own tests
        opt.finish_what_was_in_flight()
        assert timed == [key] and opt.state.incumbents["1"] == key
        assert sorted(opt.state.judged) == sorted([candidate_hash(NARROW.encode()), candidate_hash(WIDE.encode()), key])
        opt.finish_what_was_in_flight()  # nothing left to do: nothing recorded twice
        assert timed == [key] and len(opt.state.judged) == 3


def _journal(*events):
    """Records from (kind, island, hash, ratio) tuples; promotions chain from the previous one's kernel."""
    from kernel_mcp.agent.run.records import parse_record
    records, previous = [], None
    for seq, (kind, island, key, ratio) in enumerate(events):
        fields = {"island": island}
        if kind == "promotion":
            how = "baseline" if ratio is None else "proposal"
            fields.update(candidate_hash=key, how=how, speedup=ratio, previous=previous)
            previous = key
        records.append(parse_record(dict(seq=seq, at=float(seq), kind=kind, **fields)))
    return records


@pytest.mark.parametrize("name, events, island, expected", [
    ("no restart yet", [("promotion", "0", "b", None), ("promotion", "0", "k1", [1.5, 1.4, 1.6])], "0", 0),
    ("the running epoch is not counted", [("promotion", "0", "b", None), ("epoch_started", "0", "", None)], "0", 0),
    ("one epoch ended without a gain", [("promotion", "0", "b", None), ("promotion", "0", "k1", [1.5, 1.4, 1.6]),
                                        ("epoch_started", "0", "", None), ("epoch_started", "0", "", None)], "0", 1),
    ("two in a row stop the run", [("promotion", "0", "b", None), ("epoch_started", "0", "", None),
                                   ("epoch_started", "0", "", None), ("epoch_started", "0", "", None)], "0", 2),
    ("a gain in between resets the count", [("promotion", "0", "b", None), ("epoch_started", "0", "", None),
                                            ("epoch_started", "0", "", None), ("promotion", "0", "k2", [1.3, 1.2, 1.4]),
                                            ("epoch_started", "0", "", None)], "0", 0),
    ("another island's epochs are its own", [("promotion", "0", "b", None), ("epoch_started", "1", "", None),
                                             ("epoch_started", "1", "", None), ("epoch_started", "1", "", None)], "0", 0),
])
def test_epochs_without_gain_count_the_latest_hard_restarts_that_beat_nothing(name, events, island, expected):
    from kernel_mcp.agent.run.facts import epochs_without_gain
    assert epochs_without_gain(_journal(*events), island) == expected, name


def test_two_fruitless_epochs_make_the_ladder_stop_the_island(tmp_path):
    from kernel_mcp.history.stall import StallPolicy, ladder
    folder, opt = _run_with(tmp_path)
    with folder:
        conversation = Conversation(opt, "1")
        for _ in range(3):  # three hard restarts: two epochs ended, neither beat the best (NARROW, 1.4 low)
            conversation._restart(3, "no gain")
        assert opt.facts("1").epochs_without_gain == 2 and opt.facts("0").epochs_without_gain == 0
        assert ladder(set(), None, StallPolicy(), opt.facts("1")) == 4  # L4: stop
        assert ladder(set(), None, StallPolicy(), opt.facts("0")) == 0


def test_a_gain_must_clear_the_runs_noise_margin_from_its_a_a_run(tmp_path, monkeypatch):
    """The same 1.5x [1.4, 1.6] comparison promotes under the 1% floor and does not once the baseline, timed
    against itself, showed a spread that sets the margin at 50%; the A/A run is measured once per run."""
    from kernel_mcp.agent.loop import optimizer, promotion
    from kernel_mcp.stats import Ratio
    timed = []

    def fake_compare(problem, incumbent, candidate, device, settings, runner=None):
        timed.append((incumbent.name, candidate.name))
        return Ratio(1.5, 1.4, 1.6) if incumbent != candidate else Ratio(1.0, 0.8, 1.25)
    monkeypatch.setattr(promotion, "compare_files", fake_compare)
    monkeypatch.setattr(optimizer, "noise_margin", lambda problem, kernel, *rest: (
        fake_compare(problem, kernel, kernel, *rest), 0.5))
    folder, opt = _run_with(tmp_path)
    with folder:
        narrow = candidate_hash(NARROW.encode())
        assert opt.delta == 0.01 and better(opt, narrow, "1") == Ratio(1.5, 1.4, 1.6)
        opt.measure_noise()
        opt.measure_noise()  # once per run
        assert opt.state.delta == 0.5 and [r.kind for r in folder.log.records].count("noise") == 1
        assert better(opt, narrow, "1") is None  # 1.4 does not clear 1.5
    with RunFolder.resume(tmp_path / "run") as again:  # the margin is the journal's: never measured again
        before = len(timed)
        Optimizer(again, PROBLEMS / "vector_add", _start(tmp_path), "anthropic:claude-opus-4-5", Budget(), device="cpu",
                  tune=False).measure_noise()
        assert again.state.delta == 0.5 and len(timed) == before


def test_the_reports_best_so_far_is_the_summarys_best_not_the_narrowest_reference_interval():
    """Kernel a's promotion was confirmed at 1.5x [1.4, 1.6] over the baseline, b's at 1.3x [1.25, 1.35]; b's
    own evaluation against the reference happens to have the tighter, higher interval. The plot, like the
    summary, keeps a: unpaired intervals from separate evaluations do not rank kernels."""
    from kernel_mcp.agent.report.plots import progress_series
    from kernel_mcp.agent.run.facts import confirmed_gains
    from kernel_mcp.agent.run.records import parse_record

    def done(seq, key, speedup, ci):
        return parse_record(dict(seq=seq, at=float(seq), kind="done", candidate_hash=key, passed=True, trusted=True,
                      speedup=speedup, speedup_ci=ci))

    def promotion(seq, island, key, ratio, previous):
        return parse_record(dict(seq=seq, at=float(seq), kind="promotion", island=island, candidate_hash=key,
                      how="proposal" if ratio else "baseline", speedup=ratio, previous=previous))
    records = [done(0, "base", 1.0, [0.98, 1.02]), promotion(1, "0", "base", None, None),
               done(2, "a", 1.5, [1.2, 1.8]), promotion(3, "0", "a", [1.5, 1.4, 1.6], "base"),
               done(4, "b", 1.35, [1.3, 1.4]), promotion(5, "1", "b", [1.3, 1.25, 1.35], "base")]
    gains = confirmed_gains(records)
    assert max(gains, key=lambda k: gains[k][1]) == "a"
    series = progress_series(records)
    assert series["best"] == [1.0, 1.5, 1.5] and series["lo"] == [0.98, 1.2, 1.2]
