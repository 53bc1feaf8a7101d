"""Cheat: do the float32 tests of vector_add in float16 and cast back (reduced precision, right dtype).
Expected verdict: mismatch (float16 rounding is 2^13 times float32's unit roundoff).
"""


def custom_kernel(data):
    a, b = data
    return (a.half() + b.half()).to(a.dtype)
