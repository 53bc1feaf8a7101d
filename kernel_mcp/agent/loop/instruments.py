"""The instruments a model agent may call beside ``propose`` (compile, check, profile, roofline, counters,
history, diff): the panel an IDE agent has through the MCP server, for a model driven through an API.

Each instrument runs on a candidate the model writes as an edit to its island's current best (the same
SEARCH/REPLACE blocks as ``propose``; no edit: the current best itself), in the island's workspace. Only
``propose`` can change the best: an instrument's answer is information, never a promotion.

Every call is journaled (a ``probe`` record before it runs, ``probe_done`` after) and its answer cached in
the run folder by content (the instrument and the candidate's bytes): after a kill and
``--resume`` a question asked again is answered from the cache, never run again. A call that runs on the
device (check, profile, roofline, counters) counts against the run's evaluation budget as an evaluation
does; its seconds count against the time budget as everything does.

A CLI agent calls the same instruments through the run's MCP endpoint (run_endpoint.py), whose runner is a
``ChargedRunner``: each check or timing run it asks for is journaled and charged the same way (its answers
are the MCP server's, not cached by the loop).
"""
from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel_mcp.agent.edits import apply_edit
from kernel_mcp.agent.loop.feedback import FEEDBACK_CHARS, check_lines, compile_lines, run_lines
from kernel_mcp.agent.loop.ledger import Ledger
from kernel_mcp.agent.providers.base import ToolSpec
from kernel_mcp.agent.run.folder import write_once
from kernel_mcp.counters import CounterReport
from kernel_mcp.errors import UsageError
from kernel_mcp.results import ProfileSettings
from kernel_mcp.tools.check import check
from kernel_mcp.tools.compile import compile as compile_candidate
from kernel_mcp.tools.profile import profile
from kernel_mcp.tools.roofline import roofline
from kernel_mcp.views.summaries import clip
from kernel_mcp.worker import default_runner
from kernel_mcp.worker.protocol import JudgeRequest

DEVICE_TOOLS = ("check", "profile", "roofline", "counters")  # each call counts as an evaluation
HISTORY_ROWS = 15
_EDIT = {"edit": {"type": "string", "description": "SEARCH/REPLACE blocks against the current best, exactly as "
                                                   "propose takes them (or one fenced whole file); empty or "
                                                   "absent: the current best itself"}}


def _tool(name: str, description: str, properties: dict[str, Any] | None = None) -> ToolSpec:
    return ToolSpec(name=name, description=description,
                    parameters={"type": "object", "properties": _EDIT if properties is None else properties})


TOOLS = [
    _tool("compile", "Build the candidate's kernels (no run): errors with file and line, registers, spills, "
                     "shared memory, occupancy. Free of the evaluation budget."),
    _tool("check", "Is the candidate correct? Runs it on the task's tests with fresh secret seeds: the verdict, "
                   "and for a failure the failing cases with their first mismatching elements. Counts as an "
                   "evaluation."),
    _tool("profile", "Time the candidate beside the current best and the reference on the timed shapes: per shape "
                     "the times, the speedups with 95% intervals. Counts as an evaluation."),
    _tool("roofline", "Where the candidate stands against the device's roofs on each shape: % of the roof and "
                      "whether it is memory-, compute- or latency-bound. Counts as an evaluation."),
    _tool("counters", "Hardware counters of the candidate's kernels on one shape (NVIDIA ncu, AMD rocprofv3): "
                      "DRAM and SM throughput, occupancy, cache hit rates, top warp stalls. Needs a GPU. Counts "
                      "as an evaluation."),
    _tool("history", "What this run has evaluated so far, most recent first: hash, island, verdict, speedup "
                     "over the reference, the idea; and each island's current best.", {}),
    _tool("diff", "Unified diff between two evaluated kernels of this run, by hash (a prefix is enough; "
                  "see history); b defaults to this island's current best.",
          {"a": {"type": "string"}, "b": {"type": "string"}}),
]
NAMES = {tool.name for tool in TOOLS}


