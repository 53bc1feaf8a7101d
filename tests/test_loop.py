"""The loop on one island with a model agent (kernel_mcp/agent/loop/optimizer.py, conversation.py), on the CPU: a
loopback Anthropic API plays a scripted model that proposes an improving edit, an edit that does not
apply, a repeat of the best, and a wrong kernel, then runs out of ideas. Real evaluate, profile and git.
The improvement is BLOCK 128 -> 1024 on one 16,384-element shape under the interpreter (~7x): far above any
loaded machine's margin, so these run beside other tests."""
import json

import pytest
from conftest import vector_add_on_one_shape
from fakes.scripted_apis import Move, Scripted

from kernel_mcp.agent.loop.optimizer import Budget, Optimizer
from kernel_mcp.agent.run.folder import RunConfig, RunFolder
from kernel_mcp.agent.run.journal import read


def _edit(old, new):
    return f"<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


MOVES = [
    Move(call=("propose", {"edit": _edit("BLOCK = 128  # elements per program", "BLOCK = 1024  # elements per program"),
                           "idea": "fewer, larger programs"})),
    Move(call=("propose", {"edit": _edit("BLOCK = 4096", "BLOCK = 2048"), "idea": "try 2048"})),
    Move(call=("propose", {"edit": _edit("    mask = offs < n", "    mask = offs < n"), "idea": "the same again"})),
    Move(call=("propose", {"edit": _edit("    tl.store(out_ptr + offs, a + b, mask=mask)",
                                         "    tl.store(out_ptr + offs, a - b, mask=mask)"), "idea": "a shortcut"})),
    Move(text="I have nothing better."),
]


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_a_scripted_model_improves_is_refused_and_runs_dry(tmp_path, monkeypatch):
    problem = vector_add_on_one_shape(tmp_path)  # under the interpreter: time ~ programs
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with Scripted(list(MOVES)) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        config = RunConfig(problem=str(problem), problem_hash="-", agent="anthropic:claude-opus-4-5")
        with RunFolder.create(tmp_path / "run", config) as folder:
            reason = Optimizer(folder, problem, problem / "baseline.py", config.agent, Budget(evaluations=10),
                               device="cpu", budget_s=3.0, shapes="tests", tune=False).run()
            state = folder.state
    assert reason.startswith("stop: the agent proposed nothing"), reason
    records = read(tmp_path / "run" / "journal.jsonl")
    promoted = [r.fields()["candidate_hash"] for r in records if r.kind == "promotion"]
    done = [r.fields() for r in records if r.kind == "done"]
    assert len(done) == 3  # baseline, the improvement, the wrong kernel: nothing for the bad edit or the repeat
    assert [d["role"] for d in done] == ["baseline", "candidate", "candidate"]
    assert promoted == [done[0]["candidate_hash"], done[1]["candidate_hash"]]  # the wrong one never
    assert done[2]["verdict"].startswith("fail") and not done[2]["passed"]
    assert "BLOCK = 1024" in (tmp_path / "run" / "workspace" / "candidates" / f"{promoted[-1]}.py").read_text()
    sent = [json.dumps(r.body) for r in fake.requests]
    assert any("not applied" in s and "not in the file" in s for s in sent)  # the bad edit, said to the model
    assert any("evaluated before" in s for s in sent)
    # every request was a priced turn: (100 input x $5 + 20 output x $25) per million tokens
    assert state.turns == len(fake.requests) and abs(state.spend_usd - 0.001 * state.turns) < 1e-9
    lessons = [r.fields()["verdict"] for r in records if r.kind == "lesson"]
    assert lessons == ["worked", "failed"]
    noise = [r.fields() for r in records if r.kind == "noise"]  # the A/A run, once, before any comparison
    assert len(noise) == 1 and noise[0]["delta"] >= 0.01 and state.delta == noise[0]["delta"]
    first_comparison = min(r.seq for r in records if r.kind == "lesson")
    assert next(r.seq for r in records if r.kind == "noise") < first_comparison


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_a_resumed_run_finishes_what_was_in_flight_and_keeps_its_spend(tmp_path, monkeypatch):
    """The state a kill -9 leaves mid-evaluation: the baseline evaluated and promoted, $0.50 spent, a
    candidate's intent written and no result. Resumed, the loop evaluates that candidate once (and promotes
    it on its confirmed gain), never adds the baseline again, and adds the new turns to the old spend."""
    from kernel_mcp.agent.run.folder import candidate_hash
    problem = vector_add_on_one_shape(tmp_path)
    baseline = (problem / "baseline.py").read_text()
    faster = baseline.replace("BLOCK = 128", "BLOCK = 1024")
    config = RunConfig(problem=str(problem), problem_hash="-", agent="anthropic:claude-opus-4-5")
    with RunFolder.create(tmp_path / "run", config) as folder:  # what the killed process had made durable
        candidates = tmp_path / "run" / "workspace" / "candidates"
        candidates.mkdir(parents=True)
        base_key, fast_key = candidate_hash(baseline.encode()), candidate_hash(faster.encode())
        (candidates / f"{base_key}.py").write_text(baseline)
        (candidates / f"{fast_key}.py").write_text(faster)
        folder.record("intent", candidate_hash=base_key, role="baseline", island="0")
        folder.record("done", candidate_hash=base_key, role="baseline", island="0", verdict="pass", passed=True,
                      trusted=True, speedup=1.0)
        folder.record("promotion", island="0", candidate_hash=base_key)
        folder.record("turn", usage={"input": 1000}, cost_usd=0.5)
        folder.record("intent", candidate_hash=fast_key, role="candidate", island="0", idea="larger blocks")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with Scripted([Move(text="Nothing more.")]) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        with RunFolder.resume(tmp_path / "run") as folder:
            Optimizer(folder, problem, problem / "baseline.py", config.agent, Budget(evaluations=10),
                      device="cpu", budget_s=3.0, shapes="tests", tune=False).run()
            state = folder.state
    records = read(tmp_path / "run" / "journal.jsonl")
    assert [r.fields()["role"] for r in records if r.kind == "done"] == ["baseline", "candidate"]
    assert state.incumbents["0"] == fast_key and not state.pending
    assert abs(state.spend_usd - (0.5 + 0.001 * len(fake.requests))) < 1e-9 and state.resumptions == 1
