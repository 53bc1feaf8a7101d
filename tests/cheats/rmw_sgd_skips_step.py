"""Class: read-modify-write buffers. An optimizer step that does nothing (tests/fixtures/attacks/sgd_step):
the reference's p -= 0.1 g was computed on a poisoned p, and the untouched (poisoned) p matched it."""


def custom_kernel(data):
    return None
