"""The judge process: the verdict is made here and nowhere else.

Entered from ``worker.judge_start``, which has imported torch, forked the factory candidate hosts are forked
from (host/factory.py), read the ``JudgeBoot`` line from stdin and already started the candidate hosts. Validates that
line, resolves the device, warms up under the device's shared lease and says ``Ready``. Then it waits: for one
``JudgeRequest`` line (a warm judge may wait a long time), or for end of input, which means it is not needed. Writes
signed JSON lines (ready, progress, then one result) to RESULT_FD.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import traceback

from pydantic import ValidationError

from kernel_mcp.files import cache_root
from kernel_mcp.results import CheckResult, Finding, ProfileResult
from kernel_mcp.worker import lease, needs, trace
from kernel_mcp.worker.digests import loaded_digests
from kernel_mcp.worker.isolation import proctree
from kernel_mcp.worker.judge.check import measure_reference, run_check
from kernel_mcp.worker.judge.context import Judging, Reporter, free_memory
from kernel_mcp.worker.judge.hosts import Hosts
from kernel_mcp.worker.judge.profile import run_profile
from kernel_mcp.worker.judge.warm import warm_judge
from kernel_mcp.worker.judge.provenance import provenance_of
from kernel_mcp.worker.protocol import Device, Final, JudgeBoot, JudgeRequest, Ready, describe_error
from kernel_mcp.worker.resolve import guess_kind, resolve


def boot(boot: JudgeBoot, reporter: Reporter, hosts: Hosts | None) -> tuple[Device | None, Hosts]:
    """Hosts first (they boot while this process validates and warms up; judge_start may have started
    them), then the device and the warm-up."""
    hosts = hosts or Hosts(guess_kind(boot.device), boot.run_token, boot.warm_profiler, boot.hosts)
    device, error = resolve(boot.device)
    trace.mark("judge: torch imported, device resolved")
    if device is None:
        reporter.send(Ready(error=error))
        return None, hosts
    if device.kind != hosts.kind:
        hosts.restart(device.kind)
    # contexts and CUPTI start while nobody is timing here; a wait for that is the caller's to see
    with lease.hold(device, exclusive=False, on_wait=lambda message: reporter.progress(message)):
        trace.mark("judge: shared lease held")
        hosts.warm(device.torch)
        warm_judge(device.torch, boot.warm_profiler)
        trace.mark("judge: warm")
        hosts.wait_booted()
        trace.mark("judge: hosts booted")
    reporter.device = device
    reporter.send(Ready(device=device, loaded=loaded_digests(), free_memory_bytes=free_memory(device)))
    return device, hosts


def run(judging: Judging) -> CheckResult | ProfileResult:
    if judging.request.mode == "profile":
        return run_profile(judging)
    if judging.request.mode == "measure":
        return measure_reference(judging)
    return run_check(judging)


def failed(request: JudgeRequest | None, verdict: str, finding: Finding) -> CheckResult | ProfileResult:
    fields = {"passed": False, "verdict": verdict, "problem": request.problem if request else "",
              "candidate": request.candidate if request else "", "findings": [finding]}
    if request is not None and request.mode == "profile":
        return ProfileResult(trusted=False, **fields)
    return CheckResult(**fields)


def serve(reporter: Reporter, device: Device, hosts: Hosts) -> None:
    line = sys.stdin.readline()
    trace.mark("judge: request read")
    if not line:
        return  # a warm judge nobody needed
    started = time.monotonic()
    reporter.free_at_start = free_memory(device)  # now, not at boot: a warm judge may have waited for hours
    try:
        request = JudgeRequest.model_validate_json(line)
    except ValidationError as exc:
        result = failed(None, "error: bad request", Finding(code="bad_request", message=describe_error(exc, "request")))
    else:
        try:
            result = run(Judging(request, device, hosts, reporter))
        except Exception as exc:  # noqa: BLE001  (a harness failure is reported, never mistaken for a pass)
            result = _harness_failure(request, exc, hosts.served())
    result.seconds = round(time.monotonic() - started, 3)
    result.provenance = provenance_of(device)
    estimate = _note_judge_peak(result, device)
    reporter.note_memory()
    sampled = reporter.peak_bytes()  # device-wide readings between steps: they can miss the peak
    peak = max(sampled or 0, estimate or 0) if sampled is not None or estimate is not None else None
    reporter.send(Final(result=result.model_dump(), peak_memory_bytes=peak, own_peak_bytes=estimate))


def _harness_failure(request: JudgeRequest, exc: Exception, served: bool) -> CheckResult | ProfileResult:
    """A failure of the judge itself. ``served``: had a candidate been sent an input? Out of device memory before
    that (neighbours holding more than they reserved, or an estimate short of the problem's real need), the caller
    may run the check again alone: the candidate saw no input, so fresh ones buy it nothing. After it, the
    candidate may have caused the shortage (filling the device on an input it gets wrong), and the error stands."""
    if type(exc).__name__ == "OutOfMemoryError" and not served:
        return failed(request, "error: out of memory", Finding(code=needs.SHORT, message=(
            f"the judge ran out of device memory before any candidate was sent an input "
            f"({str(exc).splitlines()[0][:400]}): other runs on the device hold more than they reserved, or the "
            "problem needs more than its estimate")))
    if type(exc).__name__ == "OutOfMemoryError":  # torch's, raised in the judge: says nothing of the candidate
        return failed(request, "error: out of memory", Finding(code="out_of_memory", message=(
            f"the judge ran out of device memory ({str(exc).splitlines()[0][:400]}): other processes hold the "
            "device's memory, or the problem needs more than its estimate; the candidate was not judged")))
    message = "".join(traceback.format_exception(exc))[-3000:]
    return failed(request, "error: harness", Finding(code="harness_error", message=message))


def _note_judge_peak(result: CheckResult | ProfileResult, device: Device) -> int | None:
    """Notes the judge's own allocator high-water mark, from the reference's measured first run on (see
    footprint.measure), beside the estimate the check started from. Returns the run's peak on the device
    as it will be reserved next time: the judge's, a candidate run like the reference's own, two contexts.
    The judge's share counts what its allocator held of the device at its peak (reserved: live tensors, and
    the cached blocks a neighbour's run cannot have), not only what its tensors took: blocks of one size freed
    and a larger one asked for leave both held (an 8 GiB input parked, then its 16 GiB float64 copy made)."""
    check = result if isinstance(result, CheckResult) else result.check
    if check is None or check.memory is None or not device.is_gpu:
        return None
    import torch

    memory = check.memory
    memory.judge_peak_bytes = int(torch.cuda.max_memory_allocated(device.index))
    held = max(memory.judge_peak_bytes, int(torch.cuda.max_memory_reserved(device.index)))
    return held + (memory.reference_peak_bytes or 0) + needs.CONTEXTS_BYTES


def private_caches() -> str:
    """Build caches only this judge writes or reads (a Triton reference's kernels, torch.compile, torch
    extensions) in a new folder inside kernel_mcp's cache, which candidate processes see read-only (a file
    a process has loaded, rewritten in place, changes the code it runs). (No torch device plugins from
    entry points: start.main, before torch is imported.) Returns the folder (removed when the judge
    ends)."""
    parent = cache_root() / "judges"
    parent.mkdir(parents=True, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="kmcp-judge-", dir=parent)
    os.environ.update(TRITON_CACHE_DIR=os.path.join(folder, "triton"),
                      TORCH_EXTENSIONS_DIR=os.path.join(folder, "torch_extensions"),
                      TORCHINDUCTOR_CACHE_DIR=os.path.join(folder, "inductor"))
    return folder


def main(fd: int, line: str, hosts: Hosts | None) -> None:
    """``line``: the boot line judge_start read; ``hosts``: those it started from it (or None)."""
    caches = private_caches()
    try:
        boot_message = JudgeBoot.model_validate_json(line)
    except ValidationError as exc:
        sys.stderr.write(describe_error(exc, "judge boot message") + "\n")
        if hosts is not None:
            hosts.close_waiting()
        os._exit(2)
    trace.enable(boot_message.trace)
    trace.mark("judge: boot message validated")
    reporter = Reporter(fd, bytes.fromhex(boot_message.key))
    try:
        device, hosts = boot(boot_message, reporter, hosts)
        if device is not None:
            serve(reporter, device, hosts)
    except BaseException:  # noqa: BLE001  (the caller sees no result and says so; the log says why)
        traceback.print_exc()
    finally:
        if hosts is not None:
            hosts.close_waiting()
        proctree.kill_tree(os.getpid(), include_self=False)  # daemons the candidate left behind
        shutil.rmtree(caches, ignore_errors=True)
        trace.mark("judge: cleaned up")
        reporter.stream.close()
        os._exit(0)
