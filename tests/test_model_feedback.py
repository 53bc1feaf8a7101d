"""The headless model agent sees what the instruments measure, and can be steered (agent/loop/feedback.py,
statement.py, held_out.py, agent/run/steer.py). Each scripted model below can reach its target only by
reading what it is sent, and each test runs it again with that information withheld to show that the
information is what made the difference. Real evaluate, check, profile and git on the CPU, through a
loopback Anthropic Messages API. The problem is vector_add on one 16,384-element shape, where BLOCK 128 ->
1024 is ~7x under the interpreter: far above any loaded machine's margin."""
import json
import re
import secrets

import pytest
from conftest import vector_add_on_one_shape
from fakes.scripted_apis import Move, Reacting, sent_last

from kernel_mcp.agent.loop import optimizer as optimizer_module
from kernel_mcp.agent.loop.held_out import held_out_shapes
from kernel_mcp.agent.loop.optimizer import Budget, Optimizer
from kernel_mcp.agent.report.report import report
from kernel_mcp.agent.run.folder import RunConfig, RunFolder
from kernel_mcp.agent.run.journal import read
from kernel_mcp.agent.run.steer import post_hint
from kernel_mcp.errors import UsageError
from kernel_mcp.problem import load_problem

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
AGENT = "anthropic:claude-opus-4-5"
STORE = "    tl.store(out_ptr + offs, a + b, mask=mask)"
FAST = ("BLOCK = 128  # elements per program", "BLOCK = 1024  # elements per program")
TIMING_S = 1.0  # per timing run: a 7x step needs few samples, and each loop here runs about ten of them
LAUNCH = "    _add_kernel[(triton.cdiv(n, BLOCK),)](a, b, out, n, BLOCK=BLOCK)"


def _edit(*pairs):
    return "".join(f"<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n" for old, new in pairs)


def _propose(idea, *pairs):
    return Move(call=("propose", {"edit": _edit(*pairs), "idea": idea}))


def _run(tmp_path, monkeypatch, policy, evaluations=6, during=None, start=None):
    """The loop with ``policy`` as the model (from ``start``'s source, else the baseline); the journal's
    records and the loopback server."""
    problem = vector_add_on_one_shape(tmp_path)
    if start:
        (problem / "baseline.py").write_text(start((problem / "baseline.py").read_text()))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with Reacting(policy) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        config = RunConfig(problem=str(problem), problem_hash="-", agent=AGENT)
        with RunFolder.create(tmp_path / "run", config) as folder:
            if during:
                fake.on_turn = during
            Optimizer(folder, problem, problem / "baseline.py", AGENT, Budget(evaluations=evaluations), device="cpu",
                      budget_s=TIMING_S, shapes="tests", tune=False).run()
    return read(tmp_path / "run" / "journal.jsonl"), fake


def _source(tmp_path, candidate_hash):
    return (tmp_path / "run" / "workspace" / "candidates" / f"{candidate_hash}.py").read_text()


def _believed_proposals(tmp_path, records):
    """The sources of the proposals that passed with no integrity finding. A repair's target is a correct
    kernel: whether a loaded machine also shows its gain as significant is the decision rule's business
    (tests/test_decide.py), so these tests do not ask for the promotion."""
    return [_source(tmp_path, r.candidate_hash) for r in records
            if r.kind == "done" and r.role == "candidate" and r.believed]


def _withhold_feedback(monkeypatch):
    """The answer a model got before this issue: the verdict and the decision, nothing measured."""
    monkeypatch.setattr(optimizer_module, "feedback_of", lambda result: f"verdict: {result.verdict}")


