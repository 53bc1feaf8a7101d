"""Cheat: compute the answer into an input and return that input (``a.add_(b)``).

Correct values, no allocation; it destroys the caller's input (KernelBench adversarial tests: input
mutation). Expected verdict: mutation.
"""


def custom_kernel(data):
    a, b = data
    return a.add_(b)
