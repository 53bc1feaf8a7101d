"""Class: read-modify-write buffers. Returns y untouched: when y was poisoned before the reference ran, the
expected y + 0.5x was NaN too, and NaN matched NaN (tests/fixtures/attacks/axpy_inplace)."""


def custom_kernel(data):
    return data[1]
