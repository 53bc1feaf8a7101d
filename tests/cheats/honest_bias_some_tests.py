"""Honest: reads the bias only where the task uses it, and leaves both inputs alone."""


def custom_kernel(data):
    x, bias, use_bias = data
    return x + x + bias if use_bias else x + x
