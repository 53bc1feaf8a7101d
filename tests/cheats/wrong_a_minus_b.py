"""A plainly wrong vector_add (``a - b``): used after a tampering attempt to see whether the problem's
reference is still the real one. Must fail on an intact problem."""


def custom_kernel(data):
    a, b = data
    return a - b
