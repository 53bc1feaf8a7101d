"""The schema of task.yml: GPU MODE's keys plus kernel_mcp's own optional ``kernel_mcp:`` section.

GPU MODE keys (``files``, ``lang``, ``description``, ``config``, ``templates``, ``tests``, ``benchmarks``,
``test_timeout``, ``benchmark_timeout``, ``ranked_timeout``, ``ranking_by``...) are accepted as they are.
Everything kernel_mcp adds lives under ``kernel_mcp:`` and is validated strictly (unknown keys are errors),
so a typo never silently changes a tolerance. README.md ("task.yml reference") documents each key.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kernel_mcp import expr

Scalar = int | float | str | bool

# Keys GPU MODE's task files use; anything else at top level is reported as a warning, not an error,
# because real GPU MODE problems must load unchanged even when that project adds keys.
GPU_MODE_KEYS = {
    "files", "lang", "description", "config", "templates", "tests", "benchmarks", "test_timeout",
    "benchmark_timeout", "ranked_timeout", "ranking_by", "seed", "multiplier", "name", "gpus",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ToleranceSpec(_Strict):
    """How an output is compared with the float64 reference (README: "Tolerances")."""

    mode: Literal["derived", "exact", "explicit"] = "derived"
    K: int | str = Field(1, description="reduction length: a number or an expression over the test params")
    magnitude: Literal["output", "abs_inputs"] = Field(
        "output", description="scale of the accumulation term: |ref| or ref_kernel(|inputs|) (e.g. |A|@|B|)")
    accumulate: str | None = Field(None, description="accumulation dtype; default float32 for 16/8-bit outputs")
    exp_argument: Literal["inputs"] | None = Field(None, description=(
        "outputs are exp() of arguments as large as the inputs (softmax, logsumexp): rounding an argument of "
        "size |x| moves the output by |x|*u_acc relative, so the bound adds max|input|*u_acc relative"))
    a: float = 8.0  # per-element coefficient of sqrt(K)*u_acc (Higham & Mary 2019 start at ~8-10)
    b: float = 2.0  # per-element coefficient of u_out*|ref| (output rounding)
    c: float = 2.0  # norm-wise coefficient of sqrt(K)*u_acc
    atol: float | None = None  # mode "explicit" only: |out-ref| <= atol + rtol*|ref|
    rtol: float | None = None
    max_mismatch_fraction: float = Field(0.0, ge=0.0, le=1.0)

    @field_validator("K")
    @classmethod
    def _k_is_expression(cls, value: int | str) -> int | str:
        if isinstance(value, str):
            expr.check_syntax(value)
        return value


class TimeoutSpec(_Strict):
    """Seconds. ``import`` covers importing the candidate (load_inline builds can take minutes)."""

    import_: float = Field(600.0, alias="import", gt=0)
    call: float = Field(180.0, gt=0)
    total: float = Field(1800.0, gt=0)


PROPERTY_NAMES = ("finite", "nonnegative", "rows_sum_to_one", "freivalds")


class PropertySpec(_Strict):
    """A mathematical property the output must have, checked in addition to the comparison."""

    name: Literal["finite", "nonnegative", "rows_sum_to_one", "freivalds"]
    a: int = 0  # freivalds: index of A in the input tuple
    b: int = 1  # freivalds: index of B in the input tuple


class RandomShapes(_Strict):
    """Shapes drawn afresh in every check beside the listed tests (issue 39): each named size parameter
    drawn in its inclusive range, log-uniformly, ragged (not a multiple of 16 where the range allows), its
    bounds and a one-element size among the draws; the other parameters as the first test has them."""

    ranges: dict[str, tuple[int, int]] = Field(..., min_length=1, description="size parameter -> [lowest, "
                                               "highest], inclusive")
    count: int = Field(2, ge=1, le=16, description="shapes drawn per check")

    @field_validator("ranges")
    @classmethod
    def _ordered(cls, value: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
        for name, (low, high) in value.items():
            if not 1 <= low <= high:
                raise ValueError(f"{name}: a range is [lowest, highest] with 1 <= lowest <= highest, not "
                                 f"[{low}, {high}]")
        return value


class BatchInvariance(_Strict):
    """Each row's result must not depend on the rest of the batch (issue 39; worker/judge/batch_invariance.py)."""

    dim: int = Field(0, ge=0, description="the batch dimension, in the named inputs and in every output")
    inputs: list[int] = Field(default_factory=lambda: [0], min_length=1, description="indices of the inputs "
                              "(in the flattened input) that carry the batch dimension")
    atol: float = Field(0.0, ge=0, description="0: bit for bit; else the largest difference allowed")


class KernelMcpSpec(_Strict):
    tolerance: ToleranceSpec = ToleranceSpec()
    flops: float | str | None = Field(None, description="flops of one call, expression over params")
    bytes: float | str | None = Field(None, description="minimum bytes moved by one call, expression")
    timeouts: TimeoutSpec = TimeoutSpec()
    properties: list[PropertySpec] = Field(default_factory=list)
    unit: Literal["vector", "tensor"] = Field(
        "vector", description="the compute unit whose peak binds the roofline: tensor cores/matrix cores for "
        "matmul-like work, the vector unit otherwise")
    fresh_seeds: int = Field(1, ge=1, le=16, description="secret-seeded copies of each test per check")
    random_shapes: RandomShapes | None = Field(None, description="size ranges to draw fresh shapes from in "
                                               "every check, beside the listed tests")
    batch_invariant: BatchInvariance | None = Field(None, description="each row's result must be the same "
                                                    "whatever else is in the batch")
    deterministic: bool = Field(False, description="the kernel must give the same bits on the same input in every "
                                "run and process: checked by a repeated call and a call in a fresh process")
    output_args: list[int] | None = Field(
        None, description="indices of inputs that are output buffers (auto-detected when absent)")
    precision: Literal["strict", "torch_defaults", "problem_check"] | None = Field(
        None, description="the numeric settings the reference runs under: 'strict' (no TF32 anywhere), "
        "'torch_defaults' (what PyTorch does by default, e.g. TF32 cuDNN convolutions on NVIDIA GPUs), or "
        "'problem_check' (PyTorch's defaults, and the problem's own check_implementation decides the values; "
        "the derived comparison is reported, not binding). Default: torch_defaults for KernelBench files, whose "
        "references are written for PyTorch's defaults; problem_check for a GPU MODE problem loaded unchanged "
        "(no kernel_mcp section, a check_implementation in reference.py); strict otherwise")

    @field_validator("flops", "bytes")
    @classmethod
    def _expression(cls, value: Any) -> Any:
        if isinstance(value, str):
            expr.check_syntax(value)
        return value


class TaskFile(BaseModel):
    """task.yml as a whole. Extra top-level keys are kept (and reported if GPU MODE does not know them)."""

    model_config = ConfigDict(extra="allow")

    description: str = ""
    tests: list[dict[str, Scalar]]
    benchmarks: list[dict[str, Scalar]] = Field(default_factory=list)
    test_timeout: float | None = None
    benchmark_timeout: float | None = None
    kernel_mcp: KernelMcpSpec = KernelMcpSpec()

    @field_validator("tests")
    @classmethod
    def _some_tests(cls, value: list) -> list:
        if not value:
            raise ValueError("needs at least one test case")
        return value
