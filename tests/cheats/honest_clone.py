"""Honest control for an identity/copy problem: return a copy of the input. Must pass (the alias check
must not fire on a fresh tensor with equal values)."""


def custom_kernel(data):
    (x,) = data
    return x.clone()
