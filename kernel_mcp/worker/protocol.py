"""Typed messages across the door into ``worker/``: what a caller asks of a judge or a compile step, the
device it runs on, and what comes back. Plain data (pydantic), validated where it is received: a
malformed request is a clear error in the judge's own words, never a traceback.

    caller --JudgeBoot (stdin)--> judge --Ready--> caller --JudgeRequest (stdin)--> judge
    judge --Progress*, Final (signed lines on a private pipe)--> caller
    caller --StepRequest (socket)--> step host --StepReply (socket)--> caller   (untrusted, like a candidate)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from kernel_mcp.errors import UsageError, shown
from kernel_mcp.results import ProfileSettings

ProgressFn = Callable[[str, int, int], None]  # (message, done, total): how long work reports on itself

# What a user may ask for: a GPU when there is one (auto), the CPU, the first GPU, or GPU N.
DEVICE_CHOICES = ("auto", "cpu", "cuda")


def parse_device(text: str) -> str:
    """The user's --device, normalised ("auto", "cpu", "cuda", "cuda:N"); anything else is a UsageError."""
    value = (text or "auto").strip().lower()
    if value in DEVICE_CHOICES:
        return value
    kind, _, index = value.partition(":")
    if kind == "cuda" and index.isdigit():
        return f"cuda:{int(index)}"
    raise UsageError(f"unknown device {shown(text)}; use one of {', '.join(DEVICE_CHOICES)} or cuda:N")


class Device(BaseModel):
    """A device resolved once, by a process that can see it (the judge), and passed on as data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["cpu", "cuda"]  # torch's device type: ROCm builds of torch call AMD GPUs "cuda" too
    index: int = Field(0, ge=0)
    vendor: Literal["cpu", "nvidia", "amd"] = "cpu"
    name: str = ""
    uuid: str = ""  # stable across CUDA_VISIBLE_DEVICES orderings; "" when torch does not report one
    total_memory_bytes: int = Field(0, ge=0)

    @property
    def is_gpu(self) -> bool:
        return self.kind == "cuda"

    @property
    def torch(self) -> str:
        """The device string torch takes."""
        return f"cuda:{self.index}" if self.is_gpu else "cpu"

    @property
    def lease_key(self) -> str:
        """The name of this device's lease: one per physical GPU, one for the CPU."""
        if not self.is_gpu:
            return "cpu"
        return "gpu-" + ("".join(c for c in self.uuid if c.isalnum() or c == "-") or str(self.index))


CPU = Device(kind="cpu")


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")


class JudgeBoot(_Message):
    """The first line a judge reads: its key and run token, the device asked for, and what to warm up."""

    key: str = Field(pattern=r"^[0-9a-f]{64}$")  # HMAC-SHA256 key for the result channel, hex
    run_token: str = Field(pattern=r"^[0-9a-f]{32}$")  # in every candidate process's environment
    device: str = "auto"  # as the user asked for it, normalised by parse_device
    hosts: int = Field(1, ge=0, le=2)  # candidate hosts started at boot, before any candidate is known
    warm_profiler: bool = False  # start CUPTI at boot (several seconds on a first use) for timing runs
    trace: str = ""  # a file to append phase timestamps to (worker/trace.py; "" = off)

    @field_validator("device")
    @classmethod
    def _known_device(cls, value: str) -> str:
        try:
            return parse_device(value)
        except UsageError as exc:
            raise ValueError(str(exc)) from None


class SharedReference(_Message):
    """A batch's share of the reference's work (judge/shared_truth.py): the secret its checks derive their
    seeds and store key from, and the store's folder. Never in a result (runners redact it)."""

    secret: str = Field(pattern=r"^[0-9a-f]{64}$")
    store: str = Field(min_length=1)  # an absolute folder


