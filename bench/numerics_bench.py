"""The numerics instruments on every bundled kernel (issue 39): does each give the same bits twice (check's
determinism repeat), is it clean under each Compute Sanitizer tool, and what a sanitizer call costs.

    python bench/numerics_bench.py OUT.jsonl [--device cuda] [--tools memcheck racecheck initcheck synccheck]

One row per kernel (baselines, solutions/correct, solutions/wrong, and tests/gpu_sanitizer's wrong kernels
against vector_add): the check's verdict and determinism, then per tool whether it ran, its error count and
kinds with the kernel each was in, and its wall seconds (the tool's cost per call, the target's start-up
included). Rows are appended as each kernel ends, and a rerun into the same file carries on with the kernels
it has no row for (a device call's time limit can end a run midway).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernel_mcp.tools.check import check  # noqa: E402
from kernel_mcp.tools.sanitize import sanitize  # noqa: E402

PROBLEMS = REPO / "problems"


def kernels() -> list[tuple[Path, Path]]:
    found = [(p.parent, p) for p in sorted(PROBLEMS.glob("*/baseline.py"))]
    found += [(p.parents[2], p) for p in sorted(PROBLEMS.glob("*/solutions/*/*.py"))]
    found += [(PROBLEMS / "vector_add", p) for p in sorted((REPO / "tests" / "gpu_sanitizer").glob("*.py"))]
    return found


def row(problem: Path, candidate: Path, device: str, tools: list[str]) -> dict:
    began = time.monotonic()
    checked = check(problem, candidate, device=device)
    out = {"problem": problem.name, "candidate": str(candidate.relative_to(REPO)), "verdict": checked.verdict,
           "determinism": checked.determinism.model_dump() if checked.determinism else None,
           "check_s": round(time.monotonic() - began, 1), "tools": {}}
    for tool in tools:
        began = time.monotonic()
        result = sanitize(problem, candidate, device=device, tools=[tool])
        report = result.tools[0] if result.tools else None
        out["tools"][tool] = {"ran": bool(report and report.ran), "errors": report.errors if report else None,
                              "warnings": report.warnings if report else 0,
                              # whose: the candidate's own kernel, or a library's (cuBLAS) it called
                              "kinds": [f"{f.count}x {f.kind} in {f.kernel or '?'}" for f in report.findings]
                              if report else [],
                              "message": (report.message if report else result.message)[:200],
                              "seconds": round(time.monotonic() - began, 1)}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tools", nargs="*", default=["memcheck", "racecheck", "initcheck", "synccheck"])
    args = parser.parse_args()
    rows = []
    done = {json.loads(line)["candidate"] for line in args.out.read_text().splitlines()} if args.out.exists() else set()
    for problem, candidate in kernels():
        if str(candidate.relative_to(REPO)) in done:  # a rerun into the same file carries on where it stopped
            continue
        rows.append(row(problem, candidate, args.device, args.tools))
        with args.out.open("a") as handle:
            handle.write(json.dumps(rows[-1]) + "\n")
        r = rows[-1]
        tools = ", ".join(f"{t} {v['errors'] if v['ran'] else 'not run'} ({v['seconds']} s)" for t, v in r["tools"].items())
        same = r["determinism"]["same_process"] if r["determinism"] else None
        print(f"{r['candidate']}: {r['verdict']}, same bits: {same}; {tools}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
