"""NVIDIA Compute Sanitizer, pure: the command line for one tool and its text output read into findings
(issue 39). Which tools: memcheck (out-of-bounds and misaligned accesses, hardware exceptions), racecheck
(shared-memory hazards), initcheck (reads of uninitialised global memory), synccheck (invalid use of
barriers). Compute Sanitizer's user manual, "Understanding Memcheck Errors" and the tool chapters, gives the
format read here: every line of its own starts with ``=========``, an error opens with an unindented line
naming it, indented lines after it say where (``at KERNEL+0xOFF in FILE:LINE``, or ``at 0xOFF in
FILE:LINE:KERNEL`` in older releases), and a summary line closes the run (``ERROR SUMMARY: N errors``;
racecheck: ``RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)``).
The first H100 run (2026-12-05) printed racecheck's warnings only in that summary line.

Written from that documentation, then corrected by the first run on a GPU (an H100, 2026-12-05).
"""
from __future__ import annotations

import re
from collections import Counter

from pydantic import BaseModel, Field

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
PREFIX = "========="
PRINT_LIMIT = 200  # errors each tool prints: enough to count kinds, bounded for a model's context
_SUMMARY = re.compile(r"(?:ERROR SUMMARY: (\d+) errors?|RACECHECK SUMMARY: \d+ hazards? displayed "
                      r"\((\d+) errors?, (\d+) warnings?\))")
_AT = re.compile(r"^at (?P<where>.+?)(?: in (?P<loc>.+))?$")
_INLINE = re.compile(r" at (?P<where>.+?) in (?P<loc>\S+)")  # racecheck names the place in its headline
_NOT_ERRORS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application",
               "Program hit", "Saved host backtrace")


class SanitizerFinding(BaseModel):
    tool: str
    kind: str  # the error's headline, sizes and addresses left out ("Invalid __global__ write of size N bytes")
    kernel: str = ""
    location: str = ""  # FILE:LINE where debug information gives one
    count: int = 1  # errors of this kind at this place


class ToolReport(BaseModel):
    tool: str
    ran: bool = False
    errors: int | None = None  # from the tool's summary line
    # racecheck's hazards it cannot prove are races: both threads in one warp, which since Volta need not run
    # in lockstep, so still a bug without __syncwarp(); its summary counts them apart (H100, 2026-12-05)
    warnings: int = 0
    findings: list[SanitizerFinding] = Field(default_factory=list)
    message: str = ""  # why it did not run, or what else to know
    raw_tail: str = ""

    @property
    def found_nothing(self) -> bool:
        """No finding, no error and no warning (whether it ran is ``ran``)."""
        return not (self.findings or self.errors or self.warnings)


class SanitizeResult(BaseModel):
    """``sanitize``: the candidate's kernels on one small shape under each Compute Sanitizer tool."""

    problem: str
    candidate: str
    device: str = ""
    params: dict = Field(default_factory=dict)  # the shape it ran on (the seed shown as "secret")
    clean: bool | None = None  # every tool ran and found nothing; None when a tool could not run
    tools: list[ToolReport] = Field(default_factory=list)
    summary: str = ""  # one line per tool, for a model
    message: str = ""  # why nothing ran (no GPU, an AMD GPU, the tool missing)
    findings: list[str] = Field(default_factory=list)  # the file guard's: files the candidate changed


def command(executable: str, tool: str, target_argv: list[str]) -> list[str]:
    """``executable`` (compute-sanitizer) running ``target_argv`` under ``tool``."""
    if tool not in TOOLS:
        raise ValueError(f"unknown sanitizer tool {tool!r}: one of {', '.join(TOOLS)}")
    return [executable, "--tool", tool, "--print-limit", str(PRINT_LIMIT), "--show-backtrace", "no",
            "--error-exitcode", "0", *target_argv]


def parse(tool: str, output: str) -> ToolReport:
    """One tool's output read into findings, grouped by kind, kernel and place."""
    report = ToolReport(tool=tool, ran=PREFIX in output)
    seen: Counter[tuple[str, str, str]] = Counter()
    current: list[str] | None = None
    for line in output.splitlines():
        if not line.startswith(PREFIX):
            continue
        body = line[len(PREFIX):]
        summary = _SUMMARY.search(body)
        if summary:
            report.errors = int(summary.group(1) or summary.group(2))
            report.warnings = int(summary.group(3) or 0)
            continue
        text = body.strip()
        if body.startswith("     ") and current is not None:  # an indented detail of the open error
            where = _AT.match(text)
            if where and not current[1]:
                current[1], current[2] = _kernel_and_place(where["where"], where["loc"] or "")
            continue
        if text and not text.startswith(_NOT_ERRORS):
            if current is not None:
                seen[tuple(current)] += 1
            current = _opened(text)
    if current is not None:
        seen[tuple(current)] += 1
    report.findings = [SanitizerFinding(tool=tool, kind=kind, kernel=kernel, location=place, count=n)
                       for (kind, kernel, place), n in seen.most_common()]
    return report


def _opened(headline: str) -> list[str]:
    """[kind, kernel, place] of an error's first line; racecheck's says where in the line itself."""
    inline = _INLINE.search(headline)
    if inline is None:
        return [_kind(headline), "", ""]
    return [_kind(headline[:inline.start()]), *_kernel_and_place(inline["where"], inline["loc"])]


def _kind(headline: str) -> str:
    """The headline without what changes between two errors of one kind (sizes, addresses, thread ids)."""
    text = re.sub(r"0x[0-9a-fA-F]+", "ADDR", headline)
    text = re.sub(r"\(\d+,\d+,\d+\)", "(x,y,z)", text)
    return re.sub(r"\b\d+\b", "N", text).strip().rstrip(".")


def _kernel_and_place(where: str, loc: str) -> tuple[str, str]:
    """``KERNEL+0xOFF`` and ``FILE:LINE`` (current releases) or ``0xOFF`` and ``FILE:LINE:KERNEL`` (older)."""
    if where.startswith("0x"):
        file, _, kernel = loc.rpartition(":") if loc.count(":") >= 2 else (loc, "", "")
        return kernel, file
    return where.split("+0x")[0], loc


def summary(reports: list[ToolReport]) -> str:
    """One line per tool for a model: clean, or its kinds of error with counts, kernels and places."""
    lines = []
    for r in reports:
        if not r.ran:
            lines.append(f"{r.tool}: not run: {r.message}")
        elif r.found_nothing:
            lines.append(f"{r.tool}: clean")
        elif not r.findings:
            lines.append(f"{r.tool}: {r.errors or 0} errors, {r.warnings} warnings (possible races between threads "
                         "of one warp, which need __syncwarp() or __syncthreads()); the tool printed no detail")
        else:
            found = "; ".join(f"{f.count}x {f.kind}" + (f" in {f.kernel}" if f.kernel else "")
                              + (f" at {f.location}" if f.location else "") for f in r.findings[:8])
            warned = f", {r.warnings} warnings" if r.warnings else ""
            lines.append(f"{r.tool}: {r.errors if r.errors is not None else 'some'} errors{warned}: {found}")
    return "\n".join(lines)
