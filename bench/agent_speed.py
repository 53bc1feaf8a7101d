"""Evaluations at agent speed (issue 11): the same calls against two versions of kernel_mcp, side by side
in one run, interleaved call by call so the machine's noise falls on both alike.

    python bench/agent_speed.py OUT_DIR --before DIR [--device cuda] [--rounds 3] [--parts server,cli]

DIR holds the older package (``git archive <commit> kernel_mcp | tar -x -C DIR``); the newer one is this
checkout. Parts:

server  one MCP server of each version over stdio (as Claude Code or Codex start it), each on its own
        workspace and cache: `check` of every bundled baseline, then `evaluate` of vector_add (check,
        profile to +-1%, roofline, snapshot), `rounds` times each. The first call of a server is reported
        apart (it pays the boot); the median of the others is what an agent waits for per attempt.
cli     the one-shot command `kernel-mcp check` on vector_add, `rounds` + 1 times per version (the first
        run warms the disk cache and is dropped).

Writes OUT_DIR/agent_speed.json and prints a markdown table per part.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBLEMS = REPO / "problems"
BUNDLED = sorted(p.name for p in PROBLEMS.iterdir() if (p / "baseline.py").exists())


def version_env(package_root: Path, cache: Path) -> dict[str, str]:
    """The environment a version runs in: its package first on PYTHONPATH, a cache of its own."""
    path = os.pathsep.join(filter(None, [str(package_root), os.environ.get("PYTHONPATH", "")]))
    return {**os.environ, "PYTHONPATH": path, "KERNEL_MCP_CACHE": str(cache)}


def workspace(scratch: Path, name: str) -> Path:
    root = scratch / f"ws-{name}"
    for problem in BUNDLED:
        shutil.copytree(PROBLEMS / problem, root / problem, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def save(out: Path, rows: list[dict]) -> None:
    """After every call: a run cut short by a time limit still leaves what it measured."""
    (out / "agent_speed.rows.json").write_text(json.dumps(rows, indent=1))


async def server_part(versions: dict[str, Path], scratch: Path, device: str, rounds: int, out: Path) -> list[dict]:
    from contextlib import AsyncExitStack

    from mcp import Client, StdioServerParameters
    rows: list[dict] = []
    async with AsyncExitStack() as stack:
        clients = {}
        for name, root in versions.items():
            ws = workspace(scratch, name)
            params = StdioServerParameters(command=sys.executable, args=["-m", "kernel_mcp", "serve", "--root", str(ws)],
                                           env=version_env(root, scratch / f"cache-{name}"), cwd=str(scratch))
            clients[name] = await stack.enter_async_context(Client(params))
        calls = [("check", p, {"problem": p, "candidate": f"{p}/baseline.py", "device": device}) for p in BUNDLED]
        evaluate = {"problem": "vector_add", "candidate": "vector_add/baseline.py", "device": device}
        if device == "cpu":
            evaluate.update(shapes="tests", budget_s=10)
        calls.append(("evaluate", "vector_add", evaluate))
        for round_ in range(rounds):
            for tool, problem, arguments in calls:
                for name, client in clients.items():  # interleaved: each call of one version, then the other
                    started = time.perf_counter()
                    result = await client.call_tool(tool, arguments)
                    seconds = time.perf_counter() - started
                    body = result.structured_content or {}
                    rows.append({"part": "server", "version": name, "tool": tool, "problem": problem, "round": round_,
                                 "seconds": round(seconds, 3), "verdict": body.get("verdict"),
                                 "error": result.is_error})
                    print(f"  server {name:6s} {tool:8s} {problem:12s} round {round_}: {seconds:6.2f} s "
                          f"{body.get('verdict')}", flush=True)
                    save(out, rows)
    return rows


def cli_part(versions: dict[str, Path], scratch: Path, device: str, rounds: int, out: Path,
             rows: list[dict]) -> list[dict]:
    problem = PROBLEMS / "vector_add"
    for round_ in range(rounds + 1):
        for name, root in versions.items():
            command = [sys.executable, "-m", "kernel_mcp", "check", str(problem), str(problem / "baseline.py"),
                       "--device", device, "--json"]
            started = time.perf_counter()
            done = subprocess.run(command, env=version_env(root, scratch / f"cache-{name}"), cwd=scratch,
                                  capture_output=True, text=True)
            seconds = time.perf_counter() - started
            verdict = json.loads(done.stdout)["verdict"] if done.stdout.strip().startswith("{") else done.stderr[-300:]
            if round_:  # the first round warms the page cache of both versions
                rows.append({"part": "cli", "version": name, "tool": "check", "problem": "vector_add",
                             "round": round_, "seconds": round(seconds, 3), "verdict": verdict})
            print(f"  cli    {name:6s} check    vector_add   round {round_}: {seconds:6.2f} s {verdict}", flush=True)
            save(out, rows)
    return rows


def table(rows: list[dict]) -> str:
    """Per (part, tool, problem): the first call and the median of the rest, before and after, and their ratio."""
    lines = ["| part | call | problem | before first s | before median s | after first s | after median s | before/after |",
             "|---|---|---|---|---|---|---|---|"]
    keys = dict.fromkeys((r["part"], r["tool"], r["problem"]) for r in rows)
    for part, tool, problem in keys:
        cells = []
        medians = {}
        for name in ("before", "after"):
            times = [r["seconds"] for r in rows if (r["part"], r["tool"], r["problem"], r["version"]) ==
                     (part, tool, problem, name)]
            rest = times[1:] if part == "server" and len(times) > 1 else times
            medians[name] = statistics.median(rest) if rest else float("nan")
            cells += [f"{times[0]:.2f}" if part == "server" else "-", f"{medians[name]:.2f}"]
        ratio = medians["before"] / medians["after"] if medians["after"] else float("nan")
        lines.append(f"| {part} | {tool} | {problem} | " + " | ".join(cells) + f" | {ratio:.2f}x |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parts", default="server,cli")
    args = parser.parse_args()
    versions = {"before": args.before.resolve(), "after": REPO}
    args.out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="kmcp-speed-"))
    rows: list[dict] = []
    started = time.time()
    if "server" in args.parts:
        rows += asyncio.run(server_part(versions, scratch, args.device, args.rounds, args.out))
    if "cli" in args.parts:
        rows = cli_part(versions, scratch, args.device, args.rounds, args.out, rows)
    report = {"device": args.device, "rounds": args.rounds, "started": time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                                                     time.gmtime(started)),
              "rows": rows, "table": table(rows)}
    (args.out / "agent_speed.json").write_text(json.dumps(report, indent=1))
    print(report["table"])


if __name__ == "__main__":
    main()
