"""Lessons rendered into a restart's brief (kernel_mcp/agent/loop/lessons.py): numbers kept, budget held."""
from kernel_mcp.agent.loop.lessons import render_brief
from kernel_mcp.agent.run.records import Lesson


def test_the_brief_keeps_each_claims_numbers_and_sections():
    lessons = [Lesson(hypothesis="bigger tiles amortise loads", change="BLOCK_M 64 -> 128", verdict="worked",
                      speedup=1.31, speedup_ci=[1.27, 1.35], bottleneck="compute-bound at 38% of bf16 peak",
                      evaluation=3, avenue="open"),
               Lesson(hypothesis="split-K for more parallelism", change="split-K 4", verdict="failed",
                      failure="fail: mismatch", evaluation=5, insight="split-K needs an fp32 workspace", avenue="closed"),
               Lesson(hypothesis="fewer stages", change="num_stages 4 -> 2", verdict="slower", speedup=0.91,
                      speedup_ci=[0.89, 0.93], evaluation=4)]
    brief = render_brief(lessons)
    assert "## What worked" in brief and "1.31x [1.27, 1.35]" in brief and "38% of bf16 peak" in brief
    did_not = brief.split("## What did not work")[1].split("##")[0]
    assert did_not.index("split-K 4") < did_not.index("num_stages")  # the most recent first
    assert "fail: mismatch" in brief and "fp32 workspace" in brief
    assert "## Closed avenues" in brief and "## Open avenues" in brief


def test_the_brief_holds_its_budget_and_says_what_it_left_out():
    lessons = [Lesson(hypothesis="h" * 80, change=f"change {i}", verdict="no gain", evaluation=i) for i in range(200)]
    brief = render_brief(lessons, budget_chars=2000)
    assert len(brief) <= 2000 and "more" in brief and "change 199" in brief and "change 0:" not in brief
    assert render_brief([]) == ""
