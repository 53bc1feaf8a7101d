"""The shared vocabulary: typed results every instrument returns.

Expected failure is data (``CheckResult(passed=False, ...)``); misuse raises ``UsageError``.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class UsageError(Exception):
    """The caller asked for something impossible (bad path, malformed problem). CLI exit code 2."""


class Finding(BaseModel):
    """One thing the harness noticed. ``code`` is stable and machine-readable; ``message`` is for people."""

    code: str
    message: str
    severity: str = "error"  # "error" fails the verdict; "warning" and "info" do not


class Mismatch(BaseModel):
    index: list[int]
    got: float
    expected: float
    bound: float


class Comparison(BaseModel):
    """How far one output leaf is from the float64 reference, in absolute terms and in units of the bound."""

    leaf: str = ""  # path of the tensor inside the output structure, "" for a plain tensor
    ok: bool
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    max_error_in_bounds: float = 0.0  # max |out-ref| / per-element bound; <= 1 passes
    norm_error: float = 0.0  # ||out-ref||_F / ||ref||_F
    norm_bound: float = 0.0
    mismatches: int = 0
    elements: int = 0
    first_mismatches: list[Mismatch] = Field(default_factory=list)
    note: str = ""


class CaseResult(BaseModel):
    """One call of the candidate on one input."""

    name: str  # e.g. "test 2" or "test 2 (fresh seed)"
    params: dict[str, Any]  # the task's params; a fresh seed is shown as "secret"
    passed: bool
    failure: str = ""  # "" when passed; else mismatch, exception, crash, timeout, mutation, alias, ...
    message: str = ""
    comparisons: list[Comparison] = Field(default_factory=list)


class CheckResult(BaseModel):
    """The verdict of ``check``: did the candidate compute the problem's function on every input?"""

    passed: bool
    verdict: str  # short: "pass", "fail: mismatch", "fail: crash", "error: harness"...
    problem: str
    candidate: str
    device: str = ""
    cases: list[CaseResult] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    problem_degenerate: bool = False
    seconds: float = 0.0
    log_tail: str = ""  # last lines the candidate printed (untrusted, for debugging only)
