"""How much device memory a problem's run needs: what earlier runs of it took (the records the lease admits
checks by, worker/lease.py), and what a run never measured is first admitted with.

The records are ``<cache>/memory.json``: per GPU model and problem, the largest peak seen (a reservation too small
runs checks out of memory; one too large only makes them queue).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path

from kernel_mcp.files import cache_root
from kernel_mcp.worker.protocol import Device

# A problem never measured is admitted with this share of the device, its judge held to it (allocations
# beyond it fail in the judge, never in a neighbour) until it has measured the reference (seconds) and
# knows what the check needs (judge/footprint.py). KernelBench's level-1 problems range from megabytes to
# 50 GiB: most fit a quarter of an H200, so up to three first runs go side by side; the rest start again
# with their measured need. A step recording a never-measured problem's candidate, which no judge
# measures, reserves the whole device (ALONE).
FIRST_SHARE = 0.25
ALONE = 1.0
OUTGREW = "outgrew_first_reservation"  # finding: a first run needs more than its first share
SHORT = "short_of_memory"  # finding: the judge ran out of device memory before any candidate was sent an input
NEED_MARGIN = 1.25  # a measured peak is reserved with this much to spare
MIN_NEED = 256 << 20  # bytes: what a judge and a candidate host allocate beside their contexts, at least
CONTEXTS_BYTES = 2 * (600 << 20)  # a judge's and a candidate host's CUDA contexts (~0.5 GiB each on an H200)


def problem_key(problem) -> str:
    """A problem's name in the memory records: its path's digest (``problem``: a problem.Problem)."""
    return hashlib.sha256(str(problem.path).encode()).hexdigest()[:16]


def _needs_file() -> Path:
    return cache_root() / "memory.json"


def memory_key(device: Device) -> str:
    """Whose measurements a device shares: every GPU of one model and memory size (a pool's eight H100s measure a
    problem once, not eight times); a GPU whose name torch did not give, only its own."""
    if device.name and device.total_memory_bytes:
        return "".join(c for c in device.name if c.isalnum() or c in "-_") + f"-{device.total_memory_bytes}"
    return device.lease_key


def need_key(device: Device, problem_key: str) -> str:
    """A problem's name in the memory records of ``device``'s model."""
    return f"{memory_key(device)}:{problem_key}"


def measured_need(device: Device, problem_key: str) -> int | None:
    """Bytes to reserve for a run of this problem from its measured peak, with a margin (0 off a GPU; None
    when it was never measured on a GPU of this model)."""
    if not device.is_gpu:
        return 0
    try:
        peak = json.loads(_needs_file().read_text()).get(need_key(device, problem_key))
    except (OSError, ValueError, AttributeError):
        peak = None
    if isinstance(peak, int) and peak >= 0:
        return max(MIN_NEED, int(peak * NEED_MARGIN))
    return None


def ran_short(result) -> bool:
    """Did a check that shared the device end because its judge ran out of device memory before any candidate
    was sent an input (``SHORT``: the reference's runs, or the first case's preparation)? Reservations are
    estimates, and a neighbour can hold more than it reserved (torch's cache keeps freed blocks). Only then is it
    run again alone: a shortage once a candidate has been served could be the candidate's own doing (it can fill
    the device, or raise the error by name), and a rerun would grant it fresh secret inputs; before that, it has
    seen none. ``result``: a CheckResult."""
    return any(f.code == SHORT for f in result.findings)


def memory_need(device: Device, problem_key: str) -> int:
    """Bytes to reserve for a run of this problem that nothing measures on the way: its measured need,
    else the whole device."""
    need = measured_need(device, problem_key)
    return int(ALONE * device.total_memory_bytes) if need is None else need


def first_need(device: Device) -> int:
    """Bytes a never-measured problem's judge is first admitted with (and held to, less the contexts)."""
    return int(FIRST_SHARE * device.total_memory_bytes)


def need_from_measure(measured_bytes: int) -> int:
    """What to reserve for a check whose judge measured ``measured_bytes`` of allocations: the contexts
    are not allocations."""
    return int(measured_bytes * NEED_MARGIN) + CONTEXTS_BYTES


def record_need(device: Device, problem_key: str, need_bytes: int | None) -> None:
    """Record what a check of this problem is to reserve (a judge's measure of its reference, before any check:
    batch/survey.py), as the peak it stands for: ``measured_need`` then gives it back."""
    if need_bytes:
        record_peak(device, problem_key, int(need_bytes / NEED_MARGIN))


def record_peak(device: Device, problem_key: str, peak_bytes: int | None) -> None:
    if not device.is_gpu or peak_bytes is None or peak_bytes < 0:
        return
    try:
        _write_peak(device, problem_key, peak_bytes)
    except OSError:
        pass  # a record not written costs the next run its admission estimate, never its result


def _write_peak(device: Device, problem_key: str, peak_bytes: int) -> None:
    path = _needs_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            table = json.loads(path.read_text())
            table = table if isinstance(table, dict) else {}
        except (OSError, ValueError):
            table = {}
        key = need_key(device, problem_key)
        earlier = table.get(key)
        # the largest seen: a device-wide reading falls when another run frees memory meanwhile, and a
        # reservation too small runs checks out of memory; one too large only makes them queue
        table[key] = max(int(peak_bytes), earlier if isinstance(earlier, int) else 0)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(table, indent=1))
        tmp.replace(path)
