"""How judges and hosts wait for the GPU (worker/host/device_wait.py): asleep after the warm-up, spinning inside a
timed call only. The logic runs here against a driver written in the test (cuCtx* through ctypes' byref); the
real driver's on the GPU machine."""
from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

from kernel_mcp.worker.host import device_wait

OTHER_FLAG = 0x10  # CU_CTX_LMEM_RESIZE_TO_MAX: a flag that is not scheduling, which a switch must keep


class FakeDriver:
    """cuCtxGetCurrent, cuCtxGetFlags and cuCtxSetFlags of one context, writing through byref as the driver does."""

    def __init__(self, flags: int = OTHER_FLAG, context: int = 0x1234):
        self.flags, self.context, self.sets = flags, context, []

    def cuCtxGetCurrent(self, out) -> int:  # noqa: N802  (the driver's names)
        out._obj.value = self.context
        return 0

    def cuCtxGetFlags(self, out) -> int:  # noqa: N802
        out._obj.value = self.flags
        return 0

    def cuCtxSetFlags(self, flags: ctypes.c_uint) -> int:  # noqa: N802
        self.flags = flags.value
        self.sets.append(flags.value)
        return 0


@pytest.fixture
def driver(monkeypatch) -> FakeDriver:
    fake = FakeDriver()
    monkeypatch.setattr(device_wait, "_driver", lambda: fake)
    return fake


def test_a_warm_process_waits_asleep_and_a_timed_call_spins_then_sleeps_again(driver):
    assert device_wait.asleep("cuda:0")
    assert driver.flags == OTHER_FLAG | device_wait.SCHED_BLOCKING_SYNC
    with device_wait.spinning("cuda:0"):
        assert driver.flags == OTHER_FLAG | device_wait.SCHED_SPIN
    assert driver.flags == OTHER_FLAG | device_wait.SCHED_BLOCKING_SYNC


def test_a_timed_call_leaves_a_mode_it_did_not_set_as_it_was(driver):
    """A process never set asleep (or one whose candidate chose its own mode) is not switched to spinning and
    then put to sleep by a timed call."""
    driver.flags = device_wait.SCHED_SPIN
    with device_wait.spinning("cuda:0"):
        pass
    assert driver.sets == [] and driver.flags == device_wait.SCHED_SPIN


def test_no_context_and_no_gpu_change_nothing(driver):
    assert not device_wait.asleep("cpu")
    driver.context = 0  # no context current to this thread: the driver would refuse, so nothing is asked
    assert not device_wait.asleep("cuda:0") and device_wait.scheduling() is None
    with device_wait.spinning("cuda:0"):
        pass
    assert driver.sets == []


WARM_AND_TIME = """
import sys
import torch
from kernel_mcp.worker.host import device_wait, timing, warm
warm.gpu("cuda:0", sys.argv[1] == "timing")
booted = device_wait.scheduling()
seen = []
def fn(x):
    seen.append(device_wait.scheduling())
    return x * 2
timing.timed_call(fn, torch.ones(8, device="cuda"), timing.Clock("cuda"))
print(booted, seen[0], device_wait.scheduling())
"""


@pytest.mark.gpu
@pytest.mark.parametrize("booted_for, modes", [
    ("check", (device_wait.SCHED_BLOCKING_SYNC, device_wait.SCHED_SPIN, device_wait.SCHED_BLOCKING_SYNC)),
    ("timing", (0, 0, 0)),  # CUDA's default (CU_CTX_SCHED_AUTO: spins on a machine of many cores), never switched
])
def test_on_the_driver_a_check_waits_asleep_and_timing_keeps_cudas_default(booted_for, modes):
    done = subprocess.run([sys.executable, "-c", WARM_AND_TIME, booted_for], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert tuple(map(int, done.stdout.split())) == modes, done.stdout
