"""GPU MODE problem sets loaded unchanged (issue 13): every problem's own solutions judged by kernel_mcp
and, beside it, by the problem's own ``check_implementation`` run the way GPU MODE's runner runs it.

    python bench/gpumode_bench.py OUT_DIR ROOT [--mode check|profile] [--device cuda] [--budget-s 20]
                                  [--only NAME ...]

ROOT is a set's folder (e.g. reference-kernels' ``problems/pmpp_v2``), one sub-folder per problem holding
``task.yml``, ``reference.py`` and ``solutions/``. The problems are not bundled (their licence does not
allow copying): fetch the repository and point ROOT at it.

Each solution gets two verdicts. kernel_mcp's: ``check`` (or ``profile``); a solution under
``solutions/wrong`` that passes the check is also profiled, since GPU MODE catches such solutions only at
its benchmark sizes, which kernel_mcp validates while timing. The problem's own: in a plain process with
PyTorch's defaults, ``generate_input`` -> ``custom_kernel`` (on a copy) -> ``check_implementation`` for
every test and benchmark case (what GPU MODE's test and ranked runs do). A folder's label can be wrong on
a given GPU (a TF32 convolution labelled correct for a GPU without TF32): the table shows where the
problem's own check disagrees with its folder. Writes OUT_DIR/gpumode_<mode>.jsonl (a row per solution,
appended as each ends) and prints a table; exits 1 when kernel_mcp's verdict differs from the problem's own
check (a harness or problem error never counts as agreeing), so the run can gate.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
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


def judge(problem: Path, solution: Path, args, must_pass: bool):
    from kernel_mcp.results import ProfileSettings
    from kernel_mcp.tools.check import check
    from kernel_mcp.tools.profile import profile
    settings = ProfileSettings(budget_s=args.budget_s)
    if args.mode == "profile":
        return profile(problem, solution, device=args.device, settings=settings)
    result = check(problem, solution, device=args.device)
    if result.passed and not must_pass:  # caught, if at all, at the benchmark sizes
        return profile(problem, solution, device=args.device, settings=settings)
    return result


# GPU MODE's runner, reduced to what decides a verdict: a fresh process with PyTorch's defaults,
# task.py/utils.py importable from the problem folder and its parent, the submission imported as
# ``submission``, each case's inputs generated, a copy given to custom_kernel, check_implementation run.
OWN_CHECK = r"""
import importlib.util, json, sys
from pathlib import Path
import torch, yaml
problem, solution = Path(sys.argv[1]), Path(sys.argv[2])
sys.path[:0] = [str(problem), str(problem.parent)]
import reference
spec = importlib.util.spec_from_file_location("submission", solution)
submission = importlib.util.module_from_spec(spec)
sys.modules["submission"] = submission
spec.loader.exec_module(submission)
task = yaml.safe_load((problem / "task.yml").read_text())
def copy(x):
    if isinstance(x, (tuple, list)):
        return type(x)(copy(v) for v in x)
    return x.clone() if isinstance(x, torch.Tensor) else x
for kind in ("tests", "benchmarks"):
    for case in task.get(kind) or []:
        data = reference.generate_input(**case)
        torch.cuda.is_available() and torch.cuda.synchronize()
        output = submission.custom_kernel(copy(data))
        torch.cuda.is_available() and torch.cuda.synchronize()
        verdict = reference.check_implementation(data, output)
        if isinstance(verdict, tuple):
            ok, message = bool(verdict[0]), str(verdict[1])
        elif isinstance(verdict, (str, list)):
            ok, message = not verdict, str(verdict)
        else:
            ok, message = bool(verdict), ""
        if not ok:
            print(json.dumps({"passed": False, "message": f"{kind[:-1]} {case}: {message}"[:300]}))
            sys.exit(0)
print(json.dumps({"passed": True, "message": ""}))
"""


def own_check(problem: Path, solution: Path, device: str, timeout_s: float = 600.0) -> dict:
    """The problem's own verdict on this machine: {"passed": bool | None, "message": str} (None: it errored).
    On a CPU, Triton kernels run through its interpreter."""
    env = {**os.environ, "TRITON_INTERPRET": "1"} if device == "cpu" else None
    try:
        done = subprocess.run([sys.executable, "-c", OWN_CHECK, str(problem.resolve()), str(solution.resolve())], capture_output=True,
                              text=True, timeout=timeout_s, cwd=problem, env=env)
    except subprocess.TimeoutExpired:
        return {"passed": None, "message": f"timed out after {timeout_s:.0f} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        return {"passed": None, "message": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return json.loads(lines[-1])


def row_of(problem: Path, solution: Path, expected: bool, result, own: dict, seconds: float) -> dict:
    failing = next((f for f in result.findings if f.severity == "error"), None)
    agrees = own["passed"] is not None and result.passed == own["passed"] and not result.verdict.startswith("error")
    return {"problem": problem.name, "solution": f"{solution.parent.name}/{solution.name}", "must_pass": expected,
            "verdict": result.verdict, "passed": result.passed, "own_check": own["passed"],
            "own_message": own["message"], "agrees_with_own_check": agrees,
            "as_labelled": result.passed == expected and not result.verdict.startswith("error"),
            "speedup": getattr(result, "speedup", None), "seconds": round(seconds, 1),
            "finding": f"{failing.code}: {failing.message[:300]}" if failing else ""}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("root", type=Path)
    parser.add_argument("--mode", choices=["check", "profile"], default="check")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--budget-s", type=float, default=20.0, help="profile's timing budget per solution")
    parser.add_argument("--only", nargs="*", default=[], help="problem folder names to run (default: all)")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out, rows = args.out_dir / f"gpumode_{args.mode}.jsonl", []
    for problem, solution, expected in solutions(args.root):
        if args.only and problem.name not in args.only:
            continue
        begun = time.monotonic()
        result = judge(problem, solution, args, expected)
        seconds = time.monotonic() - begun
        row = row_of(problem, solution, expected, result, own_check(problem, solution, args.device), seconds)
        rows.append(row)
        with open(out, "a") as handle:
            handle.write(json.dumps(row) + "\n")
        own = {True: "pass", False: "fail", None: "error"}[row["own_check"]]
        label = "" if row["own_check"] is None or row["own_check"] == expected else " (its own check contradicts its folder)"
        print(f"{'ok ' if row['agrees_with_own_check'] else 'BAD'} {row['problem']:<14} {row['solution']:<38} "
              f"{row['verdict']:<16} own check: {own}{label} {row['seconds']:>6} s {row['finding'][:100]} "
              f"{row['own_message'][:100]}", flush=True)
    agree = sum(r["agrees_with_own_check"] for r in rows)
    labelled = sum(r["as_labelled"] for r in rows)
    print(f"{agree}/{len(rows)} verdicts agree with the problem's own check; {labelled}/{len(rows)} with the "
          f"solution's folder ({args.mode}, {args.device})")
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
