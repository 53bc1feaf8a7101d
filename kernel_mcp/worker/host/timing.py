"""Timing one call: used by the judge (for the reference) and by the candidate host (for the candidate).

The functions that read a clock (perf_counter, CUDA event record/elapsed/synchronize) are bound when this
module is imported, which the candidate host does *before* it imports the candidate: a candidate that
later patches ``time.perf_counter`` or ``torch.cuda.Event.elapsed_time`` changes nothing reported here
(``patched_timers`` names what it patched). Protocol (docs/verdict.md, "Timing protocol"):

  [judge] flush L2 (and the LLC), device-wide sync -> [the timing process] device-wide sync -> a sleep
  kernel while the host issues the call -> start event -> fn(data) -> what fn left running (host/aftercall.py)
  -> end event -> wait for the end event -> device-wide sync, timed: a long wait there means work escaped
  the events.

The flush is the judge's own (judge/flush.py, never in the candidate's process: a candidate that could reach it
could switch it off and be timed on hot caches against a cold reference).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from kernel_mcp.worker import tensors
from kernel_mcp.worker.host import aftercall
from kernel_mcp.worker.tensors import digest as _digest

_perf_counter = time.perf_counter
_clone = torch.Tensor.clone
_EventBase = torch._C._CudaEventBase  # the C type: its methods cannot be replaced from Python
# (a CPU-only torch build has the type but none of its methods, nor the device sync)
_record, _elapsed, _event_sync = (getattr(_EventBase, name, None) for name in ("record", "elapsed_time", "synchronize"))
_device_sync = getattr(torch._C, "_cuda_synchronize", None)
_current_stream = torch.cuda.current_stream
_sleep = torch.cuda._sleep

# what a candidate might patch, and the original it must still be when a call ends
_WATCHED = {"time.perf_counter": (time, "perf_counter", time.perf_counter),
            "torch.cuda.Event.elapsed_time": (torch.cuda.Event, "elapsed_time", torch.cuda.Event.elapsed_time),
            "torch.cuda.Event.record": (torch.cuda.Event, "record", torch.cuda.Event.record),
            "torch.cuda.synchronize": (torch.cuda, "synchronize", torch.cuda.synchronize)}

# this module's own bindings: a candidate that rewrites them is named too (it can still defeat any check
# made inside its own process; the judge's wall clock, the physical floor and ncu are outside it)
_BOUND = {"_perf_counter": _perf_counter, "_clone": _clone, "_record": _record,
          "_elapsed": _elapsed, "_event_sync": _event_sync, "_device_sync": _device_sync,
          "_current_stream": _current_stream, "_sleep": _sleep, "_EventBase": _EventBase, "_digest": _digest}

# The GPU is held busy (a sleep kernel) while the host issues the call, so the events measure the device
# work, not the host's launch latency (which, between the harness's other work, is cold-cache latency a
# model running ops back to back would not see; measured on an H200 it inflated a 1 us add to 160 us).
# Host work hidden under the sleep cannot compute the answer: the inputs are in device memory, and any
# copy of them to the host is GPU work after the start event. The issue time is reported beside it.
SLEEP_CYCLES_PER_MS = 2.0e6  # ~2 GHz SM clock (H100/H200 boost ~1.98 GHz); a slower clock sleeps longer
COVER_MS = (0.2, 2.0)  # bounds of the sleep: three times the last issue time, within these
ESCAPE_TAIL_MS = 0.05  # a device-wide sync after the end event normally returns in a few microseconds
ESCAPE_TAIL_FRACTION = 0.10


@dataclass
class CallTiming:
    op_ms: float  # CUDA/HIP events around the call on its stream (device time); wall clock on the CPU
    tail_ms: float  # how long a device-wide sync waited once the end event had completed
    wall_ms: float  # host wall clock from before the start event to the end of that sync
    issue_ms: float = 0.0  # host time to issue the call (start event to end event enqueued)
    # aftercall.state() right after the call, and aftercall.baseline() before it: what the call left running
    # (aftercall.left) is worked out once the output's snapshot is taken, not before (it takes a while)
    state: tuple = ()
    baseline: tuple = ()

    def left(self) -> list[str]:
        return aftercall.left(self.state, self.baseline) if self.state else []

    @property
    def escaped(self) -> bool:
        """Work outside the events (another stream, a thread, a lazy output) kept the device busy."""
        return self.tail_ms > max(ESCAPE_TAIL_MS, ESCAPE_TAIL_FRACTION * self.op_ms)


def patched_timers() -> list[str]:
    found = [name for name, (owner, attr, original) in _WATCHED.items() if getattr(owner, attr, None) is not original]
    here = globals()
    found += [f"{__name__}.{name}" for name, original in _BOUND.items() if here.get(name) is not original]
    return found + [name for name, (owner, attr, fn, code) in _PATH.items()
                    if getattr(owner, attr, None) is not fn or fn.__code__ is not code]


def _timing_path() -> dict[str, tuple]:
    """The harness's own functions a timed call and its snapshot run through (this module's, aftercall's,
    the digest's), with their code objects: replacing one, or its ``__code__``, is named as patched."""
    import sys

    modules = (sys.modules[__name__], aftercall, tensors)
    return {f"{m.__name__}.{name}": (m, name, fn, fn.__code__) for m in modules for name, fn in vars(m).items()
            if callable(fn) and hasattr(fn, "__code__") and getattr(fn, "__module__", None) == m.__name__}


class Clock:
    """What timing a call needs in the process that runs it: the device, and how long to hold the GPU
    with a sleep kernel while the host issues the call (adapted to the last issue time)."""

    def __init__(self, device: str, cover: bool = True):
        self.device = device
        self.cover_ms = COVER_MS[1] if cover else 0.0  # until the first call has shown its issue time


