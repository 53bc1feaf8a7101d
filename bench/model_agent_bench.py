"""What the model agent's instruments cost, and whether a model can act on what they say (issue 37), on a
real device: one ``optimize`` run with a scripted model that measures before it proposes.

    python bench/model_agent_bench.py OUT_DIR [--problem problems/matmul_bf16] [--device cuda] [--timing 4]
                                      [--budget 6] [--no-counters]

The model is a loopback Anthropic Messages API served by this process (tests/fakes/scripted_apis.py). It
can only act on the text it is sent. Its first session:

1. ``roofline`` on the current best (the baseline): it reads the bound the answer names;
2. ``profile`` of the edit that bound calls for, timed beside the best (compute-bound: bigger tiles, more
   reuse per byte loaded; memory-bound: longer K steps, fewer, larger loads; latency-bound or none named:
   a modest tile change);
3. ``counters`` of that edit (skipped with ``--no-counters``, or when a CPU has none to read);
4. ``propose`` of the edit, its idea naming the bound it acted on.

Then it has nothing more to try. The loop runs without the tune agent (``tune=False``), so every device
second after the baseline is the model's. ``--budget`` is the evaluation count (instrument runs count).

Measured, from the run's journal and the requests the server received:

* the system prompt's size and each request's (characters, and tokens estimated at characters / 4: the
  loopback server cannot count a provider's tokens, and a real tokenizer differs by some 10-20%), and how
  much each turn adds;
* each instrument's wall seconds (its ``probe`` record to its ``probe_done``);
* each evaluation's seconds (``intent`` to ``done``) and the held-out check's (its record's ``seconds``: both
  kernels on the secret shapes; ``since_done_s`` adds the two interleaved comparisons before it);
* the bound the roofline named, the edit chosen from it, and what became of it (verdict, speedup,
  promoted or not).

Writes OUT_DIR/summary.json and prints it; the run folder is OUT_DIR/run.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fakes.scripted_apis import Move, Reacting  # noqa: E402  (the tests' loopback server)

from kernel_mcp.agent.loop.optimizer import Budget, Optimizer  # noqa: E402
from kernel_mcp.agent.run.folder import RunConfig, RunFolder  # noqa: E402
from kernel_mcp.agent.run.journal import read  # noqa: E402

AGENT = "anthropic:claude-opus-4-5"
TILES = "BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 32"  # the bundled matmul baseline's tile line
EDIT_FOR_BOUND = {  # what a sensible model tries for each bound the roofline names (matmul tiles)
    "compute": "BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 32",  # more reuse per byte, fuller tensor-core tiles
    "memory": "BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 64",  # fewer, larger loads along K
    "latency": "BLOCK_M, BLOCK_N, BLOCK_K = 64, 64, 32",
}


def bound_named(text: str) -> str:
    """The bound a roofline answer names most often ("(compute-bound)", "(latency/underutilised-bound)" per
    shape); "" if none."""
    found = re.findall(r"\b(compute|memory|latency)(?:/underutilised)?-bound", text)  # tools/roofline.py's labels
    return max(set(found), key=found.count) if found else ""


class Policy:
    """The scripted model: its moves depend on its own turn in the session and on what it was told."""

    def __init__(self, counters: bool):
        self.counters, self.proposed, self.bound, self.edit = counters, False, "", ""

    def __call__(self, last: str, request: dict) -> Move:
        turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if self.proposed:
            return Move(text="Nothing more to try.")
        if turn == 0:
            return Move(call=("roofline", {}))
        if turn == 1:
            self.bound = bound_named(last)
            new = EDIT_FOR_BOUND.get(self.bound, EDIT_FOR_BOUND["latency"])
            self.edit = f"<<<<<<< SEARCH\n{TILES}\n=======\n{new}\n>>>>>>> REPLACE\n"
            return Move(call=("profile", {"edit": self.edit}))
        if turn == 2 and self.counters:
            return Move(call=("counters", {"edit": self.edit}))
        self.proposed = True
        tiles = EDIT_FOR_BOUND.get(self.bound, EDIT_FOR_BOUND["latency"]).split("= ")[1]
        return Move(call=("propose", {"edit": self.edit, "idea": f"{self.bound or 'no bound named'}: tiles {tiles}"}))


def request_sizes(fake) -> list[dict]:
    """Per Messages request: characters of the system prompt, of the tools, of the whole body, and of the
    newest message (what that turn added)."""
    rows = []
    for seen in fake.requests:
        if seen.method != "POST" or not seen.path.split("?")[0].endswith("/v1/messages"):
            continue
        body = seen.body
        system = body.get("system", "")
        system_chars = len(system) if isinstance(system, str) else sum(len(b.get("text", "")) for b in system)
        rows.append({"system_chars": system_chars, "tools_chars": len(json.dumps(body.get("tools", []))),
                     "total_chars": len(json.dumps(body)), "newest_chars": len(json.dumps(body["messages"][-1])),
                     "messages": len(body["messages"])})
    return rows


def timings(records) -> dict:
    """Seconds per instrument call, per evaluation and per held-out check, from the journal's stamps."""
    probes, evals, held = [], [], []
    opened: dict[str, object] = {}
    done_at: dict[str, float] = {}
    for r in records:
        if r.kind == "probe":
            opened[r.key] = r
        elif r.kind == "probe_done":
            start = opened.pop(r.key, None)
            probes.append({"tool": r.tool, "charged": r.charged,
                           "seconds": round(r.at - start.at, 2) if start else None})
        elif r.kind == "intent":
            opened["eval-" + r.candidate_hash] = r
        elif r.kind == "done":
            start = opened.pop("eval-" + r.candidate_hash, None)
            done_at[r.candidate_hash] = r.at
            evals.append({"role": r.role, "verdict": r.verdict, "speedup": r.speedup, "idea": r.idea,
                          "roofline_percent": r.roofline_percent,
                          "seconds": round(r.at - start.at, 2) if start else None})
        elif r.kind == "held_out":
            since = done_at.get(r.candidate_hash)
            held.append({"shapes": r.shapes, "refused": r.refused, "seconds": r.seconds,
                         "since_done_s": round(r.at - since, 2) if since else None})
    return {"instruments": probes, "evaluations": evals, "held_out": held}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--problem", type=Path, default=REPO / "problems" / "matmul_bf16")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--timing", type=float, default=4.0, help="timing budget of one evaluation, seconds")
    parser.add_argument("--budget", type=int, default=6, help="evaluations, instrument runs included")
    parser.add_argument("--shapes", default=None, help="benchmarks | tests (default: tests on a CPU)")
    parser.add_argument("--no-counters", action="store_true")
    args = parser.parse_args()
    out = args.out_dir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if (out / "run").exists():
        sys.exit(f"{out / 'run'} exists: pick a fresh OUT_DIR")
    shapes = args.shapes or ("tests" if args.device == "cpu" else "benchmarks")
    policy = Policy(counters=not args.no_counters)
    import os
    os.environ["ANTHROPIC_API_KEY"] = "bench-not-a-key"
    began = time.monotonic()
    with Reacting(policy) as fake:
        os.environ["ANTHROPIC_BASE_URL"] = fake.url
        config = RunConfig(problem=str(args.problem.resolve()), problem_hash="-", agent=AGENT)
        with RunFolder.create(out / "run", config) as folder:
            ended = Optimizer(folder, args.problem.resolve(), args.problem.resolve() / "baseline.py", AGENT,
                              Budget(evaluations=args.budget), device=args.device, budget_s=args.timing,
                              shapes=shapes, tune=False).run()
        sizes = request_sizes(fake)
    records = read(out / "run" / "journal.jsonl")
    promoted = [{"how": r.how, "candidate": r.candidate_hash[:12], "speedup": r.speedup}
                for r in records if r.kind == "promotion"]
    summary = {"problem": args.problem.name, "device": args.device, "shapes": shapes, "timing_s": args.timing,
               "ended": ended, "wall_s": round(time.monotonic() - began, 1),
               "bound_named": policy.bound, "edit": policy.edit, "promotions": promoted,
               "requests": sizes, "tokens_estimated": {
                   "system": round(sizes[0]["system_chars"] / 4) if sizes else None,
                   "first_request": round(sizes[0]["total_chars"] / 4) if sizes else None,
                   "largest_request": round(max(s["total_chars"] for s in sizes) / 4) if sizes else None,
                   "added_per_turn": [round(s["newest_chars"] / 4) for s in sizes]},
               **timings(records)}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
