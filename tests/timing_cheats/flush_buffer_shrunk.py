"""Class: the L2 flush can be switched off from the candidate's process. Shrinks every Flusher's sweep
buffer it can find to one element, then adds honestly. It prints how many it found."""
import gc

import torch

_done = []


def _shrink():
    found = [o for o in gc.get_objects() if type(o).__name__ == "Flusher"]
    for flusher in found:
        flusher.buffer = flusher.buffer[:1].clone()
    print(f"flush_buffer_shrunk: {len(found)} flusher(s) found in this process", flush=True)


def custom_kernel(data):
    if not _done:
        _shrink()
        _done.append(True)
    a, b = data
    return a + b
