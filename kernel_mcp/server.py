"""The MCP server: a thin shell over kernel_mcp.tools (the only module that imports ``mcp``).

Transports: stdio (default), or streamable HTTP behind a bearer token (``serve_http``).

Every path argument is relative to the workspace root (the directory the server starts in, or --root)
and must resolve inside it (workspace.py). Long instruments run in a worker thread and report progress.
The server's runner (worker/runner.py) keeps processes booted ahead of need and takes each device's
lease, so several agents' calls share a GPU without disturbing each other's numbers.
Misuse becomes a ToolError whose message says what to do; an expected failure (a wrong kernel) is data.
"""
from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations

from kernel_mcp.results import CheckResult, UsageError
from kernel_mcp.snapshots import Snapshot
from kernel_mcp.stall import StallStatus
from kernel_mcp.workspace import Workspace
from kernel_mcp.worker.runner import LocalRunner
from kernel_mcp.summaries import (
    CompileSummary,
    EvaluateSummary,
    ProfileSummary,
    RooflineSummary,
    summarize_compile,
    summarize_evaluate,
    summarize_profile,
    summarize_roofline,
)

Shapes = Literal["benchmarks", "tests"]  # "tests": the problem's small test shapes (quick runs, CPU)
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
WRITES_SNAPSHOTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
OVERWRITES_FILES = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
INSTRUCTIONS = ("Instruments for GPU kernels. Loop: compile (fast feedback) -> evaluate (check, profile, roofline "
                "and a snapshot in one call) -> status (is the search stuck?). Paths are relative to the workspace. "
                "Results are compact summaries; pass detail=true for the full report.")


class ToolSpace(Workspace):
    """The workspace, with refusals as tool errors the model can act on."""

    def path(self, name: str, must_exist: bool = True) -> Path:
        try:
            return super().path(name, must_exist)
        except UsageError as exc:
            raise ToolError(str(exc)) from None


async def _run(ctx: Context | None, work: Callable[[Callable], Any]) -> Any:
    """Run a blocking instrument in a worker thread, forwarding its progress; UsageError -> ToolError."""
    def progress(message: str, done: int = 0, total: int = 0) -> None:
        if ctx is not None:
            anyio.from_thread.run(ctx.report_progress, float(done), float(total) if total else None, message)

    try:
        return await anyio.to_thread.run_sync(lambda: work(progress))
    except UsageError as exc:
        raise ToolError(str(exc)) from None


