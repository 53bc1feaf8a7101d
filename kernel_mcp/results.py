"""The shared vocabulary: typed results every instrument returns.

Expected failure is data (``CheckResult(passed=False, ...)``); misuse raises ``errors.UsageError``.
"""
from __future__ import annotations

from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from kernel_mcp.counters import CounterReport
from kernel_mcp.hardware.occupancy import Occupancy
from kernel_mcp.reproducibility import Determinism, Provenance


class Verdict(NamedTuple):
    """A result's ``verdict`` text read apart, so no caller parses it: "fail: mismatch while timing" is
    status "fail", reason "mismatch while timing"; "pass (timing not trusted)" is status "pass", no reason."""

    status: str  # pass | fail | error (an evaluation that did not build: "compile failed", read as "compile")
    reason: str

    @classmethod
    def read(cls, verdict: str) -> Verdict:
        head, _, reason = verdict.partition(": ")
        return cls(head.split(" ", 1)[0], reason)


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
    nonfinite: int = 0  # NaN or Inf where the float64 reference (and its task-dtype run) is finite


class CaseResult(BaseModel):
    """One call of the candidate on one input."""

    name: str  # e.g. "test 2" or "test 2 (fresh seed)"
    params: dict[str, Any]  # the task's params; a fresh seed is shown as "secret"
    passed: bool
    failure: str = ""  # "" when passed; else mismatch, exception, crash, timeout, mutation, alias, ...
    message: str = ""
    comparisons: list[Comparison] = Field(default_factory=list)
    cause: str = ""  # a mismatch's likeliest cause where its values tell it (reduced_precision, approximation)
    # per rule of the benchmark's own contract (CheckResult.benchmark): the share of that rule's tolerance the
    # output used, <= 1 passing it (a yes/no rule such as check_implementation: 0), None where it fails with no
    # number (NaN, a refused shape, a call that raised); absent where the benchmark would not serve this case
    benchmark: dict[str, float | None] = Field(default_factory=dict)



class BenchmarkVerdict(BaseModel):
    """What the benchmark a problem comes from would say by its own contract (KernelBench's allclose against
    Model's output, GPU MODE's check_implementation), judged in the same run on the cases it would serve
    itself. Reported beside the verdict, which is the one that counts; where the two differ, ``why`` says why."""

    rule: str  # a key of CaseResult.benchmark, e.g. "KernelBench (atol=rtol=1e-4)"
    description: str  # how the rule decides, and where it comes from
    passed: bool | None  # None: no case reached the comparison
    cases: int = 0  # cases judged by this rule
    failed: int = 0
    worst: float | None = None  # the largest share of the rule's tolerance used (None: a case failed outright)
    why: str = ""  # where this verdict and the check's verdict differ, the reason


class MemoryUse(BaseModel):
    """Device memory of one run (GPU only), bytes: the problem's reference alone on its first test, what a
    check was estimated to need from it, and the judge's own peak (its allocator's high-water mark; the
    candidate's process holds its own memory beside it)."""

    reference_peak_bytes: int | None = None
    check_need_bytes: int | None = None
    judge_peak_bytes: int | None = None
    float64_in_host_memory: bool = False  # the float64 references waited in host memory (a large problem)


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
    cause: str = ""  # a failure's likeliest cause, measured (worker/judge/causes.py), else the failure kind
    benchmark: list[BenchmarkVerdict] = Field(default_factory=list)  # the benchmark's own contract, beside ours
    memory: MemoryUse | None = None
    determinism: Determinism | None = None  # the first test's call repeated: the same bits or not
    provenance: Provenance | None = None  # the device and stack it ran on
    seconds: float = 0.0
    log_tail: str = ""  # last lines the candidate printed (untrusted, for debugging only)


class ProfileSettings(BaseModel):
    """How long and how precisely ``profile`` measures."""

    model_config = ConfigDict(extra="forbid")

    target_ci: float = Field(0.01, gt=0, lt=1, description="stop once each median's 95% CI is within +-this")
    budget_s: float = Field(60.0, gt=0, description="timing budget for all shapes together, seconds")
    min_samples: int = Field(10, ge=6)
    max_samples: int = Field(1000, ge=6)
    warmup: int = Field(3, ge=1, description="calls per contestant and shape before samples count")
    kernel_calls: int = Field(3, ge=0, description="calls under CUPTI for the device busy time")
    shapes: Literal["benchmarks", "tests"] = Field(
        "benchmarks", description="the problem's benchmark shapes, or its small test shapes (quick runs, CPU)")


class Timing(BaseModel):
    """One contestant on one shape: the median of its timed calls with a 95% CI, in milliseconds."""

    clock: str  # "cuda events" (device time around each call) or "cpu wall clock"
    median_ms: float
    ci_low_ms: float
    ci_high_ms: float
    samples: int
    rel_ci_half_width: float | None  # 0.01 = the median is known to +-1%; None: too few samples for a CI
    host_ms: float | None = None  # median host time to issue the call (GPU): above median_ms = CPU-bound
    kernel_ms: float | None = None  # device busy time of its kernels (CUPTI), median of a few calls
    graph_ms: float | None = None  # short kernels: one call captured in a CUDA graph, replayed (warm L2)
    samples_ms: list[float] = Field(default_factory=list)  # every timed call, in order (as torch's Measurement
    # keeps its raw times): a later comparison (an A/A run, a re-measured incumbent) can test against them


