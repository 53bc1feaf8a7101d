"""WRONG vector_add: adds in float16 whatever the input dtype, so float32 tests lose ~13 bits."""
import torch


def custom_kernel(data):
    a, b = data
    return (a.half() + b.half()).to(a.dtype)  # BUG: float32 inputs rounded to float16
