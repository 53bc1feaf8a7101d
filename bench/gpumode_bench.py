"""GPU MODE problem sets loaded unchanged (issue 13): every problem's own solutions checked, those under
``solutions/correct`` must pass and those under ``solutions/wrong`` must fail.

    python bench/gpumode_bench.py OUT_DIR ROOT [--mode check|profile] [--device cuda] [--budget-s 20]

ROOT is a set's folder (e.g. reference-kernels' ``problems/pmpp_v2``), one sub-folder per problem holding
``task.yml``, ``reference.py`` and ``solutions/``. The problems are not bundled (their licence does not
allow copying): fetch the repository and point ROOT at it. Writes OUT_DIR/gpumode_<mode>.jsonl (a row per
solution, appended as each ends) and prints a table; exits 1 when any solution's verdict contradicts its
folder (a wrong solution
must fail as a candidate: a harness or problem error is not the expected outcome), so the run can gate.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def solutions(root: Path) -> list[tuple[Path, Path, bool]]:
    """(problem folder, solution file, must pass) for every solution of every problem under root."""
    found = []
    for task in sorted(root.glob("*/task.yml")):
        for expected, folder in ((True, "correct"), (False, "wrong")):
            found += [(task.parent, file, expected) for file in sorted((task.parent / "solutions" / folder).glob("*.py"))]
    return found


def judge(problem: Path, solution: Path, args):
    if args.mode == "profile":
        from kernel_mcp.results import ProfileSettings
        from kernel_mcp.tools.profile import profile
        return profile(problem, solution, device=args.device, settings=ProfileSettings(budget_s=args.budget_s))
    from kernel_mcp.tools.check import check
    return check(problem, solution, device=args.device)


def row_of(problem: Path, solution: Path, expected: bool, result, seconds: float) -> dict:
    failing = next((f for f in result.findings if f.severity == "error"), None)
    return {"problem": problem.name, "solution": f"{solution.parent.name}/{solution.name}", "must_pass": expected,
            "verdict": result.verdict, "passed": result.passed, "as_expected": result.passed == expected and not result.verdict.startswith("error"),
            "speedup": getattr(result, "speedup", None), "seconds": round(seconds, 1),
            "finding": f"{failing.code}: {failing.message[:300]}" if failing else ""}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("root", type=Path)
    parser.add_argument("--mode", choices=["check", "profile"], default="check")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--budget-s", type=float, default=20.0, help="profile's timing budget per solution")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out, rows = args.out_dir / f"gpumode_{args.mode}.jsonl", []
    for problem, solution, expected in solutions(args.root):
        begun = time.monotonic()
        row = row_of(problem, solution, expected, judge(problem, solution, args), time.monotonic() - begun)
        rows.append(row)
        with open(out, "a") as handle:
            handle.write(json.dumps(row) + "\n")
        print(f"{'ok ' if row['as_expected'] else 'BAD'} {row['problem']:<14} {row['solution']:<38} "
              f"{row['verdict']:<10} {row['seconds']:>6} s {row['finding'][:120]}", flush=True)
    good = sum(r["as_expected"] for r in rows)
    print(f"{good}/{len(rows)} solutions judged as their folder says ({args.mode}, {args.device})")
    return 0 if good == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