class JudgeRequest(_Message):
    """One check or profile: the second line a judge reads."""

    mode: Literal["check", "profile", "measure"]  # measure: the reference alone, for a batch (batch/survey.py)
    problem: str = Field(min_length=1)  # absolute path of the problem folder or KernelBench file
    candidate: str = Field(min_length=1)  # absolute path of the candidate file
    baseline: str | None = None  # profile only: another candidate timed beside it
    fresh_seeds: int | None = Field(None, ge=1, le=16)  # None: the task's own
    # check only: these shapes in place of the task's tests (the optimize loop's held-out shapes, drawn by the
    # trusted caller: agent/loop/held_out.py); None: the task's own
    tests: list[dict[str, int | float | str | bool]] | None = Field(None, min_length=1, max_length=16)
    call_timeout_s: float | None = Field(None, gt=0, le=86400)  # one call of the candidate; None: the task's own
    settings: ProfileSettings = Field(default_factory=ProfileSettings)
    # a check of a problem never measured, admitted beside others with a first share of the device: the
    # judge may allocate no more than this until it has measured the reference (needs.first_need)
    memory_cap_bytes: int | None = Field(None, gt=0)
    shared: SharedReference | None = None  # check only: a batch's inputs and float64 truths, shared


class Ready(_Message):
    type: Literal["ready"] = "ready"
    device: Device | None = None  # None: the device asked for does not exist here (see error)
    error: str = ""
    loaded: dict[str, str] = Field(default_factory=dict)  # kernel_mcp module file -> sha256 when imported
    free_memory_bytes: int | None = None


class Progress(_Message):
    type: Literal["progress"] = "progress"
    message: str
    done: int = 0
    total: int = 0
    memory_need_bytes: int | None = Field(None, ge=0)  # device memory the run needs, once the judge measured it
    seconds_need: float | None = Field(None, ge=0)  # time the rest of the run may take (large problems), from now


class Final(_Message):
    type: Literal["result"] = "result"
    result: dict[str, Any]  # a CheckResult or ProfileResult, validated by the caller against its model
    peak_memory_bytes: int | None = None  # device memory the run took at its peak (judge and hosts)
    # the same from the judge's own allocator and the reference's measure alone: what a device-wide reading would
    # be without neighbours (those reading it count the others' allocations too)
    own_peak_bytes: int | None = None


JudgeMessage = TypeAdapter(Annotated[Union[Ready, Progress, Final], Field(discriminator="type")])


# --- compile steps: untrusted processes that import (and for recording, run) the candidate -------------

class RecordRequest(_Message):
    """Record the Triton launches of one ``custom_kernel`` call on the problem's smallest typical test."""

    kind: Literal["record"] = "record"
    candidate: str
    problem: str
    device: Literal["cpu", "cuda"]  # cpu: under Triton's interpreter


class BuildRequest(_Message):
    """Compile recorded launches for each target with Triton's own specialization."""

    kind: Literal["build"] = "build"
    candidate: str
    problem_dirs: list[str]
    launches: list[dict[str, Any]]
    targets: list[str]
    out_dir: str


class CaptureRequest(_Message):
    """Capture the C++ sources a candidate gives torch.utils.cpp_extension, without building them."""

    kind: Literal["capture"] = "capture"
    candidate: str
    problem_dirs: list[str]


class PrebuildRequest(_Message):
    """Import a candidate as its check's host will, so the torch extensions it builds on import (load_inline) are
    built now, with no device memory reserved, and kept for its check (worker/steps/prebuild.py)."""

    kind: Literal["prebuild"] = "prebuild"
    candidate: str
    problem_dirs: list[str]
    # a KernelBench problem's file: ModelNew is constructed from its get_init_inputs() where the import built nothing
    kernelbench_problem: str = ""


StepRequest = Annotated[Union[RecordRequest, BuildRequest, CaptureRequest, PrebuildRequest],
                        Field(discriminator="kind")]
STEP_REQUEST = TypeAdapter(StepRequest)


class StepReply(_Message):
    """What a step process sends back. Untrusted (it ran candidate code): ``value`` is parsed by backends/."""

    ok: bool
    value: list[Any] = Field(default_factory=list)
    error: str = ""  # why the step failed, in the step's words (candidate output is in log_tail)
    log_tail: str = ""
    timed_out: bool = False
    tampered: list[str] = Field(default_factory=list)  # set by the runner: what its guard found changed


def field_problems(exc: ValidationError) -> str:
    """Each problem of a validation as 'field: what is wrong', joined: 'mode: Input should be ...; ...'."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors())


def describe_error(exc: ValidationError, what: str) -> str:
    """One readable line for a malformed message: 'malformed request: mode: Input should be ...'."""
    return f"malformed {what}: {field_problems(exc)}"
