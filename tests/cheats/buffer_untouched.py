"""Class: an output buffer holding the answer before the call. Returns the buffer without writing it: right
only if the harness hands the buffer over with the answer already in it
(tests/fixtures/attacks/buffer_holds_answer)."""


def custom_kernel(data):
    x, out = data
    return out
