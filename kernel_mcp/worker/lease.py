"""The per-device lease: timing alone on a device, checks side by side while their memory fits.

One lease per device (per physical GPU, one for the CPU), shared by every kernel_mcp process of the
machine (CLI runs, MCP servers, the orchestrator) through lock files in ``<cache>/leases``:

* **exclusive** (profile, roofline, evaluate's timing, calibrate, counters): nothing else runs on the
  device while it is held, so no other process disturbs the numbers;
* **shared** (checks, a compile's recording call, a judge's boot): any number at once, each admitted only
  while the device memory the holders reserved, plus its own need, fits (``need_bytes``; measured peaks
  of earlier runs, see ``needs.memory_need``), so concurrent checks do not run each other out of memory. A
  problem never measured is admitted with a first share of the device (``needs.first_need``) and its judge
  may allocate no more than that until it has measured the reference; then the reservation is resized
  to the measured need (``Reservation.resize``), or, when the need is larger, the check starts again
  with it (the runner).

A turnstile lock in front keeps it fair: an exclusive request waits for the shared holders present, and
shared requests arriving after it wait for it. Memory has a turnstile of its own: a shared request whose memory
does not fit lets checks that fit pass it for BACKFILL_S, then keeps the memory turnstile for at most DRAIN_S, so that
the checks on the device finish and none replace them. If it is not admitted by then, the turnstile rests for
BACKFILL_S, for every check waiting (``{key}.rest``): checks that fit pass again; then a waiting check keeps it again,
for twice as long each time it failed. The bound matters when what holds the memory is one slow check: kept until
admitted, the turnstile idled every other check for as long as it ran (an H100, thirty-fifth session: 86 s of a 420 s
batch, eleven judges ready, a slow softmax holding 36 GiB, checks waiting for 46 and 61 GiB keeping the turnstile in
turn). Runs that
reserve no memory (a judge's boot, a build ahead) do not wait behind it (only behind a timing run): they cannot
delay its admission, and a batch whose judges and builds stopped for a large check's memory idled the CPUs for
minutes (an H100, thirty-fourth session). ``flock`` locks die with their process: a killed run never leaves the
device locked; the ledger drops dead holders' entries.
"""
from __future__ import annotations

import fcntl
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kernel_mcp.files import cache_root
from kernel_mcp.worker import nvml, trace
from kernel_mcp.worker.needs import MIN_NEED
from kernel_mcp.worker.protocol import Device

MEMORY_BUDGET = 0.9  # share of a GPU's memory that admitted checks may reserve together
POLL_S = 0.2
# A check waiting for device memory lets checks that fit now pass it this long (seconds), then keeps the turnstile
# (below), so that it is not starved; a turnstile whose keeper was not admitted in its window rests this long too.
# Without the backfill, one large check waiting held up every check behind it
# while memory for them was free (H100, thirty-second session: 28 of 33 checks waited, a median of 47 s).
BACKFILL_S = 60.0
# ... and keeps it this long (seconds), time enough for the checks already admitted beside the one that holds its
# memory to finish (a check's median on an H100 was 38 s whole, thirty-fifth session); if not admitted by then, the
# turnstile rests BACKFILL_S (checks that fit pass), and the check's next window is twice as long. Not starved: no
# check is admitted in a window, and the windows grow until one outlasts the checks on the device (each has a time
# limit), so the waiting check gets in.
DRAIN_S = 45.0
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
        token, began, said, windows = "", time.monotonic(), set(), [0]
        while True:
            _lock(gate, fcntl.LOCK_EX, on_wait, message)
            try:
                _lock(main, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH, on_wait, message)
            finally:
                fcntl.flock(gate, fcntl.LOCK_UN)
            if exclusive or not (device.is_gpu and need_bytes):
                break
            keep = time.monotonic() - began >= BACKFILL_S  # until then, checks that fit pass it between tries
            token = _admit_in_turn(folder, key, device, need_bytes, on_wait, keep, said, windows, began)
            if token:
                break
            fcntl.flock(main, fcntl.LOCK_UN)
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


def _admit_in_turn(folder: Path, key: str, device: Device, need: int, on_wait: OnWait | None, keep: bool,
                   said: set, windows: list[int], began: float) -> str:
    """``_admit`` through the memory turnstile. A request that may ``keep`` it, unless the turnstile rests, holds it
    until admitted or for its window (DRAIN_S, doubled for each of its ``windows`` that ended unadmitted), then sets
    the rest; any other gives way if it finds it held ('': it tries again later), and says so once it has waited
    longer than a moment since it ``began`` (monotonic): finding it held as another request passes is no wait."""
    first = (f"waiting for {need / 2**30:.1f} GiB of {device.name or device.torch} memory "
             "(a check that waited longer is first)")
    rest = folder / f"{key}.rest"
    with open(folder / f"{key}.memory", "a+") as turn:
        if keep and not _resting(rest):
            _lock(turn, fcntl.LOCK_EX, on_wait, first)
            keep = not _resting(rest)  # another keeper's window may have ended while this one waited for the lock
        else:
            keep = False
            try:
                fcntl.flock(turn, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() - began >= MOMENT_S:
                    _say_once(said, "turn", first, on_wait)
                return ""
        try:
            until = time.monotonic() + DRAIN_S * 2 ** windows[0] if keep else 0.0
            token = _admit(folder / f"{key}.ledger", device, need, on_wait, until, said)
            if keep and not token:  # its window ended: checks that fit pass for BACKFILL_S, then it keeps it longer
                windows[0] += 1
                rest.write_text(str(time.time() + BACKFILL_S))
            return token
        finally:
            fcntl.flock(turn, fcntl.LOCK_UN)


def _resting(rest: Path) -> bool:
    """Does the memory turnstile rest now (a keeper's window ended unadmitted less than BACKFILL_S ago)?"""
    try:
        return time.time() < float(rest.read_text())
    except (OSError, ValueError):
        return False


def _admit(path: Path, device: Device, need: int, on_wait: OnWait | None, until: float, said: set) -> str:
    """Admit ``need`` bytes once they fit beside the holders' reservations (and in the memory now free), waiting for
    that until ``until`` (a monotonic time; '' if they do not fit by then, or now if it is 0.0); a request alone on the
    device is admitted whatever its size. ``said``: what was said of this request's wait (it is said once)."""
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
        shown = "" if free is None else f", {free / 2**30:.1f} GiB free"
        _say_once(said, "memory", f"waiting for {need / 2**30:.1f} GiB of {device.name or device.torch} memory "
                  f"({reserved / 2**30:.1f} GiB reserved by {len(entries)} other run(s){shown})", on_wait)
        if time.monotonic() >= until:
            return ""
        time.sleep(POLL_S)


def _say_once(said: set, what: str, message: str, on_wait: OnWait | None) -> None:
    """A request's wait of one kind (``what``), said once: to its caller, and to the trace (KERNEL_MCP_TRACE)."""
    if what in said:
        return
    said.add(what)
    trace.mark(f"caller: {message}")
    if on_wait:
        on_wait(message)


def _release(path: Path, token: str) -> bool:
    """Drop the reservation; returns whether another holder reserved beside it at any moment."""
    with _ledger(path) as entries:
        crowded = any(e.get("crowded") for e in entries if e.get("token") == token)
        entries[:] = [e for e in entries if e.get("token") != token]
    return crowded


def free_memory(device: Device) -> int | None:
    """Free bytes on the device now, from the driver's management library (no torch, no context)."""
    return nvml.free_bytes(device) if device.vendor == "nvidia" else None
