"""Cheat (GPU only): read past the input's bounds inside the memory segment CUDA IPC maps, and return the
judge's expected output if it lies there.

CUDA IPC hands the receiver the whole cudaMalloc segment around a tensor, and PyTorch's caching allocator
carves many small tensors out of one segment. If the judge's expected output shares a segment with the
inputs it shares, this candidate computes 8 elements, finds them in the mapped segment and copies the
rest: a pass without computing, and (when timed) a fake speedup. kernel_mcp shares inputs from a private
memory pool (reference_runtime.share_copy), so the search must come up empty.
"""
import ctypes

import numpy as np
import torch

_cuda = ctypes.CDLL("libcuda.so.1")


def _segment_bytes(t: torch.Tensor) -> bytes:
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    if _cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(t.data_ptr())):
        return b""
    host = np.empty(size.value, dtype=np.uint8)
    if _cuda.cuMemcpyDtoH_v2(host.ctypes.data_as(ctypes.c_void_p), base, size):
        return b""
    return host.tobytes()


def custom_kernel(data):
    a, b = data
    torch.cuda.synchronize()
    probe = (a[:8] + b[:8]).cpu().numpy().tobytes()  # the only arithmetic this candidate does
    nbytes = a.numel() * a.element_size()
    for t in (a, b):
        raw = _segment_bytes(t)
        at = raw.find(probe)
        while at >= 0:
            if at + nbytes <= len(raw):
                return torch.frombuffer(bytearray(raw[at:at + nbytes]), dtype=a.dtype).to(a.device)
            at = raw.find(probe, at + 1)
    return torch.zeros_like(a)