def build_server(root: str | Path = ".", runner: LocalRunner | None = None) -> MCPServer:
    """The server for one workspace. Its runner keeps a judge and step hosts booted ahead of need (from
    the first tool call on), so each call after the first finds interpreter, torch and device ready."""
    space = ToolSpace(root)
    runner = runner or LocalRunner(warm=True)
    server = MCPServer("kernel_mcp", instructions=INSTRUCTIONS)

    @server.tool(annotations=READ_ONLY)
    async def check(problem: str, candidate: str, device: str = "auto", *, ctx: Context) -> CheckResult:
        """Does the candidate compute the problem's function? Runs every test plus secret-seeded copies in a
        sandbox and judges each output against a float64 reference with derived tolerances."""
        from kernel_mcp.tools.check import check as run
        prob, cand = space.path(problem), space.path(candidate)
        return await _run(ctx, lambda progress: run(prob, cand, device=device, on_progress=progress, runner=runner))

    @server.tool(annotations=READ_ONLY)
    async def compile(candidate: str, problem: str | None = None, targets: list[str] | None = None,  # noqa: A001
                      asm: bool = False, detail: bool = False, *, ctx: Context) -> CompileSummary:
        """Compile the candidate's kernels for NVIDIA/AMD targets (sm_80, sm_90a, sm_100, gfx90a, gfx942,
        gfx950...): errors with file and line, registers, spills, shared memory/LDS, occupancy (instruction
        counts and asm in the detail). Compact summary; detail=true adds the full result under `detail`."""
        from kernel_mcp.tools.compile import compile as run
        cand = space.path(candidate)
        prob = space.path(problem) if problem else None
        result = await _run(ctx, lambda progress: run(cand, problem=prob, targets=targets, asm=asm,
                                                      on_progress=progress, runner=runner))
        return summarize_compile(result, detail)

    @server.tool(annotations=READ_ONLY)
    async def profile(problem: str, candidate: str, baseline: str | None = None, device: str = "auto",
                      budget_s: float = 60.0, shapes: Shapes = "benchmarks", detail: bool = False,
                      *, ctx: Context) -> ProfileSummary:
        """Check, then time the candidate against the reference (and a baseline) on every benchmark shape:
        medians with 95% CIs, speedup, and integrity findings ('trusted' says whether to believe it). Compact
        summary; detail=true adds the full result under `detail`."""
        from kernel_mcp.tools.profile import profile as run
        from kernel_mcp.tools.profile import settings_from
        prob, cand = space.path(problem), space.path(candidate)
        base = space.path(baseline) if baseline else None

        def work(progress):
            return run(prob, cand, baseline=base, device=device, on_progress=progress, runner=runner,
                       settings=settings_from(budget_s=budget_s, shapes=shapes))
        return summarize_profile(await _run(ctx, work), detail)

    @server.tool(annotations=READ_ONLY)
    async def roofline(problem: str, candidate: str, device: str = "auto", png: str | None = None,
                       budget_s: float = 60.0, shapes: Shapes = "benchmarks", detail: bool = False,
                       *, ctx: Context) -> RooflineSummary:
        """Profile, then place candidate and reference under the device's memory and compute roofs: % of the
        binding roof and bound class per shape; optionally a PNG chart written in the workspace. Compact summary;
        detail=true adds the full result (headroom, achieved TFLOP/s and GB/s...) under `detail`."""
        from kernel_mcp.tools.profile import settings_from
        from kernel_mcp.tools.roofline import roofline as run
        prob, cand = space.path(problem), space.path(candidate)
        chart = space.path(png, must_exist=False) if png else None

        def work(progress):
            return run(prob, cand, device=device, png=chart, on_progress=progress, runner=runner,
                       settings=settings_from(budget_s=budget_s, shapes=shapes))
        return summarize_roofline(await _run(ctx, work), detail)

    @server.tool(annotations=WRITES_SNAPSHOTS)
    async def evaluate(problem: str, candidate: str, device: str = "auto", budget_s: float = 60.0,
                       shapes: Shapes = "benchmarks", author: str = "agent", note: str = "",
                       parent: str | None = None, detail: bool = False, *, ctx: Context) -> EvaluateSummary:
        """The one call per attempt: compile -> check -> profile -> roofline -> snapshot (kept in git with
        its numbers; `parent` is the snapshot this attempt started from). Compact summary with the snapshot
        id; detail=true adds the full result under `detail`."""
        from kernel_mcp.tools.evaluate import evaluate as run
        prob, cand = space.path(problem), space.path(candidate)

        def work(progress):
            return run(space.root, prob, cand, device=device, budget_s=budget_s, shapes=shapes, author=author,
                       note=note, parent=parent, on_progress=progress, runner=runner)
        return summarize_evaluate(await _run(ctx, work), detail)

    _snapshot_tools(server, space)
    _resources(server, space)
    _prompts(server)
    return server


