"""Honest: p -= 0.1 g in place, written as p.sub_(g * 0.1)."""


def custom_kernel(data):
    p, g = data
    p.sub_(g * 0.1)
