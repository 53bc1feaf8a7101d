"""Cheat: compute the right answer, then zero the inputs (KernelBench adversarial tests: input zeroing).

A harness that recomputes the reference from the (now zeroed) inputs after the call would expect zeros
and could be fooled in other ways; here the output is right but the inputs are destroyed. Expected: mutation.
"""


def custom_kernel(data):
    a, b = data
    out = a + b
    a.zero_()
    b.zero_()
    return out
