"""The only place candidate code runs, behind one door: this module. Code outside ``worker/`` imports the
names below from ``kernel_mcp.worker`` (and messages from ``kernel_mcp.worker.protocol``), never a module
inside; tools/layout_check.py holds that. The names load on first use, so importing any part of ``worker/``
(the judge, a candidate host) never loads runner code.

Each folder is a process, trust decreasing inward:

    runners/    the CALLER (CLI, MCP server, optimize; never imports problem or candidate code): picks where a
                request runs (``local.py`` this machine, ``pool.py`` a warm worker per GPU, ``ray.py`` a Ray
                cluster, all keeping ``base.Runner``), guards the files the harness relies on (``guard.py``)
                and keeps the caller's secrets out of results (``redact.py``)
    launch/     the CALLER's handles on every process it starts: a judge (``judge.py``, booted by ``env.py``'s
                command), a compile step (``step.py``), its fork server (``fork_client.py``; the server itself,
                ``fork_server.py``, is an isolated interpreter with torch and the harness imported that never
                holds a secret), compilers and profilers (``toolchain.py``, ``counters.py``), precompiled torch
                headers (``headers.py``), a CLI agent (``agent.py``)
    judge/      the TRUSTED judge (``python -S -I``, non-dumpable): boots (``start.py``), serves one request
                (``main.py``): check and profile, the reference and its float64 truth (kept for a batch's
                other checks: ``shared_truth.py``), the comparison, the verdict and its causes. Reports on a
                private pipe, each line HMAC-signed
    host/       the UNTRUSTED candidate host: boots with harness code only (forked from the judge's factory,
                ``factory.py``), imports exactly one candidate, runs it on tensors it receives
                (``main.py``); what it sends back is unpickled by a restricted unpickler
    steps/      the UNTRUSTED one-shot steps: record Triton launches, build them per target, capture C++
                sources, build a batch's torch extensions ahead of their checks, the target a hardware
                profiler wraps
    isolation/  what every untrusted process gets: allowlisted environment, scratch HOME, its own PID and mount
                namespace where the OS allows (file systems read-only but its scratch), its own kernel build
                caches and the precompiled headers it may read (``header_cache.py``), limits, a run token; its
                whole tree killed afterwards

Shared by more than one of them (this folder's root): ``protocol.py`` (every message that crosses a
process boundary, validated where it arrives), ``channel.py`` (signed lines, the restricted unpickler),
``lease.py``, ``needs.py`` and ``nvml.py`` (the per-device lease: timing alone, checks side by side while
their memory fits; what a problem's run needs), ``resolve.py`` (which device a request means), ``tensors.py``
and ``kernelbench.py`` (the judge's and the host's view of inputs and of KernelBench's Model/ModelNew),
``overall.py`` (a profile's standing from its shapes and findings), ``digests.py`` (which harness files a
process runs), ``trace.py`` (phase timestamps).
"""
from __future__ import annotations

import importlib
from typing import Any

# name -> the module inside worker/ that defines it
_DOOR = {
    # runners: where a request runs
    "Runner": "runners.base", "LocalRunner": "runners.local", "default_runner": "runners.local",
    "tampering_finding": "runners.guard", "PoolRunner": "runners.pool", "runner_for": "runners.pool",
    "RayRunner": "runners.ray", "remember_secret": "runners.redact",
    # the caller's handles on processes it starts
    "prestart_judge": "launch.judge", "run_tool": "launch.toolchain", "tool_env": "launch.toolchain",
    "ToolRun": "launch.toolchain", "run_agent_process": "launch.agent", "agent_event": "launch.agent",
    "build_headers": "launch.headers", "header_flag_sets": "isolation.header_cache",
    "KEPT_BUILDS": "isolation.kernel_cache",
    # the device's memory admission: what a batch's survey reads (batch/survey.py)
    "FIRST_SHARE": "needs", "MEMORY_BUDGET": "lease", "measured_need": "needs", "problem_key": "needs",
    # devices, and the hygiene of trusted processes
    "guess_kind": "resolve", "default_shapes": "resolve", "resolve_device": "resolve",
    "harden_trusted_process": "isolation.sandbox", "sealed_for_candidates": "isolation.sandbox",
    "trace_mark": "trace",
}
_RENAMED = {"remember_secret": "remember", "prestart_judge": "prestart", "agent_event": "event_of",
            "trace_mark": "mark", "header_flag_sets": "flag_sets",
            "KEPT_BUILDS": "KEEP_ENTRIES", "resolve_device": "resolve"}

__all__ = sorted(_DOOR)


def __getattr__(name: str) -> Any:
    if name not in _DOOR:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_DOOR[name]}"), _RENAMED.get(name, name))
    globals()[name] = value  # the next lookup is a plain one
    return value
