"""What a run's summary, console and report show from its journal: every timing decision with the margin it
had to clear and why nothing counted; HTML that renders its Markdown; plots that show the search even
after a single evaluation (journals written here record by record, as the loop writes them)."""
import io

from rich.console import Console

from kernel_mcp.agent.report.decisions import decisions, why_no_gain
from kernel_mcp.agent.run.folder import RunConfig, RunFolder


def _run_of_one_evaluation(path, compared=((1.26, 1.11, 1.42),), delta=0.26, promoted=False):
    """A tune run as the loop journals it: the baseline evaluated and promoted, the A/A run, the tuner's
    comparisons (BLOCK 1024 -> 2048, 4096...), finished."""
    folder = RunFolder.create(path, RunConfig(problem=str(path / "vector_add"), problem_hash="-", agent="tune"))
    (path / "workspace" / "candidates").mkdir(parents=True)
    (path / "workspace" / "candidates" / "base.py").write_text("BLOCK = 1024\n")
    folder.record("intent", candidate_hash="base", role="baseline", island="0")
    folder.record("done", candidate_hash="base", role="baseline", island="0", verdict="pass", passed=True,
                  trusted=True, speedup=1.02, speedup_ci=[0.97, 1.07])
    folder.record("promotion", island="0", candidate_hash="base", speedup=None, how="baseline", previous=None)
    folder.record("noise", ratio=[1.0, 0.89, 1.13], delta=delta)
    for i, ratio in enumerate(compared):
        folder.record("tune_step", island="0", start_hash="base", what="compare", config={"BLOCK": 2048 << i},
                      against={"BLOCK": 1024 << i}, ratio=list(ratio) if ratio else None, seconds=7.5)
    folder.record("tuned", island="0", start_hash="base", best_hash="base", params={"BLOCK": [1024, 2048]},
                  start={"BLOCK": 1024}, best={"BLOCK": 1024}, speedup=None)
    folder.record("finished", reason="tuned: the search over the kernel's parameters is done")
    folder.close()
    return path


def test_every_comparison_is_a_decision_with_the_margin_in_force_and_whether_it_counted(tmp_path):
    from kernel_mcp.agent.run.journal import read
    run = _run_of_one_evaluation(tmp_path / "run", compared=[(1.26, 1.11, 1.42), (1.9, 1.5, 2.3), None])
    found = decisions(read(run / "journal.jsonl"))
    assert [d.what for d in found] == ["noise", "compare", "compare", "compare"]
    assert [d.step for d in found] == [2, 3, 4, 5]  # the baseline's evaluation is step 1
    assert [d.change for d in found[1:]] == ["BLOCK 1024 -> 2048", "BLOCK 2048 -> 4096", "BLOCK 4096 -> 8192"]
    assert all(abs(d.needs - 1.26) < 1e-9 for d in found[1:])
    assert [d.counted for d in found[1:]] == [False, True, False] and found[3].failed


def test_a_run_without_a_gain_says_which_comparison_came_closest_and_the_margin_it_missed(tmp_path):
    from kernel_mcp.agent.report.summary import summarize
    summary = summarize(_run_of_one_evaluation(tmp_path / "run"))
    assert summary.promotions == 0
    assert "BLOCK 1024 -> 2048" in summary.why_no_gain and "1.26x [1.11, 1.42]" in summary.why_no_gain
    assert "exceeds 1.26x" in summary.why_no_gain
    assert why_no_gain([], promotions=0) == "no configuration was compared"
    assert why_no_gain(summary.decisions, promotions=1) is None


def test_the_console_summary_shows_each_comparison_against_its_margin(tmp_path):
    from kernel_mcp.agent.report.summary import summarize
    from kernel_mcp.cli.optimize import print_summary
    run = _run_of_one_evaluation(tmp_path / "run")
    out = Console(width=100, file=io.StringIO(), record=True)
    print_summary(summarize(run), run / "report" / "report.md", out)
    text = out.export_text()
    for shown in ("BLOCK 1024 -> 2048", "1.26x [1.11, 1.42]", ">1.26x", "under the margin", "sets the margin",
                  "no confirmed improvement: no gain cleared the noise margin"):
        assert shown in text, text


