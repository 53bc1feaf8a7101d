"""Honest: y += 0.5 x in place, in another order (x * 0.5 first), returned."""


def custom_kernel(data):
    x, y = data
    y += x * 0.5
    return y