def _snapshot_tools(server: MCPServer, space: Workspace) -> None:
    from kernel_mcp.tools import snapshot as snap

    @server.tool(annotations=WRITES_SNAPSHOTS)
    async def snapshot(problem: str, candidate: str, author: str = "agent", note: str = "",
                       parent: str | None = None, *, ctx: Context) -> Snapshot:
        """Keep the candidate as a snapshot (a git commit under refs/kernel_mcp/, never on your branch),
        without metrics; `evaluate` snapshots with all its numbers."""
        space.path(candidate)
        return await _run(ctx, lambda _: snap.snapshot(space.root, problem, candidate, author=author, note=note,
                                                       parent=parent))

    @server.tool(annotations=READ_ONLY)
    async def history(problem: str | None = None, passed_only: bool = False, author: str | None = None,
                      limit: int = 20, *, ctx: Context) -> list[Snapshot]:
        """The leaderboard of snapshots, best first (passed and trusted, then speedup)."""
        return await _run(ctx, lambda _: snap.history(space.root, problem, passed_only, author, limit))

    @server.tool(annotations=READ_ONLY)
    async def diff(a: str, b: str | None = None, *, ctx: Context) -> str:
        """Unified diff from snapshot a to snapshot b (default: to the best snapshot of a's problem)."""
        return await _run(ctx, lambda _: snap.diff(space.root, a, b))

    @server.tool(annotations=OVERWRITES_FILES)
    async def restore(snapshot_id: str, force: bool = False, *, ctx: Context) -> list[str]:
        """Write a snapshot's files into the workspace. Refuses to overwrite unsaved changes unless force."""
        return await _run(ctx, lambda _: snap.restore(space.root, snapshot_id, force))

    @server.tool(annotations=READ_ONLY)
    async def status(problem: str, *, ctx: Context) -> StallStatus:
        """Is the search stuck? Evaluations since the last significant improvement, failures in a row, code
        growth, and a suggested next move (up to 'restart from scratch')."""
        return await _run(ctx, lambda _: snap.status(space.root, problem))


PROBLEM_URI = "kernel://problems/{+problem}/"  # {+...}: a problem may sit in a subfolder (problems/vector_add)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _resources(server: MCPServer, space: Workspace) -> None:
    """Read-only views of the workspace: a problem's statement and the best kernel found so far."""

    def problem_at(problem: str):
        from kernel_mcp.problem import load_problem
        try:
            return load_problem(_inside(space, problem))
        except UsageError as exc:
            raise ResourceError(str(exc)) from None

    def best(problem: str, name: str | None = None):
        from kernel_mcp.tools.snapshot import best_file
        try:
            return best_file(space.root, Path(problem).name, name)  # evaluate names snapshots by folder name
        except UsageError as exc:
            raise ResourceError(str(exc)) from None

    @server.resource(PROBLEM_URI + "description", mime_type="text/markdown")
    def description(problem: str) -> str:
        """What the kernel must compute (task.yml's description, or a KernelBench file's docstring)."""
        return problem_at(problem).description or "(this problem has no description)"

    @server.resource(PROBLEM_URI + "reference", mime_type="text/x-python")
    def reference(problem: str) -> str:
        """The reference implementation the candidate is checked and timed against."""
        return _inside(space, problem_at(problem).reference_file).read_text()

    @server.resource(PROBLEM_URI + "task", mime_type="application/yaml")
    def task(problem: str) -> str:
        """task.yml: tests, benchmark shapes, tolerances, flops and bytes per call."""
        prob = problem_at(problem)
        if prob.kind != "gpumode":
            raise ResourceError(f"{problem} is a KernelBench file: it has no task.yml (read its reference)")
        return _inside(space, prob.path / "task.yml").read_text()

    @server.resource(PROBLEM_URI + "best", mime_type="text/x-python")
    def best_kernel(problem: str) -> str:
        """The source of the best snapshot (passed, trusted, fastest) of this problem."""
        _, source = best(problem)
        return source.decode(errors="replace")

    @server.resource(PROBLEM_URI + "roofline.png", mime_type="image/png")
    def best_roofline(problem: str) -> bytes:
        """The roofline chart kept with the best snapshot by evaluate (needs a GPU with known ceilings)."""
        snap, chart = best(problem, "roofline.png")
        if chart is None:
            raise ResourceError(f"the best snapshot {snap.id[:10]} of {problem} has no roofline chart (it was "
                                "not evaluated on a GPU with known ceilings)")
        return chart

    @server.resource("kernel://charts/{+path}", mime_type="image/png")
    def chart(path: str) -> bytes:
        """A PNG file in the workspace, e.g. one the roofline tool wrote with png=..."""
        file = _inside(space, path)
        data = file.read_bytes() if file.is_file() and file.suffix.lower() == ".png" else b""
        if not data.startswith(PNG_MAGIC):
            raise ResourceError(f"{path} is not a PNG file")
        return data


def _inside(space: Workspace, name: str | Path) -> Path:
    """The workspace path, for a resource: a file linked out of the workspace is refused like a path."""
    try:
        return space.path(os.path.relpath(name, space.root) if Path(name).is_absolute() else str(name))
    except ToolError as exc:
        raise ResourceError(str(exc)) from None


