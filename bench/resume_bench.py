"""Does a run survive kill -9 anywhere? (resume: N SIGKILLs at random points; every run completes with the
same evaluated set as an uninterrupted run, nothing evaluated twice, the baseline added once, spend never
reset)

    python bench/resume_bench.py OUT_DIR [--kills 20] [--seed 0] [--problem problems/vector_add]
                                 [--budget 20evals] [--timing 2] [--device cpu] [--timeout 900] [--model]

``--model``: after the tune, a scripted model (a loopback Anthropic API served by this process, the same for
every run) calls the instruments (history, then profile and check on an edit it has not proposed) and then
proposes that edit, every session the same, until it has nothing new (two sessions of repeats). Kills then
also land with instrument calls in flight, and one more invariant is checked: no instrument answer is run
twice (a charged ``probe_done`` per key at most once, beyond one in flight at the kill).

Everything goes through the real command line (``kernel-mcp optimize``, the default ``tune`` agent), one
process at a time. First one uninterrupted run (OUT_DIR/reference/run): its wall time T and its evaluated
set. Then ``kills`` runs of the same command, each in its own folder (OUT_DIR/runs/NN/run), SIGKILLed as a
whole process group (started with ``start_new_session``; ``os.killpg``) at a moment drawn from a seeded
RNG, one per slice of [0, T) (stratified, so the kills cover the whole run: CLI start-up, the baseline's
evaluation, every tune comparison, the winner's evaluation, the report), then ``optimize --resume`` until it
ends. A kill before run.json exists (CLI start-up) leaves nothing to resume: the same command is started
again. A run that ended before its kill moment is tried again in a fresh folder at 0.7x the moment.

Checked for each run, from its folder alone (journal.jsonl, cache/, the island's snapshot refs):

* resumed: the resume exits 0, the journal ends in ``finished`` and report/report.md exists;
* journal kept: the records durable at the kill are the first records of the final journal, unchanged,
  followed by exactly one ``resumed`` (none when the kill fell after ``finished``);
* duplicates: no candidate has two ``done`` (or two ``intent``) records, the baseline is evaluated and
  promoted once, each incumbent tuned once;
* nothing re-measured: every cache file written before the kill (evaluations by candidate hash and the
  tune's comparisons, ``tune-*``) has the same content and mtime after the resume (the idea of
  tests/test_optimize.py), and the island's evaluation snapshots number the ``done`` records, plus at most
  one when an evaluation was in flight at the kill (the in-flight call, measured again, is the only one);
* spend monotone: the active time at the kill (agent/run/state.py: gaps between records, up to the dead
  process's last heartbeat) is never reset: final active_s - the resumed process's own time >= active_s
  at the kill, and what is charged for the dead process's lost work is at most (kill time - its last
  record), so neither reset nor the dead time charged. (``tune`` makes no model calls: $ spend is 0, and the
  time budget is the spend there is.)
* evaluated set: the candidate hashes of ``done`` records plus the tune's memo keys (each a content hash
  of the files compared and the settings) equal the uninterrupted run's.

Why those sets are comparable: the budget is an evaluation count (``20evals``) that the tune agent never
reaches (it evaluates the baseline and the tune's winner), so the run ends when the tune's search ends,
never on a clock a kill disturbs; the search is deterministic given its comparisons' outcomes, and every
outcome measured before the kill is replayed from the memo. Only a comparison measured afresh (after the
kill, or the in-flight one) can come out the other side of the significance threshold than in the
reference run: timing noise, not resume (on this machine the 4096 -> 8192 step's lower bound sits near the
threshold). So every run, the reference included, is also replayed: the tune's search (tune/driver.py,
started as tuning.py starts it) run again with the folder's own cache as a read-only memo must need no
measurement the folder lacks, use every one it holds (none measured twice under another key, none left
by the killed process off the path) and pick the winner the run evaluated. That holds each run to the
uninterrupted run it would have been given the same comparisons' outcomes. A set that differs from the
reference's is "diverged (noise)" when the replay is consistent and a comparison both runs hold was
measured apart: decided differently, or timed at other ratios (the halving ranks by the ratios, so other
values can send it down another path; the consistent replay shows the path follows from the run's own
measurements, which is what a resume bug would break); otherwise it fails. Writes OUT_DIR/runs.jsonl (one line per run, the reference first) and
OUT_DIR/summary.json; prints a table; exits 1 if any invariant fails.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


MODEL = "anthropic:claude-opus-4-5"
SAME = "<<<<<<< SEARCH\n    mask = offs < n\n=======\n    mask = n > offs\n>>>>>>> REPLACE\n"  # a new tree, the same kernel
SCRIPT = [("history", {}), ("profile", {"edit": SAME}), ("check", {"edit": SAME}),
          ("propose", {"edit": SAME, "idea": "the mask written the other way round"})]


def scripted_model_server():
    """A loopback Anthropic API whose model plays SCRIPT in every session (its move depends only on how many
    turns the session has had, so a resumed run's fresh session asks the same questions)."""
    sys.path.insert(0, str(REPO / "tests"))
    from fakes.scripted_apis import Move, Reacting

    def policy(last, request):
        turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
        return Move(call=SCRIPT[turn]) if turn < len(SCRIPT) else Move(text="Nothing more to try.")
    return Reacting(policy)


def cli() -> list[str]:
    found = shutil.which("kernel-mcp")
    return [found] if found else [sys.executable, "-m", "kernel_mcp"]


# --- processes -------------------------------------------------------------------------------------------
def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of a live process, from /proc; None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), fields[0], int(fields[19])


