"""Honest control: the work runs on a side thread that is joined before returning (docs/threat-model.md, rule 8:
internal side streams/threads that are joined are fine). Must pass."""
import threading

import torch


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)

    def work():
        torch.add(a, b, out=out)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    return out