def _mismatch_fixer():
    """Proposes BLOCK 1024 with three elements handled apart (at secret indices), one of them wrongly; then
    sends the same proposal with the line that handles the element the first mismatch names repaired.
    Nothing in the code tells which line is wrong: without an index it has nothing to repair."""
    first, wrong, third = secrets.SystemRandom().sample(range(1, 16384), 3)
    special = ("    value = a + b\n"
               f"    value = tl.where(offs == {first}, b + a, value)\n"
               f"    value = tl.where(offs == {wrong}, a - b, value)\n"
               f"    value = tl.where(offs == {third}, a + b, value)\n"
               "    tl.store(out_ptr + offs, value, mask=mask)")

    def policy(last, request):
        if len(request["messages"]) == 1:
            return _propose("larger blocks", FAST, (STORE, special))
        found = re.search(r"index \[(\d+)\]: got", last)
        if found and "fail" in last:
            named = f"offs == {found.group(1)},"
            repaired = "\n".join(re.sub(r", [ab] [-+] [ab], value\)", ", a + b, value)", line) if named in line else line
                                 for line in special.splitlines())
            return _propose(f"repair element {found.group(1)}", FAST, (STORE, repaired))
        return Move(text="Nothing more to try.")
    return policy


def test_a_model_repairs_the_element_the_first_mismatch_names(tmp_path, monkeypatch):
    records, _ = _run(tmp_path, monkeypatch, _mismatch_fixer())
    assert [r.role for r in records if r.kind == "done"] == ["baseline", "candidate", "candidate"]
    [repaired] = _believed_proposals(tmp_path, records)
    assert "BLOCK = 1024" in repaired and "a - b" not in repaired


def test_without_the_mismatch_the_same_model_cannot_repair_it(tmp_path, monkeypatch):
    _withhold_feedback(monkeypatch)
    records, _ = _run(tmp_path, monkeypatch, _mismatch_fixer())
    assert _believed_proposals(tmp_path, records) == []


BROKEN = "    c = tl.not_a_function(a)"


def _line_repairer():
    """Proposes BLOCK 1024 with three new lines in the kernel, in a secret order, one of which does not
    compile; then sends the same proposal without the line the build error names (counted in the source it
    proposed). Without a line number it cannot tell which to drop."""
    extra = ["    c = a * 1.0", BROKEN, "    e = b * 1.0"]
    secrets.SystemRandom().shuffle(extra)
    seen = {}

    def policy(last, request):
        if len(request["messages"]) == 1:
            opening = request["messages"][0]["content"][-1]["text"]
            source = re.search(r"```python\n(.*?)```", opening, re.S).group(1)
            seen["source"] = source.replace(FAST[0], FAST[1]).replace(STORE, "\n".join(extra + [STORE]))
            return _propose("larger blocks", FAST, (STORE, "\n".join(extra + [STORE])))
        found = re.search(r"\.py:(\d+): ", last)
        if found and "build failed" in last:
            named = seen["source"].splitlines()[int(found.group(1)) - 1]
            kept = [line for line in extra if line != named]
            return _propose("drop the line that does not build", FAST, (STORE, "\n".join(kept + [STORE])))
        return Move(text="Nothing more to try.")
    return policy


def test_a_model_repairs_the_line_a_build_error_names(tmp_path, monkeypatch):
    records, _ = _run(tmp_path, monkeypatch, _line_repairer())
    done = [r for r in records if r.kind == "done"]
    assert [d.verdict for d in done][1] == "compile failed"
    [repaired] = _believed_proposals(tmp_path, records)
    assert "not_a_function" not in repaired and "BLOCK = 1024" in repaired


def test_without_the_build_error_the_same_model_cannot_repair_it(tmp_path, monkeypatch):
    _withhold_feedback(monkeypatch)
    records, _ = _run(tmp_path, monkeypatch, _line_repairer())
    assert _believed_proposals(tmp_path, records) == []


def _hint_follower(last, request):
    """Tries one change of no consequence, then does what a person's hint says (BLOCK = N), if one came."""
    hint = re.search(r"steering this search says.*?BLOCK = (\d+)", last, re.S)
    if hint:
        return _propose("as the hint says", (FAST[0], f"BLOCK = {hint.group(1)}  # elements per program"))
    if len(request["messages"]) == 1:
        return _propose("a named mask", ("    mask = offs < n", "    inside = offs < n\n    mask = inside"))
    return Move(text="Nothing more to try.")


def _steer_after_first_turn(run):
    def during(turn):
        if turn == 1:  # the person speaks while the first proposal is being evaluated
            post_hint(run, "Try BLOCK = 2048: programs cost the same whatever their size here.")
    return during


