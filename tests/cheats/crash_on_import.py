"""Crash kind: the candidate raises while it is imported (a failed build or a missing dependency)."""
raise ImportError("cannot build the extension (deliberately)")


def custom_kernel(data):  # never reached
    a, b = data
    return a + b
