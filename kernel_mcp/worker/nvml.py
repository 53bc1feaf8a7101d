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


def free_bytes(device: Device) -> int | None:
    lib = _library()
    if lib is None or not device.is_gpu:
        return None
    handles = _handles(lib)
    if device.uuid:
        chosen = [h for uuid, h in handles if _normal(uuid) == _normal(device.uuid)]
    elif not os.environ.get("CUDA_VISIBLE_DEVICES") and device.index < len(handles):
        chosen = [handles[device.index][1]]
    else:
        chosen = []
    memory = _Memory()
    if not chosen or lib.nvmlDeviceGetMemoryInfo(chosen[0], ctypes.byref(memory)) != 0:
        return None
    return int(memory.free)
