"""A scripted search over a run folder, run as its own process by tests/test_runlog.py and killed at random:
a baseline, then N candidates, each one priced model turn and one evaluation (an intent, the "GPU work",
the result cached, a done record). What the real loop does around an evaluation, without a model or GPU.

    python tests/fakes/journal_loop.py RUN_DIR N WORK_LOG

WORK_LOG gets one line per evaluation actually performed, so a test can count re-runs.
"""
import os
import sys
import time
from pathlib import Path

from kernel_mcp.agent.run.folder import RunConfig, RunFolder, candidate_hash

TURN_COST_USD = 0.01


def evaluate(folder: RunFolder, key: str, role: str, work_log: Path) -> None:
    result = folder.cached(key)
    if result is None:
        with open(work_log, "a") as log:
            log.write(key + "\n")
            log.flush()
            os.fsync(log.fileno())
        time.sleep(0.005)  # the device's time
        result = {"verdict": "pass", "passed": True, "speedup": 1.0 + int(key[:4], 16) / 65536}
        folder.cache(key, result)
    folder.record("done", candidate_hash=key, role=role, **result)


def main(run: Path, n: int, work_log: Path) -> None:
    if (run / "run.json").exists():
        folder = RunFolder.resume(run)
    else:
        folder = RunFolder.create(run, RunConfig(problem="scripted", problem_hash="0", agent="scripted"))
    with folder:
        for key, intent in list(folder.state.pending.items()):  # in flight when the last process died
            evaluate(folder, key, intent["role"], work_log)
        if folder.state.baseline_hash is None:
            key = candidate_hash(b"baseline")
            folder.record("intent", candidate_hash=key, role="baseline", island="0")
            evaluate(folder, key, "baseline", work_log)
        for i in range(n):
            key = candidate_hash(f"candidate {i}".encode())
            if key in folder.state.evaluated:
                continue
            folder.record("turn", usage={"input": 1000, "output": 100}, cost_usd=TURN_COST_USD)
            folder.record("intent", candidate_hash=key, role="candidate", island="0")
            evaluate(folder, key, "candidate", work_log)
        if folder.state.finished is None:
            folder.record("finished", reason="every candidate evaluated")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
