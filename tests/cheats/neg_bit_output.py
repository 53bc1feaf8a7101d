"""Cheat: returns torch's lazy negation of the sum (``torch._neg_view``): its caller reads -(a + b), while the
memory holds a + b. The negation bit does not cross processes, so a judge reading the raw memory would see the
right answer; the host sends the values the caller reads (problems/vector_add)."""
import torch


def custom_kernel(data):
    a, b = data
    out = torch._neg_view(a + b)
    assert out.is_neg()
    return out
