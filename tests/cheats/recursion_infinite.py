"""Crash kind: unbounded recursion (RecursionError at Python's default limit)."""


def _forever(n):
    return _forever(n + 1) + 1


def custom_kernel(data):
    return _forever(0)