def probe(opt: Ledger, island: str, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    """Answer an instrument call (the text for the model, and whether it is an error), journaled and
    cached; UsageError-worthy input (an edit that does not apply, an unknown hash) is an error answer."""
    try:
        if name in _READERS:  # reads of the run itself: journaled, never cached (the run moves on)
            return _journaled(opt, island, name, _digest(name, arguments),
                              lambda: _READERS[name](opt, island, arguments), cache=False), False
        source = _candidate(opt, island, str(arguments.get("edit") or ""))
        beside = opt.incumbent(island) if name in ("profile", "counters") else None  # timed beside the best
        key = _digest(name, {"source": source, "beside": beside})
        return _journaled(opt, island, name, key, lambda: clip(_run(opt, island, name, source), FEEDBACK_CHARS)), False
    except UsageError as exc:
        return str(exc), True


def _journaled(opt: Ledger, island: str, name: str, key: str, answer: Callable[[], str], cache: bool = True) -> str:
    """``answer()`` between a probe record and its probe_done; from the run folder's cache when it was
    answered before (``cache``), charged only when it ran on the device."""
    cached = opt.folder.cached(f"probe-{key}") if cache else None
    if cached is None:
        opt.folder.record("probe", island=island, tool=name, key=key)
        cached = {"text": answer()}
        if cache:
            opt.folder.cache(f"probe-{key}", cached)
        opt.folder.record("probe_done", island=island, tool=name, key=key, charged=name in DEVICE_TOOLS)
    else:
        opt.folder.record("probe_done", island=island, tool=name, key=key, charged=False)
    return cached["text"]


def _candidate(opt: Ledger, island: str, edit: str) -> str:
    current = opt.incumbent_source(island)
    if not edit.strip():
        return current
    applied = apply_edit(current, edit)
    if not applied.ok:
        raise UsageError("the edit was not applied: " + "; ".join(applied.errors))
    return applied.source


def _run(opt: Ledger, island: str, name: str, source: str) -> str:
    path = opt.workspace(island) / "probes" / f"{_digest('file', {'source': source})}.py"
    path.parent.mkdir(exist_ok=True)
    write_once(path, source.encode(), durable=False)
    incumbent = opt.path_of(opt.incumbent(island))
    settings = ProfileSettings(budget_s=opt.budget_s, shapes=opt.shapes)
    if name == "compile":
        built = compile_candidate(path, problem=opt.problem, runner=opt.runner)
        return "\n".join([f"built: {'yes' if built.ok else 'no'}"] + compile_lines(built))
    if name == "check":
        result = check(opt.problem, path, device=opt.device, runner=opt.runner)
        return "\n".join([f"verdict: {result.verdict}"] + check_lines(result))
    if name == "roofline":
        roof = roofline(opt.problem, path, device=opt.device, settings=settings, runner=opt.runner)
        return "\n".join([f"verdict: {roof.profile.verdict}"] + check_lines(roof.profile.check)
                         + run_lines(roof.profile, roof))
    prof = profile(opt.problem, path, baseline=incumbent, device=opt.device, settings=settings, runner=opt.runner,
                   counters=name == "counters")
    lines = [f"verdict: {prof.verdict}"] + check_lines(prof.check)
    return "\n".join(lines + (counter_lines(prof.counters) if name == "counters" else run_lines(prof)))


def counter_lines(report: CounterReport | None) -> list[str]:
    if report is None or not report.available:
        return [f"counters: not available ({report.message if report else 'no report'})"]
    lines = [f"counters ({report.tool}{', unverified on hardware' if report.unverified else ''}):"]
    for k in report.kernels:
        numbers = {"us": k.duration_us, "DRAM %": k.dram_pct, "SM %": k.compute_pct, "occupancy %": k.occupancy_pct,
                   "L1 hit %": k.l1_hit_pct, "L2 hit %": k.l2_hit_pct, "registers": k.registers_per_thread,
                   "block": k.block_size, "grid": k.grid_size}
        shown = ", ".join(f"{label} {value:.4g}" for label, value in numbers.items() if value is not None)
        stalls = ", ".join(f"{s.reason} {s.share_pct:.0f}%" for s in k.stalls)
        lines.append(f"- {k.name}: {shown}" + (f"; stalls: {stalls}" if stalls else ""))
    return lines + ([report.message] if report.message else [])


def _history(opt: Ledger, island: str, arguments: dict[str, Any]) -> str:
    done = list(opt.state.evaluated.values())[::-1][:HISTORY_ROWS]
    rows = [f"{d.candidate_hash[:10]}  island {d.island}  {d.role:<9} {d.verdict:<22} "
            f"{f'{d.speedup:.3g}x' if d.speedup else '-':>8}  {d.idea[:70]}" for d in done]
    best = [f"island {i}: {key[:10]}" for i, key in sorted(opt.state.incumbents.items())]
    return "\n".join(["hash        island    role      verdict                speedup  idea", *rows,
                      "current best: " + ", ".join(best)])


def _diff(opt: Ledger, island: str, arguments: dict[str, Any]) -> str:
    a = _hash(opt, str(arguments.get("a") or ""))
    b = _hash(opt, str(arguments.get("b") or "")) if arguments.get("b") else opt.incumbent(island)
    lines = difflib.unified_diff(opt.path_of(a).read_text().splitlines(keepends=True),
                                 opt.path_of(b).read_text().splitlines(keepends=True), a[:10], b[:10])
    return "".join(lines) or "the two kernels are the same"


def _hash(opt: Ledger, prefix: str) -> str:
    found = [key for key in opt.state.evaluated if prefix and key.startswith(prefix)]
    if len(found) != 1:
        raise UsageError(f"{prefix!r} names {'no' if not found else 'more than one'} evaluated kernel of this run "
                         "(see history)")
    return found[0]


def _digest(name: str, arguments: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps([name, arguments], sort_keys=True).encode()).hexdigest()[:24]


_READERS = {"history": _history, "diff": _diff}


class ChargedRunner:
    """A runner for a CLI agent's instruments: every judge run (check, profile, roofline) journaled as a
    probe and charged as an evaluation; everything else as the run's own runner does it."""

    def __init__(self, opt: Ledger, island: str):
        self.opt, self.island = opt, island
        self.inner = opt.runner or default_runner()

    def judge(self, request: JudgeRequest, device: str = "auto", on_progress=None, problem=None):
        candidate = Path(request.candidate)
        key = _digest(request.mode, {"source": candidate.read_text(errors="replace") if candidate.is_file() else "",
                                     "settings": request.settings.model_dump()})
        self.opt.folder.record("probe", island=self.island, tool=request.mode, key=key)
        result = self.inner.judge(request, device, on_progress, problem)
        self.opt.folder.record("probe_done", island=self.island, tool=request.mode, key=key, charged=True)
        return result

    def __getattr__(self, name: str):
        return getattr(self.inner, name)
