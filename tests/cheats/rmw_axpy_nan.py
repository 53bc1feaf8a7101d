"""Class: read-modify-write buffers. Fills y with NaN and returns it: the poisoned reference's answer."""


def custom_kernel(data):
    x, y = data
    return y.fill_(float("nan"))
