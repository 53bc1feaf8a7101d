"""Free device memory from NVIDIA's management library (libnvidia-ml, shipped with the driver) through
ctypes: the lease asks it before admitting a check, without importing torch or creating a context.
Devices are matched by UUID (CUDA_VISIBLE_DEVICES renumbers them; NVML does not), else by index when
nothing renumbers them. Any failure means "unknown" (None): admission then relies on its ledger alone.
"""
from __future__ import annotations

import ctypes
import functools
import os

from kernel_mcp.worker.protocol import Device


class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


@functools.cache
def _library() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return None
    return lib if lib.nvmlInit_v2() == 0 else None


def _handles(lib: ctypes.CDLL) -> list[tuple[str, ctypes.c_void_p]]:
    count = ctypes.c_uint()
    if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
        return []
    found = []
    for i in range(count.value):
        handle, text = ctypes.c_void_p(), ctypes.create_string_buffer(96)
        if lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) == 0 \
                and lib.nvmlDeviceGetUUID(handle, text, 96) == 0:
            found.append((text.value.decode(), handle))
    return found


def _normal(uuid: str) -> str:
    return uuid.lower().removeprefix("gpu-").replace("-", "")


def _handle(lib: ctypes.CDLL, device: Device) -> ctypes.c_void_p | None:
    """NVML's handle of ``device``: by UUID, else by index where nothing renumbers devices."""
    if not device.is_gpu:
        return None
    handles = _handles(lib)
    if device.uuid:
        chosen = [h for uuid, h in handles if _normal(uuid) == _normal(device.uuid)]
    elif not os.environ.get("CUDA_VISIBLE_DEVICES") and device.index < len(handles):
        chosen = [handles[device.index][1]]
    else:
        chosen = []
    return chosen[0] if chosen else None


def free_bytes(device: Device) -> int | None:
    lib = _library()
    handle = _handle(lib, device) if lib is not None else None
    memory = _Memory()
    if handle is None or lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory)) != 0:
        return None
    return int(memory.free)


def driver_version() -> str:
    """The NVIDIA driver's version ("580.159.04"); "" without NVML."""
    lib, text = _library(), ctypes.create_string_buffer(96)
    if lib is None or lib.nvmlSystemGetDriverVersion(text, 96) != 0:
        return ""
    return text.value.decode()


CLOCKS = {"sm": 1, "memory": 2}  # nvmlClockType_t: NVML_CLOCK_SM, NVML_CLOCK_MEM


def clocks_mhz(device: Device) -> dict[str, int]:
    """The device's current SM and memory clocks in MHz (nvmlDeviceGetClockInfo); {} without NVML."""
    lib = _library()
    handle = _handle(lib, device) if lib is not None else None
    if handle is None:
        return {}
    found = {}
    for name, kind in CLOCKS.items():
        mhz = ctypes.c_uint()
        if lib.nvmlDeviceGetClockInfo(handle, kind, ctypes.byref(mhz)) == 0:
            found[name] = int(mhz.value)
    return found