def synchronize(device: str) -> None:
    if device.startswith("cuda") and _device_sync is not None:
        _device_sync()


def timed_call(fn: Callable[[Any], Any], data: Any, clock: Clock) -> tuple[Any, CallTiming]:
    """One call of fn(data), the caches already flushed, until the end of all device work; returns its
    output. What the call left running is read before the clock stops (aftercall.state)."""
    before = aftercall.baseline()
    if not clock.device.startswith("cuda"):
        start = _perf_counter()
        output = fn(data)
        state = aftercall.state()
        wall = (_perf_counter() - start) * 1e3
        return output, CallTiming(op_ms=wall, tail_ms=0.0, wall_ms=wall, state=state, baseline=before)
    _device_sync()
    stream = _current_stream()
    begin, end = _EventBase(enable_timing=True), _EventBase(enable_timing=True)
    if clock.cover_ms > 0:
        _sleep(int(clock.cover_ms * SLEEP_CYCLES_PER_MS))
    host_start = _perf_counter()
    _record(begin, stream)
    output = fn(data)
    state = aftercall.state()
    _record(end, stream)
    issue_ms = (_perf_counter() - host_start) * 1e3
    _event_sync(end)
    tail_start = _perf_counter()
    _device_sync()
    host_end = _perf_counter()
    if clock.cover_ms > 0:
        clock.cover_ms = min(COVER_MS[1], max(COVER_MS[0], 3 * issue_ms))
    return output, CallTiming(op_ms=_elapsed(begin, end), tail_ms=(host_end - tail_start) * 1e3,
                              wall_ms=(host_end - host_start) * 1e3, issue_ms=issue_ms, state=state,
                              baseline=before)


class NotPlain(TypeError):
    """The output holds something other than plain tensors in plain containers."""


def plain_output(node: Any) -> None:
    """Refuse anything but exact torch.Tensor, tuple, list, dict and scalars, checked with type() only:
    a tensor subclass or container could run candidate code during the snapshot, after the clock stopped
    (a lazy computation, or an edit of the figures through the stack)."""
    kind = type(node)
    if kind is torch.Tensor or kind in (int, float, bool, str) or node is None:
        return
    if kind in (tuple, list):
        for item in node:
            plain_output(item)
        return
    if kind is dict:
        for key, value in dict.items(node):
            if type(key) not in (str, int):
                raise NotPlain(f"output dict key of type {type(key).__name__}")
            plain_output(value)
        return
    raise NotPlain(f"the output contains a {kind.__module__}.{kind.__qualname__}; return plain torch.Tensor "
                   "objects in tuples, lists or dicts")


def _copy_tree(node: Any) -> Any:
    if type(node) is torch.Tensor:
        return _clone(node.detach())
    if type(node) in (tuple, list):
        return type(node)(_copy_tree(item) for item in node)
    if type(node) is dict:
        return {key: _copy_tree(value) for key, value in dict.items(node)}
    return node


def snapshot(output: Any) -> tuple[Any, list[int]]:
    """(a copy of every tensor in the output, the output's digest), both taken right after the device-wide
    sync, the digest first: values written later (by a thread or stream still running) are not in the copy,
    so a lazy output fails validation, and a write into the copy (the memory sent to the judge) makes the
    judge's digest of it differ. The output must be plain (plain_output), and both run with
    __torch_function__ overrides disabled."""
    plain_output(output)
    with torch._C.DisableTorchFunction():
        digest = _digest(output)
        return _copy_tree(output), digest


def kernel_busy_us(fn: Callable[[Any], Any], data: Any, device: str) -> tuple[Any, CallTiming, float, int]:
    """One call under CUPTI (torch.profiler), the caches already flushed: (output, its timing, device busy
    time in us = the union of the intervals of every kernel, copy and memset it ran, on any stream, number
    of device activities). The busy time is the *kernel time* a hardware profiler would report; it
    excludes launch gaps."""
    from torch.profiler import ProfilerActivity, profile
    _device_sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        output, timing = timed_call(fn, data, Clock(device, cover=False))  # no sleep kernel in a CUPTI trace
    intervals = _device_intervals(prof)
    return output, timing, union_length(intervals) / 1e3, len(intervals)


def _device_intervals(prof: Any) -> list[tuple[int, int]]:
    out = []
    for event in prof.profiler.kineto_results.events():
        if event.device_type() != torch.autograd.DeviceType.CUDA:
            continue
        start = event.start_ns() if hasattr(event, "start_ns") else event.start_us() * 1000
        length = event.duration_ns() if hasattr(event, "duration_ns") else event.duration_us() * 1000
        out.append((start, start + length))
    return out


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by possibly overlapping intervals (concurrent kernels count once)."""
    total, reach = 0.0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def graph_replay_ms(fn: Callable[[Any], Any], data: Any, replays: int = 20) -> float:
    """Per-call time of a CUDA/HIP graph holding one call, replayed back to back on the same inputs: no
    launch overhead and a warm L2. A figure for short kernels only, never the reported time."""
    side = torch.cuda.Stream()
    side.wait_stream(_current_stream())
    with torch.cuda.stream(side):
        fn(data)  # graph capture needs the kernels compiled and memory pools warm
    _current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(data)
    graph.replay()
    _device_sync()
    stream = _current_stream()
    begin, end = _EventBase(enable_timing=True), _EventBase(enable_timing=True)
    _record(begin, stream)
    for _ in range(replays):
        graph.replay()
    _record(end, stream)
    _device_sync()
    return _elapsed(begin, end) / replays


_PATH = _timing_path()  # bound now, before any candidate is imported
