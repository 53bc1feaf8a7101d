"""A load_inline candidate checked twice: does the second check load the build the first one kept
(worker/isolation/kernel_cache.py), or build it again? Each round copies the candidate to a path of its own (a
store entry of its own, so the first check always builds), checks it, then checks the same file again.

    python bench/rebuild_bench.py [--device cpu|cuda] [--rounds 3] [--candidate FILE] [--problem DIR]

Defaults: problems/vector_add with tests/fixtures/cpp/add_inline_cpu.py on the CPU,
tests/fixtures/cuda/add_inline.py on cuda. Prints a JSON line per check and a summary: the median wall seconds of
first and second checks, and their ratio.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernel_mcp.tools.check import check  # noqa: E402

FIXTURES = {"cpu": REPO / "tests" / "fixtures" / "cpp" / "add_inline_cpu.py",
            "cuda": REPO / "tests" / "fixtures" / "cuda" / "add_inline.py"}


def timed_check(problem: Path, candidate: Path, device: str) -> tuple[float, str]:
    began = time.monotonic()
    result = check(problem, candidate, device=device)
    return time.monotonic() - began, result.verdict


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--candidate", type=Path)
    parser.add_argument("--problem", type=Path, default=REPO / "problems" / "vector_add")
    args = parser.parse_args()
    source = args.candidate or FIXTURES["cpu" if args.device == "cpu" else "cuda"]
    walls: dict[str, list[float]] = {"first": [], "second": []}
    with tempfile.TemporaryDirectory(prefix="kmcp-rebuild-") as folder:
        for round_ in range(args.rounds):
            candidate = Path(folder) / f"round{round_}" / source.name
            candidate.parent.mkdir()
            shutil.copyfile(source, candidate)
            for which in ("first", "second"):
                seconds, verdict = timed_check(args.problem, candidate, args.device)
                walls[which].append(seconds)
                print(json.dumps({"round": round_, "check": which, "seconds": round(seconds, 2), "verdict": verdict}),
                      flush=True)
            shutil.rmtree(candidate.parent)
    first, second = statistics.median(walls["first"]), statistics.median(walls["second"])
    print(json.dumps({"device": args.device, "candidate": source.name, "rounds": args.rounds,
                      "first_median_s": round(first, 2), "second_median_s": round(second, 2),
                      "ratio": round(first / second, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
