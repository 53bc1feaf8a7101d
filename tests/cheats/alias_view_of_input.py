"""Cheat: compute into a fresh tensor, then hand back a view of the input ``a[:]`` instead.

An output that shares memory with an input (returns ``a`` itself or a view) can look right whenever the
output equals that input, and lets a later write to the input change the "verified" output. The alias check
runs before the value comparison, so the verdict is alias, not mismatch.
"""


def custom_kernel(data):
    a, b = data
    _ = a + b  # computed and thrown away
    return a[:]