def test_a_hint_given_mid_run_reaches_the_model_and_the_report(tmp_path, monkeypatch):
    records, fake = _run(tmp_path, monkeypatch, _hint_follower, during=_steer_after_first_turn(tmp_path / "run"))
    hints = [r for r in records if r.kind == "hint"]
    assert len(hints) == 1 and "BLOCK = 2048" in hints[0].text
    assert any("BLOCK = 2048" in source for source in _believed_proposals(tmp_path, records))
    assert not list((tmp_path / "run" / "hints").glob("*.txt"))  # journaled once, then taken from the inbox
    text = report(tmp_path / "run").read_text()
    assert "Hint (record" in text and "as the hint says" in text


def test_without_the_hint_the_same_model_finds_nothing(tmp_path, monkeypatch):
    records, _ = _run(tmp_path, monkeypatch, _hint_follower)
    assert not any("BLOCK = 2048" in source for source in _believed_proposals(tmp_path, records))


def test_a_kernel_that_games_the_listed_shapes_is_never_promoted(tmp_path, monkeypatch):
    """BLOCK 1024 with no tail program (``n // BLOCK``): every size the task lists is a multiple of 16,384,
    and so is the unlisted shape each check serves (worker/judge/shapes.py keeps the listed sizes' common
    divisor), so every check passes and it is ~7x faster; a ragged size loses its tail. It fails the
    held-out shapes that the baseline passes, and is refused with the reason said to the model."""
    def policy(last, request):
        if len(request["messages"]) == 1:
            return _propose("larger blocks, no tail program", FAST,
                            (LAUNCH, NO_TAIL))
        return Move(text="Nothing more to try.")
    records, fake = _run(tmp_path, monkeypatch, policy)
    assert [r.verdict for r in records if r.kind == "done"] == ["pass", "pass"]  # every check it was given
    assert [r.how for r in records if r.kind == "promotion"] == ["baseline"]
    held = [r for r in records if r.kind == "held_out"]
    assert len(held) == 1 and held[0].refused.startswith("it fails on shapes it was not shown")
    assert all(s["n"] != 16384 and s["n"] % 2 for s in held[0].shapes)
    assert [r.verdict for r in records if r.kind == "lesson"] == ["rejected"]
    assert any("not promoted: it fails on shapes it was not shown" in sent_last(r.body) for r in fake.requests)


NO_TAIL = "    _add_kernel[(n // BLOCK,)](a, b, out, n, BLOCK=BLOCK)"


def test_a_faster_kernel_is_not_held_to_more_than_the_kernel_it_replaces(tmp_path, monkeypatch):
    """The same kernel, from a start that has no tail program either: the held-out shapes fail both, so
    they are no fair test here, and the gain is promoted (a problem whose kernels may assume its sizes)."""
    def policy(last, request):
        if len(request["messages"]) == 1:
            return _propose("larger blocks", FAST)
        return Move(text="Nothing more to try.")
    records, _ = _run(tmp_path, monkeypatch, policy, start=lambda source: source.replace(LAUNCH, NO_TAIL))
    assert [r.how for r in records if r.kind == "promotion"] == ["baseline", "proposal"]
    held = [r for r in records if r.kind == "held_out"]
    assert len(held) == 1 and held[0].refused == ""


def test_the_first_prompt_states_the_problem(tmp_path, monkeypatch):
    records, fake = _run(tmp_path, monkeypatch, lambda last, request: Move(text="Nothing."))
    system = fake.requests[0].body["system"][0]["text"]
    for part in ("## The reference (reference.py)", "def ref_kernel", "'n': 16384", "## Precision contract",
                 "float64 run of the reference", "## The starting kernel, as measured", "us vs the reference's"):
        assert part in system, part


def test_held_out_shapes_move_only_sizes_and_never_repeat_a_listed_shape(tmp_path):
    problem = load_problem(vector_add_on_one_shape(tmp_path))  # one shape: n moves, itemsize (4) does not
    for _ in range(20):
        for shape in held_out_shapes(problem, "tests"):
            assert shape["itemsize"] == 4 and shape["n"] % 2 == 1 and 0.5 * 16384 < shape["n"] < 0.95 * 16384
    many = load_problem("vector_add")  # sizes that vary between the listed shapes move; none is listed
    listed = [{k: v for k, v in s.items() if k != "seed"} for s in many.tests + many.benchmarks]
    for shape in held_out_shapes(many, "benchmarks"):
        assert {k: v for k, v in shape.items() if k != "seed"} not in listed


