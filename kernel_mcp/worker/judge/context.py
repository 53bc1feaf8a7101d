"""What one judge run carries through check and profile: the request, the resolved device, its candidate
hosts, and the signed channel back to the caller (``Reporter``), which also notes the device's free memory
at each report so the run's peak use can be reported."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_mcp.worker import channel, trace
from kernel_mcp.worker.judge.hosts import Hosts
from kernel_mcp.worker.judge.session import CandidateSession
from kernel_mcp.worker.protocol import Device, Final, JudgeRequest, Progress, Ready

if TYPE_CHECKING:
    from kernel_mcp.worker.judge.reference import ReferenceRuntime

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
        free = free_memory(self.device)
        if free is not None:
            self.least_free = free if self.least_free is None else min(self.least_free, free)

    def peak_bytes(self) -> int | None:
        if self.free_at_start is None or self.least_free is None:
            return None
        return max(0, self.free_at_start - self.least_free)


def free_memory(device: Device | None) -> int | None:
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

    def open_session(self, runtime: ReferenceRuntime, candidate: Path | None = None) -> CandidateSession:
        """A host started ahead of need (or now), given its one candidate (the request's, by default)."""
        folder = runtime.problem.folder
        session = self.hosts.take()
        session.load(candidate or Path(self.request.candidate), [folder, folder.parent], runtime.candidate_init())
        return session
