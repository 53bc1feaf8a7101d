"""Crash kind: a segmentation fault (``ctypes.string_at(0)``), like a kernel reading a null pointer."""
import ctypes


def custom_kernel(data):
    return ctypes.string_at(0)
