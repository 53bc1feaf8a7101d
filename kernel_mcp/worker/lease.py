"""The per-device lease: timing alone on a device, checks side by side while their memory fits.

One lease per device (per physical GPU, one for the CPU), shared by every kernel_mcp process of the
machine (CLI runs, MCP servers, the orchestrator) through lock files in ``<cache>/leases``:

* **exclusive** (profile, roofline, evaluate's timing, calibrate, counters): nothing else runs on the
  device while it is held, so no other process disturbs the numbers;
* **shared** (checks, a compile's recording call, a judge's boot): any number at once, each admitted only
  while the device memory the holders reserved, plus its own need, fits (``need_bytes``; measured peaks
  of earlier runs, see ``memory_need``), so concurrent checks do not run each other out of memory. A
  problem never measured is admitted with a first share of the device (``first_need``) and its judge
  may allocate no more than that until it has measured the reference; then the reservation is resized
  to the measured need (``Reservation.resize``), or, when the need is larger, the check starts again
  with it (the runner).

A turnstile lock in front keeps it fair: an exclusive request waits for the shared holders present, and
shared requests arriving after it wait for it. A shared request whose memory does not fit steps out of the
turnstile between tries for BACKFILL_S (checks that fit pass it), then keeps it until admitted. ``flock`` locks
die with their process: a killed run never leaves the device locked; the ledger drops dead holders' entries.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kernel_mcp.files import cache_root
from kernel_mcp.worker import nvml
from kernel_mcp.worker.protocol import Device

MEMORY_BUDGET = 0.9  # share of a GPU's memory that admitted checks may reserve together
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
POLL_S = 0.2
# A check waiting for device memory lets checks that fit now pass it this long (seconds), then keeps the turnstile
# until it is admitted, so that it is not starved. Without it, one large check waiting held up every check behind it
# while memory for them was free (H100, thirty-second session: 28 of 33 checks waited, a median of 47 s).
BACKFILL_S = 60.0
MOMENT_S = 0.25  # a shorter wait is another request passing the turnstile, not worth saying
REPEAT_S = 30.0  # a long wait is said again this often

OnWait = Callable[[str], None]


def lease_dir() -> Path:
    folder = cache_root() / "leases"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Reservation:
    """The device memory a shared holder reserved; ``resize`` replaces it once the run knows its need (a
    judge that measured its problem's reference), without waiting: the run is already on the device."""

    def __init__(self, ledger: Path | None, token: str):
        self.ledger, self.token = ledger, token
        # did another shared holder reserve memory beside this one at any moment? Known once released: a
        # device-wide reading of the run's peak then counts the neighbours' allocations too (``record_peak``)
        self.crowded = False

    def resize(self, need_bytes: int) -> None:
        if not self.token or self.ledger is None:
            return
        with _ledger(self.ledger) as entries:
            for entry in entries:
                if entry.get("token") == self.token:
                    entry["bytes"] = max(MIN_NEED, int(need_bytes))


@contextmanager
def hold(device: Device, exclusive: bool, need_bytes: int = 0, on_wait: OnWait | None = None) -> Iterator[Reservation]:
    """Hold ``device``'s lease for the block (see the module's docstring)."""
    folder = lease_dir()
    key = device.lease_key
    with open(folder / f"{key}.gate", "a+") as gate, open(folder / f"{key}.lock", "a+") as main:
        what = "a timing run holds it or is next" if not exclusive else "other runs are on it"
        message = f"waiting for {device.name or device.torch} ({what})"
        token, began, said = "", time.monotonic(), set()
        while True:
            _lock(gate, fcntl.LOCK_EX, on_wait, message)
            try:
                _lock(main, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH, on_wait, message)
                if exclusive or not (device.is_gpu and need_bytes):
                    break
                # until it has waited BACKFILL_S, a check short of memory steps out of the turnstile between tries
                patient = time.monotonic() - began >= BACKFILL_S
                token = _admit(folder / f"{key}.ledger", device, need_bytes, on_wait, patient, said)
                if token:
                    break
                fcntl.flock(main, fcntl.LOCK_UN)
            finally:
                fcntl.flock(gate, fcntl.LOCK_UN)
            time.sleep(POLL_S)
        reservation = Reservation(folder / f"{key}.ledger", token)
        try:
            yield reservation
        finally:
            if token:
                reservation.crowded = _release(folder / f"{key}.ledger", token)
            fcntl.flock(main, fcntl.LOCK_UN)


def _lock(handle, mode: int, on_wait: OnWait | None, message: str) -> None:
    """Take the lock. A wait longer than a moment (another request passing the turnstile) is reported,
    and again every REPEAT_S while it lasts: whoever waits on us knows we are waiting, not stuck."""
    started = time.monotonic()
    said = None
    while True:
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            waited = time.monotonic() - started
            if on_wait and waited >= MOMENT_S and (said is None or waited - said >= REPEAT_S):
                on_wait(message if said is None else f"{message}: {waited:.0f} s so far")
                said = waited
            time.sleep(0.01 if waited < MOMENT_S else POLL_S)


@contextmanager
def _ledger(path: Path) -> Iterator[list[dict]]:
    """The holders' reservations, read and written under the ledger's own lock; dead holders dropped."""
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        try:
            entries = [e for e in json.loads(handle.read() or "[]") if _alive(int(e["pid"]))]
        except (ValueError, KeyError, TypeError):
            entries = []
        yield entries
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(entries))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _admit(path: Path, device: Device, need: int, on_wait: OnWait | None, wait: bool, said: set) -> str:
    """Admit ``need`` bytes once they fit beside the holders' reservations (and in the memory now free), waiting for
    that if ``wait`` (else '' when they do not fit now); a request alone on the device is admitted whatever its size.
    ``said``: what was said of this request's wait (it is said once)."""
    budget = MEMORY_BUDGET * device.total_memory_bytes
    while True:
        with _ledger(path) as entries:
            reserved = sum(int(e["bytes"]) for e in entries)
            free = free_memory(device)
            if not entries or (reserved + need <= budget and (free is None or free >= need)):
                token = uuid.uuid4().hex
                for entry in entries:  # each holder now shares the device with this one (Reservation.crowded)
                    entry["crowded"] = True
                entries.append({"pid": os.getpid(), "bytes": int(need), "token": token, "since": time.time(),
                                "crowded": bool(entries)})
                return token
        if on_wait and "memory" not in said:
            on_wait(f"waiting for {need / 2**30:.1f} GiB of {device.name or device.torch} memory "
                    f"({reserved / 2**30:.1f} GiB reserved by {len(entries)} other run(s))")
            said.add("memory")
        if not wait:
            return ""
        time.sleep(POLL_S)


def _release(path: Path, token: str) -> bool:
    """Drop the reservation; returns whether another holder reserved beside it at any moment."""
    with _ledger(path) as entries:
        crowded = any(e.get("crowded") for e in entries if e.get("token") == token)
        entries[:] = [e for e in entries if e.get("token") != token]
    return crowded


def free_memory(device: Device) -> int | None:
    """Free bytes on the device now, from the driver's management library (no torch, no context)."""
    return nvml.free_bytes(device) if device.vendor == "nvidia" else None


# --- how much memory a problem's run needs: what earlier runs of it took --------------------------------

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