def descendants(root: int) -> dict[int, int]:
    """Every process below ``root`` (other sessions included: the judges start their own), pid -> start."""
    children: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))):
            children.setdefault(stat[0], []).append(int(entry))
            starts[int(entry)] = stat[2]
    found, todo = {}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found[child] = starts[child]
            todo.append(child)
    return found


def alive(procs: dict[int, int]) -> dict[int, int]:
    """Those of ``procs`` still running (same pid and start time, not a zombie)."""
    return {pid: start for pid, start in procs.items()
            if (stat := _stat(pid)) and stat[2] == start and stat[1] != "Z"}


def run_process(cmd: list[str], cwd: Path, log: Path, kill_at: float | None, timeout: float) -> dict:
    """Run ``cmd`` (its own session); SIGKILL its process group at ``kill_at`` seconds if still running."""
    began, wall = time.monotonic(), time.time()
    with open(log.with_suffix(".out"), "wb") as out, open(log.with_suffix(".err"), "wb") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, start_new_session=True)
        try:
            proc.wait(timeout=kill_at if kill_at is not None else timeout)
            return {"rc": proc.returncode, "killed": False, "seconds": time.monotonic() - began, "began": wall}
        except subprocess.TimeoutExpired:
            pass
        below = descendants(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI and everything in its session
        kill_wall = time.time()
        proc.wait()
    deadline, left = time.monotonic() + 10, alive(below)
    while left and time.monotonic() < deadline:  # judges live in sessions of their own: they end with the CLI
        time.sleep(0.2)
        left = alive(below)
    for pid in left:  # never seen so far; not left to disturb the next run's timing
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return {"rc": None, "killed": kill_at is not None, "seconds": time.monotonic() - began, "began": wall,
            "kill_wall": kill_wall, "timed_out": kill_at is None, "descendants": len(below), "orphans": len(left)}


# --- what a run folder holds -----------------------------------------------------------------------------
def look(run: Path) -> dict:
    """The run folder as it lies: records, derived state, cache files (mtime, content hash), snapshots."""
    from kernel_mcp.agent.run.journal import read
    from kernel_mcp.agent.run.state import derive
    journal = run / "journal.jsonl"
    records = read(journal) if journal.exists() else []
    data = journal.read_bytes() if journal.exists() else b""
    torn = bool(data) and (not data.endswith(b"\n") or data.count(b"\n") > len(records))  # a half-written last line
    cache = {}
    for file in sorted((run / "cache").glob("*.json")) if (run / "cache").exists() else []:
        data = file.read_bytes()
        cache[file.stem] = {"mtime_ns": file.stat().st_mtime_ns, "sha": hashlib.sha256(data).hexdigest()[:16],
                            "data": data}
    snapshots = 0
    for store in (run / "workspace").glob("island-*") if (run / "workspace").exists() else []:
        refs = subprocess.run(["git", "-C", str(store), "for-each-ref", "refs/kernel_mcp/snapshots"],
                              capture_output=True, text=True)
        snapshots += len(refs.stdout.split("\n")) - 1 if refs.stdout else 0
    return {"has_run": (run / "run.json").exists(), "records": [r.model_dump() for r in records],
            "state": derive(records), "cache": cache, "snapshots": snapshots,
            "torn_tail": torn,
            "report": (run / "report" / "report.md").exists()}


def evaluated_set(seen: dict) -> set[str]:
    """The candidate hashes evaluated (``done``) and the tune's memo keys (each comparison measured)."""
    return ({r["candidate_hash"] for r in seen["records"] if r["kind"] == "done"}
            | {k for k in seen["cache"] if k.startswith("tune-")})


def decisions(seen: dict) -> dict[str, str]:
    """Each tune comparison's outcome as the search reads it: gain, no gain, or failed."""
    from kernel_mcp.agent.decide import significant
    from kernel_mcp.agent.tune.search import DELTA
    from kernel_mcp.stats import Ratio
    out = {}
    for key, entry in seen["cache"].items():
        if key.startswith(("tune-compare-", "tune-confirm-")):
            ratio = json.loads(entry["data"]).get("ratio")
            out[key] = "failed" if ratio is None else ("gain" if significant(Ratio(*ratio), DELTA) else "no gain")
    return out


def measured_apart(seen: dict, reference: dict) -> list[str]:
    """Tune comparisons both runs hold with different measured ratios: each run timed them itself (after the
    kill, here), and the halving ranks by those values, so its path may part from the reference's there."""
    def ratio(entries: dict, key: str):
        return json.loads(entries[key]["data"]).get("ratio")
    shared = {k for k in seen["cache"].keys() & reference["cache"].keys() if k.startswith("tune-")}
    return sorted(k for k in shared if ratio(seen["cache"], k) != ratio(reference["cache"], k))


class _Missing(Exception):
    """The replayed search asked for a measurement the run folder does not hold."""


class _ReplayMemo:
    """The run's own cache as the tune's memo, read-only: a miss is not measured but reported."""

    def __init__(self, seen: dict):
        self.seen, self.used = seen, set()

    def cached(self, key: str) -> dict:
        if key not in self.seen["cache"]:
            raise _Missing(key)
        self.used.add(key)
        return json.loads(self.seen["cache"][key]["data"])

    def cache(self, key: str, result: dict) -> None:
        raise AssertionError("a replay measures nothing")


def replay(run: Path, seen: dict, timing: float, shapes: str, device: str) -> str:
    """The tune's search replayed on the run's own measurements (tune/driver.py, as tuning.py starts it):
    'consistent' when it needs no measurement the folder lacks, uses every one it holds (nothing measured
    off the path: no duplicate, no stray from the killed process) and picks the winner the run evaluated.
    This holds a run to the uninterrupted run it would have been given the same comparisons' outcomes."""
    import tempfile

    from kernel_mcp.agent.run.folder import candidate_hash
    from kernel_mcp.agent.tune.driver import Tuner
    from kernel_mcp.results import ProfileSettings
    state = seen["state"]
    start = run / "workspace" / "candidates" / f"{state.baseline_hash}.py"
    memo = _ReplayMemo(seen)
    with tempfile.TemporaryDirectory() as work:
        problem = json.loads((run / "run.json").read_text())["problem"]  # loaded, never run: the memo answers
        tuner = Tuner(problem, start, work, device=device, memo=memo,
                      settings=ProfileSettings(budget_s=timing, shapes=shapes))
        try:
            # with the run's own margin (its A/A run), as tuning.py passes it; the 1% floor for older runs
            result = tuner.run(delta=state.delta if getattr(state, "delta", None) is not None else 0.01)
        except _Missing as missing:
            return f"needs {missing} (not in the folder)"
        winner = candidate_hash(Path(result.best_file).read_bytes()) if result.speedup else state.baseline_hash
    unused = sorted(k for k in seen["cache"] if k.startswith("tune-") and k not in memo.used)
    if unused:
        return f"measured off the path: {unused}"
    tuned = [r for r in seen["records"] if r["kind"] == "tuned"]
    if not tuned or tuned[-1]["best_hash"] != winner:
        return f"the replay picks {winner[:8]}, the run {tuned[-1]['best_hash'][:8] if tuned else None}"
    return "consistent"


def phase(pre: dict) -> str:
    if not pre["has_run"]:
        return "CLI start (no run.json)"
    records, state = pre["records"], pre["state"]
    if state.finished:
        return "after finished"
    asked = {r["key"]: r["tool"] for r in records if r["kind"] == "probe"}
    answered = {r["key"] for r in records if r["kind"] == "probe_done"}
    if set(asked) - answered:
        return f"model: {asked[next(iter(set(asked) - answered))]} call in flight"
    if any(r["kind"] == "episode_started" for r in records):
        return "model: " + ("an evaluation in flight" if state.pending else "between calls")
    if any(r["kind"] == "tuned" for r in records):
        return "after the tune"
    roles = {v.get("role") for v in state.pending.values()}
    if "baseline" in roles:
        return "baseline evaluation"
    if "tuned" in roles:
        return "winner's evaluation"
    if state.baseline_hash is None:
        return "start (no intent yet)"
    return f"tune ({sum(k.startswith('tune-') for k in pre['cache'])} measured)"


def check(final: dict, reference: dict, pre: dict | None, kill: dict | None, replayed: str = "consistent") -> dict:
    """The invariants of one run (``pre``: the folder as the kill left it; None for the reference)."""
    records, state = final["records"], final["state"]
    done = Counter(r["candidate_hash"] for r in records if r["kind"] == "done")
    intents = Counter(r["candidate_hash"] for r in records if r["kind"] == "intent")
    row = {"finished": bool(state.finished) and final["report"],
           "duplicates": sum(n - 1 for n in done.values()) + sum(n - 1 for n in intents.values()),
           "baseline_evals": sum(r["kind"] == "done" and r.get("role") == "baseline" for r in records),
           "baseline_promotions": sum(r["kind"] == "promotion" and r.get("how") == "baseline" for r in records),
           "tuned_records": Counter(r["start_hash"] for r in records if r["kind"] == "tuned").most_common(1)[0][1]
           if any(r["kind"] == "tuned" for r in records) else 0,
           "evaluations": len(done), "tune_measurements": sum(k.startswith("tune-") for k in final["cache"]),
           "snapshots": final["snapshots"], "active_s": round(state.active_s, 2)}
    in_flight = bool(pre and pre["state"].pending)
    charged = Counter(r["key"] for r in records if r["kind"] == "probe_done" and r["charged"])
    asked = {r["key"] for r in pre["records"] if r["kind"] == "probe"} if pre else set()
    answered = {r["key"] for r in pre["records"] if r["kind"] == "probe_done"} if pre else set()
    row["instrument_runs"], row["instruments_rerun"] = sum(charged.values()), sum(n - 1 for n in charged.values())
    row["extra_snapshots"] = final["snapshots"] - len(done)
    ok = (row["finished"] and row["duplicates"] == 0 and row["baseline_evals"] == 1
          and row["baseline_promotions"] == 1 and row["tuned_records"] <= 1
          and 0 <= row["extra_snapshots"] <= int(in_flight) and row["instruments_rerun"] <= len(asked - answered))
    if pre is not None:
        n = len(pre["records"])
        after = records[n:]
        resumed = [r for r in after if r["kind"] == "resumed"]
        row["journal_kept"] = records[:n] == pre["records"] and len(resumed) == (
            0 if pre["state"].finished or not pre["has_run"] else 1)
        row["remeasured"] = sorted(k for k, v in pre["cache"].items()
                                   if k not in final["cache"] or final["cache"][k]["mtime_ns"] != v["mtime_ns"]
                                   or final["cache"][k]["sha"] != v["sha"])
        pre_active = pre["state"].active_s
        if resumed:  # the resumed process's own time is from its 'resumed' record to the last record
            own = state.last_at - resumed[0]["at"]
            charged = state.active_s - own - pre_active  # what the dead process's lost work was charged
            bound = max(0.0, kill["kill_wall"] - pre["state"].last_at) if pre["state"].last_at else 0.0
            row["charged_dead_s"], row["charge_bound_s"] = round(charged, 3), round(bound, 3)
            row["spend_monotone"] = -1e-6 <= charged <= bound + 1e-3
        else:
            row["spend_monotone"] = state.active_s >= pre_active - 1e-9
        row["spend_monotone"] = row["spend_monotone"] and state.spend_usd >= pre["state"].spend_usd \
            and set(pre["state"].evaluated) <= set(state.evaluated)
        row["in_flight"] = sorted(k[:8] for k in pre["state"].pending)
        ok = ok and row["journal_kept"] and not row["remeasured"] and row["spend_monotone"]
    ours, theirs = evaluated_set(final), evaluated_set(reference)
    if ours == theirs:
        row["evaluated"] = "equal"
    else:
        mine, ref = decisions(final), decisions(reference)
        flipped = sorted(k for k in mine.keys() & ref.keys() if mine[k] != ref[k])
        apart = measured_apart(final, reference)
        noise = bool(flipped or apart) and replayed == "consistent"
        row["evaluated"] = "diverged (noise)" if noise else "DIFFERENT"
        row["flipped"] = [f"{k}: {ref[k]} -> {mine[k]}" for k in flipped]
        row["measured_apart"] = apart
        row["only_here"], row["only_in_reference"] = sorted(ours - theirs), sorted(theirs - ours)
        ok = ok and noise
    row["replay"] = replayed
    row["ok"] = bool(ok) and replayed == "consistent"
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--kills", type=int, default=20, help="kill -9 injections (one per run)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--problem", type=Path, default=REPO / "problems" / "vector_add")
    parser.add_argument("--budget", default="20evals", help="an evaluation count the tune agent never reaches")
    parser.add_argument("--timing", type=float, default=2.0, help="timing budget of one evaluation, seconds")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for one process before it fails")
    parser.add_argument("--model", action="store_true", help="a scripted model with instrument calls after the tune")
    args = parser.parse_args()
    if args.model:
        model = scripted_model_server()
        model.__enter__()  # lives as long as the bench: every run and resume talks to the same script
        os.environ.update(ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY="bench-not-a-key")
    out = args.out_dir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    problem = out / "problem" / args.problem.name  # a copy: an edit to the repo's problem mid-bench changes nothing
    if not problem.exists():
        shutil.copytree(args.problem, problem)
    began = time.monotonic()

    def command(run: Path) -> list[str]:
        return [*cli(), "optimize", str(problem), "--budget", args.budget, "--timing", str(args.timing),
                "--device", args.device, "--run", str(run), "--json", *(["--agent", MODEL] if args.model else [])]

    def resume(run: Path) -> list[str]:
        return [*cli(), "optimize", "--resume", str(run), "--device", args.device, "--json"]

    rows_file = (out / "runs.jsonl").open("w")
    ref_dir = out / "reference"
    shutil.rmtree(ref_dir, ignore_errors=True)
    ref_dir.mkdir()
    print("reference: " + " ".join(command(ref_dir / "run")), flush=True)
    first = run_process(command(ref_dir / "run"), out, ref_dir / "optimize", None, args.timeout)
    reference = look(ref_dir / "run")
    shapes = "tests" if args.device == "cpu" else "benchmarks"  # what optimize resolves them to (no --shapes)

    def replayed(run: Path, seen: dict) -> str:
        return replay(run, seen, args.timing, shapes, args.device)
    ref_row = {"run": "reference", "rc": first["rc"], "seconds": round(first["seconds"], 1),
               **check(reference, reference, None, None, replayed(ref_dir / "run", reference))}
    ref_row["ok"] = ref_row["ok"] and first["rc"] == 0
    rows_file.write(json.dumps(ref_row) + "\n")
    print(f"reference: {ref_row['seconds']} s, {ref_row['evaluations']} evaluations, "
          f"{ref_row['tune_measurements']} tune measurements, rc {first['rc']}", flush=True)
    if not ref_row["ok"]:
        print("the uninterrupted run itself failed: see " + str(ref_dir), file=sys.stderr)
        return 1
    duration = first["seconds"]
    rng = random.Random(args.seed)
    moments = [duration * (i + rng.random()) / args.kills for i in range(args.kills)]  # one per slice of [0, T)
    rng.shuffle(moments)  # not in order: the machine's load drifts over the bench
    rows = []
    for i, moment in enumerate(moments):
        for attempt in range(3):
            folder = out / "runs" / f"{i:02d}{'abc'[attempt] if attempt else ''}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            run = folder / "run"
            kill = run_process(command(run), out, folder / "optimize", moment, args.timeout)
            if kill["killed"]:
                break
            moment *= 0.7  # it ended first: again, earlier
        row = {"run": i, "kill_at_s": round(moment, 2), "attempts": attempt + 1}
        if not kill["killed"]:
            row.update(ok=False, error="the run always ended before its kill moment")
            rows.append(row)
            rows_file.write(json.dumps(row) + "\n")
            continue
        pre = look(run)
        row.update(phase=phase(pre), torn_tail=pre["torn_tail"], orphans=kill["orphans"],
                   records_at_kill=len(pre["records"]))
        again = resume(run) if pre["has_run"] else command(run)
        second = run_process(again, out, folder / "resume", None, args.timeout)
        row.update(resume_rc=second["rc"], resume_s=round(second["seconds"], 1))
        try:
            final = look(run)
            row.update(check(final, reference, pre, kill, replayed(run, final)))
            row["ok"] = row["ok"] and second["rc"] == 0 and kill["orphans"] == 0
        except Exception as exc:  # a folder the checks cannot read is a failed run, not a failed bench
            row.update(ok=False, error=f"{type(exc).__name__}: {exc}")
        rows.append(row)
        rows_file.write(json.dumps(row) + "\n")
        rows_file.flush()
        print(f"[{i + 1}/{args.kills}] kill at {row['kill_at_s']:6.2f} s ({row['phase']}): resume rc "
              f"{second['rc']} in {row['resume_s']} s, evaluated {row.get('evaluated', row.get('error'))}, "
              f"{'ok' if row['ok'] else 'FAILED'}", flush=True)
    rows_file.close()

    header = ("#", "kill@s", "phase at the kill", "torn", "resumed", "dup", "base", "spend mono", "journal",
              "re-measured", "evaluated set", "replay", "ok")
    table = [header] + [(str(r["run"]), f"{r['kill_at_s']:.1f}", r.get("phase", "-"), "y" if r.get("torn_tail") else "",
                         "ok" if r.get("resume_rc") == 0 and r.get("finished") else "NO", str(r.get("duplicates", "-")),
                         f"{r.get('baseline_evals', '-')}/{r.get('baseline_promotions', '-')}",
                         "yes" if r.get("spend_monotone") else "NO", "kept" if r.get("journal_kept") else "NO",
                         str(len(r.get("remeasured", []))), r.get("evaluated", "-"),
                         "ok" if r.get("replay") == "consistent" else r.get("replay", "-"), "ok" if r["ok"] else "FAIL")
                        for r in rows]
    widths = [max(len(t[c]) for t in table) for c in range(len(header))]
    for line in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths)))
    summary = {
        "command": " ".join(command(Path("RUN"))), "resume": " ".join(resume(Path("RUN"))),
        "kills": sum(1 for r in rows if "phase" in r), "runs": len(rows), "seed": args.seed,
        "reference_s": round(duration, 1), "reference_evaluations": ref_row["evaluations"],
        "reference_tune_measurements": ref_row["tune_measurements"],
        "resumed_ok": sum(1 for r in rows if r.get("resume_rc") == 0 and r.get("finished")),
        "duplicates": sum(r.get("duplicates", 0) for r in rows),
        "baseline_once": sum(1 for r in rows if r.get("baseline_evals") == 1 and r.get("baseline_promotions") == 1),
        "spend_monotone": sum(1 for r in rows if r.get("spend_monotone")),
        "journal_kept": sum(1 for r in rows if r.get("journal_kept")),
        "remeasured": sum(len(r.get("remeasured", [])) for r in rows),
        "model": args.model, "instruments_rerun": sum(r.get("instruments_rerun", 0) for r in rows),
        "reference_instrument_runs": ref_row.get("instrument_runs", 0),
        "evaluated_equal": sum(1 for r in rows if r.get("evaluated") == "equal"),
        "replay_consistent": sum(1 for r in rows if r.get("replay") == "consistent"),
        "diverged_noise": sum(1 for r in rows if r.get("evaluated") == "diverged (noise)"),
        "torn_tails": sum(1 for r in rows if r.get("torn_tail")),
        "in_flight_at_kill": sum(1 for r in rows if r.get("in_flight")),
        "orphans": sum(r.get("orphans", 0) for r in rows),
        "phases": dict(Counter(r.get("phase", "-") for r in rows)),
        "failed": [r["run"] for r in rows if not r["ok"]],
        "seconds": round(time.monotonic() - began, 1),
        "git": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": os.uname().nodename, "cpus": os.cpu_count()}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"{summary['kills']} kills: {summary['resumed_ok']} resumed to the end, {summary['duplicates']} duplicate "
          f"evaluations, baseline once in {summary['baseline_once']}, spend monotone in {summary['spend_monotone']}, "
          f"{summary['remeasured']} re-measured, evaluated set equal in {summary['evaluated_equal']} "
          f"(+{summary['diverged_noise']} diverged by noise); {summary['seconds']} s in all")
    return 0 if not summary["failed"] and summary["kills"] == args.kills else 1


if __name__ == "__main__":
    sys.exit(main())
