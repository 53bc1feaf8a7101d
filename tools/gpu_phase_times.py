"""Where the seconds of a cold check/profile go (developer script, run on the GPU machine from the repo root).

    python3 tools/gpu_phase_times.py OUT_DIR [cuda|cpu]

Prints bare start-up costs (interpreter, torch, CUDA context, triton) and, for each bundled baseline, the
time from the call to each progress message of a `check` (and a `profile` of vector_add), so the cost of
each phase (judge start, reference, candidate host start, import, cases) can be read off.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SNIPPETS = {
    "python": "pass",
    "import torch": "import torch",
    "torch + CUDA context": "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()",
    "import triton": "import triton",
    "import kernel_mcp.cli.main": "import kernel_mcp.cli.main",
    "import kernel_mcp.worker.judge.check": "import kernel_mcp.worker.judge.check",
}


def bare(device: str) -> dict[str, float]:
    out = {}
    for name, code in SNIPPETS.items():
        if "cuda" in code and device != "cuda":
            continue
        best = min(_wall([sys.executable, "-c", code]) for _ in range(3))
        out[name] = round(best, 3)
        print(f"{name:40s} {best:7.3f} s", flush=True)
    return out


def _wall(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=REPO)
    return time.perf_counter() - started


def phases(run, *args, **kwargs) -> tuple[list[tuple[float, str]], object]:
    marks: list[tuple[float, str]] = []
    started = time.perf_counter()

    def note(message: str, done: int = 0, total: int = 0) -> None:
        marks.append((round(time.perf_counter() - started, 3), message))

    result = run(*args, on_progress=note, **kwargs)
    marks.append((round(time.perf_counter() - started, 3), f"done: {result.verdict}"))
    return marks, result


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    device = sys.argv[2] if len(sys.argv) > 2 else "cuda"
    from kernel_mcp.tools.check import check
    from kernel_mcp.tools._request import settings_from
    from kernel_mcp.tools.profile import profile
    report: dict = {"bare": bare(device), "check": {}, "profile": {}}
    for folder in sorted((REPO / "problems").iterdir()):
        if not (folder / "baseline.py").exists():
            continue
        for attempt in ("first", "second"):
            marks, _ = phases(check, folder, folder / "baseline.py", device=device)
            report["check"][f"{folder.name} ({attempt})"] = marks
            print(f"check {folder.name} ({attempt}): " + "; ".join(f"{t:.2f} {m[:40]}" for t, m in marks[:3])
                  + f" ... {marks[-1][0]:.2f} s", flush=True)
    folder = REPO / "problems" / "vector_add"
    marks, result = phases(profile, folder, folder / "baseline.py", device=device,
                           settings=settings_from(budget_s=60))
    slim = [m for i, m in enumerate(marks) if i < 12 or "shape" not in m[1] or i == len(marks) - 1
            or marks[i - 1][1].split(":")[0] != m[1].split(":")[0]]
    report["profile"]["vector_add"] = {"marks": slim, "progress_messages": len(marks),
                                       "samples": [[s.candidate.samples, s.reference.samples] for s in result.shapes
                                                   if s.candidate and s.reference]}
    print(f"profile vector_add: {len(marks)} progress messages, {marks[-1][0]:.1f} s")
    for t, m in slim:
        print(f"   {t:8.2f}  {m[:90]}")
    (out / "phases.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