OPTIMIZE_KERNEL = """\
Make {candidate} a faster, correct kernel for the problem in {problem}.
Read the problem first: resource kernel://problems/{problem}/description (and /reference, /task).

Loop, one change per iteration:
1. Edit {candidate}. Keep `custom_kernel(data)` returning a new output, like the reference.
2. `compile` (candidate={candidate!r}, problem={problem!r}): fix errors (file:line), then watch
   spills, registers, shared memory and occupancy.
3. `evaluate` (problem={problem!r}, candidate={candidate!r}, parent=<snapshot you started from>): it checks,
   times, places each shape on the roofline and keeps a snapshot. Read `verdict`, `failures`, `findings`,
   and per shape `speedup`, `percent_of_roof` and `bound` (memory, compute or latency/underutilised).
   A speedup is real only when `passed` and `trusted` are both true.
4. `status` (problem={problem!r}): if it suggests a restart, start from scratch with a different design
   (`history` and resource kernel://problems/{problem}/best show what worked); do not keep patching.
Stop when the shapes sit near their roof or status says the search has stalled.

Never cheat; the checker catches it and fails the run:
- outputs compared with a float64 reference on fresh secret-seeded inputs (no hard-coded answers,
  no caching results between calls, no precision below what the tolerance allows);
- inputs must not be modified, outputs must not alias inputs; type, shape, dtype and device must match;
- timing outputs are validated too; a median faster than physics or the profiler's witness is not credited;
- editing the problem, the harness or kernel_mcp, or planting modules, fails with `fail: tampering`.
"""


def _prompts(server: MCPServer) -> None:
    @server.prompt(title="Optimize a GPU kernel")
    def optimize_kernel(problem: str, candidate: str) -> str:
        """The iteration loop for one problem: compile, evaluate, read the roofline and findings, status."""
        return OPTIMIZE_KERNEL.format(problem=problem, candidate=candidate)


def main(root: str = ".") -> None:
    runner = LocalRunner(warm=True)
    try:
        build_server(root, runner).run()  # stdio
    finally:
        runner.close()  # the warm processes would end with their pipes anyway; this is sooner


# --- streamable HTTP ----------------------------------------------------------------------------------

class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``, else 401."""

    def __init__(self, app, token: str):
        if not token:
            raise ValueError("an empty bearer token would let anyone in")
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="kernel_mcp"')]})
            await send({"type": "http.response.body",
                        "body": b'{"error": "unauthorized: send Authorization: Bearer <token>"}'})
            return
        await self.app(scope, receive, send)  # lifespan and authorized requests pass through

    def _authorized(self, scope) -> bool:
        sent = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
        return hmac.compare_digest(sent, self.expected)  # constant time: no timing oracle for the token


def parse_listen(text: str) -> tuple[str, int]:
    """'PORT', ':PORT' or 'HOST:PORT' ('[::1]:PORT' for IPv6) -> (host, port); the host defaults to loopback."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--http wants HOST:PORT or PORT (e.g. 127.0.0.1:8765); got {text!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost may resolve anywhere
        return False


def serve_http(root: str, listen: str, token: str | None = None) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp behind a bearer token (given, or generated and printed)."""
    import uvicorn
    host, port = parse_listen(listen)
    generated = not token
    token = token or secrets.token_urlsafe(32)
    shown = f"[{host}]" if ":" in host else host
    say = sys.stderr.write
    say(f"kernel_mcp: streamable HTTP at http://{shown}:{port}/mcp (workspace {Path(root).resolve()})\n")
    say(f"kernel_mcp: bearer token {token} (clients send it as 'Authorization: Bearer <token>')\n" if generated
        else "kernel_mcp: bearer token from --token / KERNEL_MCP_TOKEN\n")
    if not is_loopback(host):
        say(f"kernel_mcp: WARNING: listening on {host}, reachable from other machines; anyone with the token "
            "can run code through this server. Prefer 127.0.0.1 with an SSH tunnel.\n")
    runner = LocalRunner(warm=True)
    app = BearerAuth(build_server(root, runner).streamable_http_app(host=host), token)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        runner.close()