def test_steer_refuses_what_is_not_a_hint_to_a_run(tmp_path):
    with pytest.raises(UsageError, match="not a run folder"):
        post_hint(tmp_path, "try split-K")
    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(UsageError, match="empty"):
        post_hint(tmp_path, "  ")
    with pytest.raises(UsageError, match="at most"):
        post_hint(tmp_path, "x" * 5000)
    assert post_hint(tmp_path, "try split-K").read_text() == "try split-K"


def _prober(last, request):
    """Profiles two block sizes without proposing either, then proposes the one the numbers say is faster;
    with no numbers in the answers it does not guess."""
    asked = sum(1 for m in request["messages"] if m["role"] == "assistant")
    if asked < 2:
        block = (256, 1024)[asked]
        return Move(call=("profile", {"edit": _edit((FAST[0], f"BLOCK = {block}  # elements per program"))}))
    measured = [float(x) for x in re.findall(r"([\d.]+)x the current best's speed", json.dumps(request["messages"]))]
    if asked == 2 and len(measured) == 2:
        block = (256, 1024)[measured.index(max(measured))]
        return _propose("the faster block size, as profiled", (FAST[0], f"BLOCK = {block}  # elements per program"))
    return Move(text="Nothing more to try.")


def test_a_model_picks_what_its_instruments_measured_and_each_call_is_charged(tmp_path, monkeypatch):
    records, fake = _run(tmp_path, monkeypatch, _prober, evaluations=8)
    probes = [r for r in records if r.kind == "probe_done"]
    assert [(p.tool, p.charged) for p in probes] == [("profile", True), ("profile", True)]
    [proposed] = _believed_proposals(tmp_path, records)
    assert "BLOCK = 1024" in proposed
    assert {r.how for r in records if r.kind == "promotion"} <= {"baseline", "proposal"}  # only propose promotes
    tools = [t["name"] for t in fake.requests[0].body["tools"]]
    assert tools[0] == "propose" and {"compile", "check", "profile", "roofline", "history", "diff"} <= set(tools)
    from kernel_mcp.agent.report.summary import summarize
    summary = summarize(tmp_path / "run")
    assert (summary.instrument_calls, summary.instrument_runs, summary.evaluations) == (2, 2, 2)
    assert "| 2 (2) |" in report(tmp_path / "run").read_text()  # the cost table counts them


def test_without_the_numbers_the_same_model_does_not_guess(tmp_path, monkeypatch):
    from kernel_mcp.agent.loop import instruments
    monkeypatch.setattr(instruments, "run_lines", lambda *args, **kwargs: [])
    records, _ = _run(tmp_path, monkeypatch, _prober, evaluations=8)
    assert _believed_proposals(tmp_path, records) == []


def test_an_instrument_call_answered_before_a_kill_is_never_run_again(tmp_path, monkeypatch):
    """The run folder a kill -9 leaves after a profile call's answer was cached: the resumed run answers the
    same question from the cache (journaled, not charged) and runs nothing; the evaluation budget counts
    the one call that ran."""
    from kernel_mcp.agent.loop import instruments
    from kernel_mcp.agent.loop.instruments import probe
    problem = vector_add_on_one_shape(tmp_path)
    config = RunConfig(problem=str(problem), problem_hash="-", agent=AGENT)
    edit = _edit((FAST[0], "BLOCK = 256  # elements per program"))
    with RunFolder.create(tmp_path / "run", config) as folder:
        opt = Optimizer(folder, problem, problem / "baseline.py", AGENT, Budget(evaluations=2), device="cpu",
                        budget_s=2.0, shapes="tests", tune=False)
        key, _ = opt.evaluate(opt.start_source, "baseline", "0")
        opt.promote(key, "0", None, how="baseline")
        first, error = probe(opt, "0", "profile", {"edit": edit})
        assert not error and "the current best's speed" in first
        assert opt.out_of_budget() == "budget: 2 evaluations"  # the baseline and the profile call

    def no_second_run(*args, **kwargs):
        raise AssertionError("an answered instrument call ran again")
    monkeypatch.setattr(instruments, "profile", no_second_run)
    with RunFolder.resume(tmp_path / "run") as folder:
        opt = Optimizer(folder, problem, problem / "baseline.py", AGENT, Budget(evaluations=2), device="cpu",
                        budget_s=2.0, shapes="tests", tune=False)
        again, error = probe(opt, "0", "profile", {"edit": edit})
        assert again == first and not error and folder.state.probes == 1
        text, error = probe(opt, "0", "diff", {"a": key[:8]})
        assert not error and "the two kernels are the same" in text
        text, error = probe(opt, "0", "check", {"edit": _edit(("no such line", "x"))})
        assert error and "not applied" in text
    done = [(r.tool, r.charged) for r in read(tmp_path / "run" / "journal.jsonl") if r.kind == "probe_done"]
    assert done == [("profile", True), ("profile", False), ("diff", False)]