def test_the_html_report_renders_its_markdown_and_shows_the_timing_decisions(tmp_path):
    from kernel_mcp.agent.report.report import report
    run = _run_of_one_evaluation(tmp_path / "run", compared=[(1.9, 1.5, 2.3)])
    report(run)
    page = (run / "report" / "report.html").read_text()
    assert "**" not in page and "`" not in page, page
    assert "<code>vector_add</code>" in page and "Timing decisions" in page and "BLOCK 1024 -&gt; 2048" in page
    assert "<img src='progress.png'" in page


def test_after_one_evaluation_the_plots_draw_the_best_line_its_band_and_every_comparison(tmp_path):
    """The legend names only what is drawn: a best-so-far line with two ends, a band, the comparisons; the
    step axis has integer ticks."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    from kernel_mcp.agent.report import plots as report_plots
    from kernel_mcp.agent.run.journal import read
    run = _run_of_one_evaluation(tmp_path / "run", compared=[(1.26, 1.11, 1.42), (1.9, 1.5, 2.3)])
    records = read(run / "journal.jsonl")
    series = report_plots.progress_series(records)
    fig, (top, bottom) = plt.subplots(2, 1)
    report_plots._evaluations(top, series, by_step=True)
    report_plots._comparisons(bottom, decisions(records), by_step=True)
    report_plots._x_axis(bottom, series, by_step=True)
    handles, labels = top.get_legend_handles_labels()
    line = handles[labels.index("best so far")]
    assert len(set(line.get_xdata())) >= 2 and line.get_xdata()[-1] == 4  # from the baseline to the last step
    assert isinstance(handles[labels.index("its 95% interval")], PolyCollection)
    _, bottom_labels = bottom.get_legend_handles_labels()
    assert {"counted", "under the margin", "A/A run (the baseline against itself)"} <= set(bottom_labels)
    ticks = [t for t in bottom.get_xticks() if 0.5 <= t <= 4.5]
    assert ticks and all(float(t).is_integer() for t in ticks)
    plt.close(fig)
    assert report_plots.plot_progress(records, tmp_path) == ["progress.png", "progress_time.png"]


def test_a_resumed_runs_live_view_and_summary_show_one_elapsed_time(tmp_path):
    """Active seconds over both processes (the dead one's up to its last heartbeat), in the live view while
    the run is driven and in the summary after: never this process's clock beside the run's."""
    from kernel_mcp.agent.report.progress import LiveView
    from kernel_mcp.agent.run.records import parse_record
    from kernel_mcp.agent.run.state import derive
    records = [parse_record(dict(seq=0, at=1000.0, kind="run_started")), parse_record(dict(seq=1, at=1200.0, kind="noise", delta=0.1)),
               parse_record(dict(seq=2, at=5000.0, kind="resumed", last_alive=1247.0)),
               parse_record(dict(seq=3, at=5020.0, kind="finished", reason="budget: 267 s"))]
    running = derive(records[:3])
    assert running.elapsed_s(now=5010.0) == 257.0  # 247 s before the kill, 10 s since the resume
    done = derive(records)
    assert done.elapsed_s(now=9999.0) == done.active_s == 267.0  # a finished run's clock has stopped
    view = LiveView(Console(width=100, file=io.StringIO(), record=True))
    view.state = done
    view.console.print(view._render())
    assert "267 s" in view.console.export_text()
    busy = derive(records[:3] + [parse_record(dict(seq=3, at=5001.0, kind="probe_done", tool="profile", key="k",
                                                   charged=True)),
                                 parse_record(dict(seq=4, at=5002.0, kind="hint", id="1-2", text="try split-K"))])
    view.state = busy
    view.console.print(view._render())
    assert "0 evaluations (+1 instrument runs), 1 hints, 0 restarts" in view.console.export_text()
