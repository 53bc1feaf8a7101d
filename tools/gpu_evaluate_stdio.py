"""GPU verification for issue 5: one `evaluate` through a stdio MCP session on a bundled problem.

Run on the GPU machine from the repo root:  python3 tools/gpu_evaluate_stdio.py OUT_DIR [problem]
Starts `kernel-mcp serve --root WS` as a real subprocess over stdio (the way Claude Code or Codex start
it), lists the tools, calls `evaluate` on the problem's Triton baseline with device=cuda, and writes the
structured result (compact summary plus `detail`), the progress messages, the wall time and the size of
the best snapshot's roofline chart (resource kernel://problems/PROBLEM/roofline.png) to
OUT_DIR/evaluate_stdio.json.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent


async def main(out: Path, problem: str) -> dict:
    workspace = Path(tempfile.mkdtemp(prefix="kmcp-ws-"))
    shutil.copytree(REPO / "problems" / problem, workspace / problem)
    shutil.copy(REPO / "problems" / problem / "baseline.py", workspace / "candidate.py")
    params = StdioServerParameters(command=sys.executable, args=["-m", "kernel_mcp", "serve", "--root", str(workspace)],
                                   env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])})
    progress: list[str] = []

    async def on_progress(done, total, message):
        progress.append(f"{done}/{total} {message}")

    started = time.perf_counter()
    async with Client(params) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        listed_s = time.perf_counter() - started
        result = await client.call_tool("evaluate", {"problem": problem, "candidate": "candidate.py", "device": os.environ.get("KERNEL_MCP_DEVICE", "cuda"),
                                                     "budget_s": 20, "detail": True}, progress_callback=on_progress)
        history = await client.call_tool("history", {"problem": problem})
        try:
            [chart] = (await client.read_resource(f"kernel://problems/{problem}/roofline.png")).contents
            chart_note = f"{chart.mime_type}, {len(chart.blob) * 3 // 4} bytes"
        except Exception as exc:  # noqa: BLE001  (recorded: the report says why there is no chart)
            chart_note = f"no chart: {exc}"
    report = {"problem": problem, "tools": tools, "tools_list_s": round(listed_s, 2),
              "evaluate_wall_s": round(time.perf_counter() - started, 1), "is_error": result.is_error,
              "structured": result.structured_content, "history": history.structured_content,
              "progress": progress, "roofline_png": chart_note}
    out.mkdir(parents=True, exist_ok=True)
    (out / "evaluate_stdio.json").write_text(json.dumps(report, indent=1, default=str))
    body = result.structured_content or {}
    print(json.dumps({k: body.get(k) for k in ("verdict", "passed", "trusted", "speedup", "summary")}, default=str))
    print(f"tools: {tools}\ntools/list after {listed_s:.2f} s; evaluate done after {report['evaluate_wall_s']} s; "
          f"{len(progress)} progress messages; error={result.is_error}; roofline.png: {chart_note}")
    return report


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "vector_add"))