def test_a_held_out_check_made_before_a_kill_is_not_run_again(tmp_path, monkeypatch):
    """A kill after the held-out check's record and before the promotion it decides: the resumed run's
    judgement takes the journaled answer (a refusal stays a refusal) and runs no kernel again; beside a
    different best, the check is a new question and runs."""
    from kernel_mcp.agent.loop import promotion
    from kernel_mcp.agent.loop.promotion import unseen_shapes
    problem = vector_add_on_one_shape(tmp_path)
    config = RunConfig(problem=str(problem), problem_hash="-", agent=AGENT)
    gaming = (problem / "baseline.py").read_text().replace(*FAST).replace(LAUNCH, NO_TAIL)
    with RunFolder.create(tmp_path / "run", config) as folder:
        opt = Optimizer(folder, problem, problem / "baseline.py", AGENT, Budget(evaluations=4), device="cpu",
                        budget_s=1.0, shapes="tests", tune=False)
        base, _ = opt.evaluate(opt.start_source, "baseline", "0")
        opt.promote(base, "0", None, how="baseline")
        key, _ = opt.evaluate(gaming, "candidate", "0", "no tail")
        refused = unseen_shapes(opt, key, "0")
        assert refused.startswith("it fails on shapes it was not shown")

    def no_second_run(*args, **kwargs):
        raise AssertionError("a held-out check ran again")
    monkeypatch.setattr(promotion, "held_out_failure", no_second_run)
    with RunFolder.resume(tmp_path / "run") as folder:
        opt = Optimizer(folder, problem, problem / "baseline.py", AGENT, Budget(evaluations=4), device="cpu",
                        budget_s=1.0, shapes="tests", tune=False)
        assert unseen_shapes(opt, key, "0") == refused
        held = [r for r in folder.log.of_kind("held_out")]
        assert len(held) == 1 and held[0].incumbent == base and held[0].seconds > 0
        other, _ = opt.evaluate(opt.start_source.replace(*FAST), "candidate", "0", "larger blocks")
        opt.promote(other, "0", None, how="proposal")
        with pytest.raises(AssertionError, match="ran again"):
            unseen_shapes(opt, key, "0")  # beside another best: asked afresh


def test_a_cli_agents_instrument_runs_are_journaled_and_charged(tmp_path):
    """A CLI agent's check through the run's MCP endpoint runs on a ChargedRunner: journaled as a probe and
    counted against the evaluation budget, like an API model's."""
    from kernel_mcp.agent.loop.instruments import ChargedRunner
    from kernel_mcp.tools.check import check
    problem = vector_add_on_one_shape(tmp_path)
    config = RunConfig(problem=str(problem), problem_hash="-", agent="claude-code")
    with RunFolder.create(tmp_path / "run", config) as folder:
        opt = Optimizer(folder, problem, problem / "baseline.py", "claude-code", Budget(evaluations=1), device="cpu",
                        budget_s=2.0, shapes="tests", tune=False)
        assert check(problem, problem / "baseline.py", device="cpu", runner=ChargedRunner(opt, "0")).passed
        assert [(r.kind, r.tool) for r in folder.log.records if r.kind.startswith("probe")] == [
            ("probe", "check"), ("probe_done", "check")]
        assert opt.out_of_budget() == "budget: 1 evaluations"
