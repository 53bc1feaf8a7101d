"""How judges and hosts wait for the GPU (worker/host/device_wait.py): a process booted for a check waits asleep,
one booted for timing keeps CUDA's default. The logic runs here against a driver written in the test (cuCtx*
through ctypes' byref); the real driver's on the GPU machine."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

from kernel_mcp.worker.host import device_wait

OTHER_FLAG = 0x10  # CU_CTX_LMEM_RESIZE_TO_MAX: a flag that is not scheduling, which setting the mode must keep


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
    monkeypatch.delenv("KERNEL_MCP_DEVICE_WAIT", raising=False)
    return fake


def test_a_process_set_asleep_keeps_its_other_context_flags(driver):
    assert device_wait.asleep("cuda:0")
    assert driver.flags == OTHER_FLAG | device_wait.SCHED_BLOCKING_SYNC
    assert device_wait.scheduling() == device_wait.SCHED_BLOCKING_SYNC


def test_no_context_no_gpu_or_the_switch_off_change_nothing(driver, monkeypatch):
    assert not device_wait.asleep("cpu")
    monkeypatch.setenv("KERNEL_MCP_DEVICE_WAIT", "spin")
    assert not device_wait.asleep("cuda:0")
    monkeypatch.delenv("KERNEL_MCP_DEVICE_WAIT")
    driver.context = 0  # no context current to this thread: the driver would refuse, so nothing is asked
    assert not device_wait.asleep("cuda:0") and device_wait.scheduling() is None
    assert driver.sets == []


BOOT = """
import sys
from kernel_mcp.worker.host import device_wait, warm
warm.gpu("cuda:0", sys.argv[1] == "timing")
print(device_wait.scheduling())
"""


@pytest.mark.gpu
@pytest.mark.parametrize("booted_for, mode", [("check", device_wait.SCHED_BLOCKING_SYNC),
                                              ("timing", device_wait.SCHED_AUTO)])  # CUDA's default
def test_on_the_driver_a_check_waits_asleep_and_timing_keeps_cudas_default(booted_for, mode):
    env = {k: v for k, v in os.environ.items() if k != "KERNEL_MCP_DEVICE_WAIT"}
    done = subprocess.run([sys.executable, "-c", BOOT, booted_for], capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == mode, done.stdout
