"""Crash kind: custom_kernel raises an exception. Expected: a failed case with the traceback, not a harness
error."""


def custom_kernel(data):
    raise RuntimeError("kernel launch failed (deliberately)")
