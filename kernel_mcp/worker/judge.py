"""The judge process: the verdict is made here and nowhere else.

Entered from ``worker.judge_start``, which has imported torch, forked the factory candidate hosts are forked
from (host_factory.py), read the ``JudgeBoot`` line from stdin and already started the candidate hosts. Validates that line, resolves the device,
warms up under the device's shared lease and says ``Ready``. Then it waits: for one
``JudgeRequest`` line (a warm judge may wait a long time), or for end of input, which means it is not
needed. Writes signed JSON lines (ready, progress, then one result) to RESULT_FD.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass

from pydantic import ValidationError

from kernel_mcp.results import CheckResult, Finding, ProfileResult
from kernel_mcp.worker import channel, proctree, trace
from kernel_mcp.worker.protocol import Device, Final, JudgeBoot, JudgeRequest, Progress, Ready, describe_error
from kernel_mcp.worker.hosts import Hosts

TICK_S = 2.0  # the least time between two progress messages of a sampling loop (a human rate)


class Reporter:
    """Signed messages to the caller; also notes the device's free memory at each report, so the run's
    peak use can be reported (it sizes the memory the next run of this problem reserves)."""

    def __init__(self, fd: int, key: bytes):
        self.stream, self.key = os.fdopen(fd, "w"), key
        self.device: Device | None = None
        self.free_at_start: int | None = None
        self.least_free: int | None = None
        self.last_tick = 0.0

    def send(self, message: Ready | Progress | Final) -> None:
        trace.mark(f"judge sends {type(message).__name__} {getattr(message, 'message', '')[:60]}")
        self.stream.write(channel.sign(self.key, message.model_dump()) + "\n")
        self.stream.flush()

    def progress(self, message: str, done: int = 0, total: int = 0) -> None:
        """A step worth telling (a case, a shape): always sent."""
        self.last_tick = time.monotonic()  # a loop's first tick waits TICK_S after its step: not "1 sample"
        self.note_memory()
        self.send(Progress(message=message, done=done, total=total))

    def needs(self, message: str, memory_bytes: int | None, seconds: float | None) -> None:
        """What the run needs, measured on the reference: the caller resizes its lease reservation to the
        device memory, and gives the run at least ``seconds`` more before calling the judge stuck."""
        self.send(Progress(message=message, memory_need_bytes=memory_bytes, seconds_need=seconds))

    def tick(self, message: str, done: int = 0, total: int = 0) -> None:
        """Inside a loop (samples): sent at most once every TICK_S, and TICK_S after any other message."""
        if time.monotonic() - self.last_tick >= TICK_S:
            self.progress(message, done, total)

    def note_memory(self) -> None:
        free = _free_memory(self.device)
        if free is not None:
            self.least_free = free if self.least_free is None else min(self.least_free, free)

    def peak_bytes(self) -> int | None:
        if self.free_at_start is None or self.least_free is None:
            return None
        return max(0, self.free_at_start - self.least_free)


def _free_memory(device: Device | None) -> int | None:
    if device is None or not device.is_gpu:
        return None
    import torch
    return int(torch.cuda.mem_get_info(device.index)[0])


@dataclass
class Judging:
    """Everything one run needs: the request, the resolved device, the hosts, the way to report."""

    request: JudgeRequest
    device: Device
    hosts: Hosts
    reporter: Reporter


def loaded_digests() -> dict[str, str]:
    """sha256 of each kernel_mcp module file this process imported: the caller compares them with the files
    now on disk before using a judge that was started earlier (a file changed in between, say by a
    candidate before the guard restored it, means this judge may run code that is no longer there). Files
    its fork server imported count as they were then (fork_server.AT_IMPORT)."""
    from kernel_mcp.worker.fork_server import AT_IMPORT
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if path in AT_IMPORT:
            found[path] = AT_IMPORT[path]
        elif path.startswith(root) and path.endswith(".py"):
            try:
                with open(path, "rb") as handle:
                    found[path] = hashlib.sha256(handle.read()).hexdigest()
            except OSError:
                continue
    return found


def boot(boot: JudgeBoot, reporter: Reporter, hosts: Hosts | None) -> tuple[Device | None, Hosts]:
    """Hosts first (they boot while this process validates and warms up; judge_start may have started
    them), then the device and the warm-up."""
    from kernel_mcp.worker.resolve import guess_kind, resolve
    hosts = hosts or Hosts(guess_kind(boot.device), boot.run_token, boot.warm_profiler, boot.hosts)
    device, error = resolve(boot.device)
    trace.mark("judge: torch imported, device resolved")
    if device is None:
        reporter.send(Ready(error=error))
        return None, hosts
    if device.kind != hosts.kind:
        hosts.restart(device.kind)
    from kernel_mcp.worker import lease, warm
    # contexts and CUPTI start while nobody is timing here; a wait for that is the caller's to see
    with lease.hold(device, exclusive=False, on_wait=lambda message: reporter.progress(message)):
        trace.mark("judge: shared lease held")
        hosts.warm(device.torch)
        warm.judge(device.torch, boot.warm_profiler)
        trace.mark("judge: warm")
        hosts.wait_booted()
        trace.mark("judge: hosts booted")
    reporter.device = device
    reporter.send(Ready(device=device, loaded=loaded_digests(), free_memory_bytes=_free_memory(device)))
    return device, hosts


def run(judging: Judging) -> CheckResult | ProfileResult:
    if judging.request.mode == "profile":
        from kernel_mcp.worker.profile_run import run_profile
        return run_profile(judging)
    from kernel_mcp.worker.check_run import run_check
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
    reporter.free_at_start = _free_memory(device)  # now, not at boot: a warm judge may have waited for hours
    try:
        request = JudgeRequest.model_validate_json(line)
    except ValidationError as exc:
        result = failed(None, "error: bad request", Finding(code="bad_request", message=describe_error(exc, "request")))
    else:
        try:
            result = run(Judging(request, device, hosts, reporter))
        except Exception as exc:  # noqa: BLE001  (a harness failure is reported, never mistaken for a pass)
            result = _harness_failure(request, exc)
    result.seconds = round(time.monotonic() - started, 3)
    estimate = _note_judge_peak(result, device)
    reporter.note_memory()
    sampled = reporter.peak_bytes()  # device-wide readings between steps: they can miss the peak
    peak = max(sampled or 0, estimate or 0) if sampled is not None or estimate is not None else None
    reporter.send(Final(result=result.model_dump(), peak_memory_bytes=peak))


def _harness_failure(request: JudgeRequest, exc: Exception) -> CheckResult | ProfileResult:
    if type(exc).__name__ == "OutOfMemoryError":  # torch's, raised in the judge: says nothing of the candidate
        return failed(request, "error: out of memory", Finding(code="out_of_memory", message=(
            f"the judge ran out of device memory ({str(exc).splitlines()[0][:400]}): other processes hold the "
            "device's memory, or the problem needs more than its estimate; the candidate was not judged")))
    message = "".join(traceback.format_exception(exc))[-3000:]
    return failed(request, "error: harness", Finding(code="harness_error", message=message))


def _note_judge_peak(result: CheckResult | ProfileResult, device: Device) -> int | None:
    """Notes the judge's own allocator high-water mark, from the reference's measured first run on (see
    footprint.measure), beside the estimate the check started from. Returns the run's peak on the device
    as it will be reserved next time: the judge's, a candidate run like the reference's own, two contexts."""
    check = result if isinstance(result, CheckResult) else result.check
    if check is None or check.memory is None or not device.is_gpu:
        return None
    import torch

    from kernel_mcp.worker import lease
    memory = check.memory
    memory.judge_peak_bytes = int(torch.cuda.max_memory_allocated(device.index))
    return memory.judge_peak_bytes + (memory.reference_peak_bytes or 0) + lease.CONTEXTS_BYTES


def private_caches() -> str:
    """Build caches only this judge writes or reads (a Triton reference's kernels, torch.compile, torch
    extensions) in a new folder inside kernel_mcp's cache, which candidate processes see read-only (a file
    a process has loaded, rewritten in place, changes the code it runs). (No torch device plugins from
    entry points: judge_start.main, before torch is imported.) Returns the folder (removed when the judge
    ends)."""
    from kernel_mcp.cache import cache_root
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
