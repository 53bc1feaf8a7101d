"""The runner's tools that run a candidate unsealed, under a vendor's profiler or sanitizer (ncu, rocprofv3,
compute-sanitizer): the one-call target (steps/counter_target) with the device held alone, the file guard around
it, and whatever it leaves behind killed by its token. A mixin of ``LocalRunner`` (runners/local.py), which
gives it ``_guarded``, ``pin`` and ``_redactor``."""
from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kernel_mcp.backends.sanitizer import ToolReport
from kernel_mcp.counters.report import CounterReport
from kernel_mcp.problem import Problem
from kernel_mcp.results import ProfileResult
from kernel_mcp.worker import lease
from kernel_mcp.worker.isolation import proctree, sandbox
from kernel_mcp.worker.launch.counters import run_counters
from kernel_mcp.worker.launch.sanitize import run_sanitizer
from kernel_mcp.worker.overall import apply_witness
from kernel_mcp.worker.protocol import Device
from kernel_mcp.worker.runners.guard import tampering_finding


class UnsealedTargets:
    """``counters`` and ``sanitize``: a candidate's one call under a tool that cannot run in its namespaces."""

    # --- hardware counters: the candidate under ncu / rocprofv3, the device held exclusively --------------
    def counters(self, result: ProfileResult, problem: Problem, candidate: Path, device: Device | None,
                 shape: int = 0) -> None:
        """Counters on one shape of a passed profile, added to ``result``; the profiler's kernel duration is
        also an independent witness for the reported median (worker/overall.apply_witness)."""
        if device is None or not device.is_gpu or not result.passed or not result.shapes:
            result.counters = CounterReport(message="counters need a GPU and a candidate that passed profiling")
            return
        params = problem.benchmarks[shape] if result.settings.get("shapes") != "tests" else problem.tests[shape]
        with self._tool_target(problem, candidate, device, params) as (command, env, tampered):
            result.counters = run_counters(command, env, problem.spec.timeouts.total, device.vendor)
        if tampered:
            result.passed = result.trusted = False
            result.verdict = "fail: tampering"
            result.findings.append(tampering_finding(tampered))
        result.counters = self._redactor.model(result.counters)
        apply_witness(result, result.counters)

    # --- compute-sanitizer: the same target, each tool in turn, the device held exclusively -----------------
    def sanitize(self, problem: Problem, candidate: Path, device: Device, tools: tuple[str, ...],
                 params: dict) -> tuple[list[ToolReport], list[str]]:
        """The candidate's one-call target under each sanitizer tool: the reports, and what the file guard
        found the candidate changed (a file it restored)."""
        with self._tool_target(problem, candidate, device, params) as (command, env, tampered):
            reports = run_sanitizer(command, env, problem.spec.timeouts.total, tools)
        return [self._redactor.model(r) for r in reports], [tampering_finding(tampered).message] if tampered else []

    @contextmanager
    def _tool_target(self, problem: Problem, candidate: Path, device: Device,
                     params: dict) -> Iterator[tuple[list[str], dict[str, str], list[str]]]:
        """The candidate's one-call target (steps/counter_target) for a tool that runs it unsealed (ncu,
        compute-sanitizer), the device held alone: yields its command, its environment, and the list that
        receives what the file guard found changed once the block ends. What the target leaves behind is found
        by its token, and killed."""
        spec = json.dumps({"problem": str(problem.path), "candidate": str(candidate), "params": params,
                           "device": device.torch})
        token = secrets.token_hex(16)
        env = sandbox.harness_env(**self.pin, **{sandbox.RUN_TOKEN_VAR: token})
        with self._guarded(problem, candidate, in_namespace=False) as tampered:
            with lease.hold(device, exclusive=True):
                yield [sys.executable, "-B", "-m", "kernel_mcp.worker.steps.counter_target", spec], env, tampered
            proctree.kill_by_token(token)