class ShapeProfile(BaseModel):
    """Candidate vs reference (and baseline) on one benchmark shape."""

    params: dict[str, Any]
    dtype: str = ""  # of the first floating-point input (picks the roofline's compute ceiling)
    candidate: Timing | None = None
    reference: Timing | None = None
    baseline: Timing | None = None
    speedup: float | None = None  # reference median / candidate median; None when not credited
    speedup_ci: list[float] | None = None  # [low, high], 95%
    speedup_vs_baseline: float | None = None
    flops: float | None = None  # one call; from task.yml, or estimated (see work_estimated)
    bytes: float | None = None
    work_estimated: bool = False  # flops/bytes from torch's flop counter and tensor sizes, not task.yml
    floor_ms: float | None = None  # max(bytes / peak bandwidth, flops / fastest peak): physics' limit
    credited: bool = True  # False: this shape's candidate time cannot be trusted (see findings)
    note: str = ""


class ProfileResult(BaseModel):
    """``profile``: correctness first (a full check), then timing with every timed output validated."""

    passed: bool  # the check passed and every output produced while timing was correct
    trusted: bool  # no integrity finding: the speedup can be believed
    verdict: str
    problem: str
    candidate: str
    baseline: str = ""
    device: str = ""
    device_name: str = ""
    speedup: float | None = None  # geometric mean over credited shapes
    speedup_ci: list[float] | None = None
    speedup_vs_baseline: float | None = None
    shapes: list[ShapeProfile] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    check: CheckResult | None = None
    counters: CounterReport | None = None  # hardware counters on one shape (advice, never the time)
    provenance: Provenance | None = None  # the device and stack it ran on
    settings: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0
    log_tail: str = ""


class RooflinePoint(BaseModel):
    """One contestant on one shape, placed against the device's ceilings."""

    who: str  # "candidate" or "reference"
    time_ms: float
    tflops: float  # achieved, 1e12 FLOP/s
    gbytes_per_s: float  # achieved, 1e9 B/s
    percent_of_bound: float  # achieved / the binding ceiling at this intensity (100 = on the roof)
    bound: str  # "memory", "compute" or "latency/underutilised" (far below both roofs)
    headroom_ms: float  # time above the roof's minimum for this shape's work


class RooflineShape(BaseModel):
    params: dict[str, Any]
    flops: float
    bytes: float
    work_estimated: bool = False
    intensity: float  # FLOP per byte
    points: list[RooflinePoint] = Field(default_factory=list)


class RooflineResult(BaseModel):
    """``roofline``: how far candidate and reference are from the hardware limit on each shape."""

    problem: str
    candidate: str
    device_name: str = ""
    ceilings_source: str = ""  # "measured by kernel-mcp calibrate on ..." or "datasheet: ..."; "" = none
    bandwidth_bytes_per_s: float | None = None
    peak_flops_per_s: float | None = None
    unit: str = ""  # the peak_flops key used (devices.dtype_unit)
    shapes: list[RooflineShape] = Field(default_factory=list)
    png: str = ""
    message: str = ""  # why there is no roofline (no ceilings for this device, profile failed...)
    profile: ProfileResult


class KernelBuild(BaseModel):
    """One kernel compiled for one target: did it build, and what does it use."""

    kernel: str  # the @triton.jit function's qualified name (or the CUDA/HIP kernel's name)
    target: str  # e.g. "sm_90a", "gfx942"
    ok: bool
    error: str = ""
    file: str = ""  # where the error is, in the candidate's own source
    line: int = 0
    num_warps: int | None = None
    num_stages: int | None = None
    threads_per_block: int | None = None
    registers: int | None = None  # per thread (NVIDIA); AMD: see vgprs/agprs/sgprs
    spill_bytes: int | None = None  # NVIDIA spill stores + loads; AMD scratch bytes per lane
    shared_bytes: int | None = None  # shared memory / LDS per block, static + what Triton allocates
    stack_bytes: int | None = None
    vgprs: int | None = None
    agprs: int | None = None
    sgprs: int | None = None
    occupancy: Occupancy | None = None  # static estimate from registers, shared memory and block size
    instructions: dict[str, int] = Field(default_factory=dict)
    asm: str = ""  # with asm=True: an excerpt around the main loop (SASS or AMDGCN)
    signature: dict[str, str] = Field(default_factory=dict)  # Triton's specialization of the arguments
    constants: dict[str, Any] = Field(default_factory=dict)  # constexpr values (an autotune config shows here)


class CompileResult(BaseModel):
    """``compile``: every kernel a candidate launches, for every requested target."""

    ok: bool
    candidate: str
    language: str  # "triton" (CUDA C++ and HIP: later)
    targets: list[str]
    builds: list[KernelBuild] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    toolchain: dict[str, str] = Field(default_factory=dict)
    cached: bool = False
    seconds: float = 0.0
    log_tail: str = ""
