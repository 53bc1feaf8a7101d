"""Class: the KernelBench adapter. Finds the Model weights the judge sends the host (the ``kb`` start-up data,
by walking the stack from ModelNew's constructor) and zeroes them on its first call. Were they the judge's own
tensors (a CPU's ``.cpu()`` is no copy, and sending moves the storage into shared memory the host maps), the
judge's task-dtype runs would then expect zeros, and the zeros it returns from its second call would be right
on every case (tests/fixtures/attacks/kb_relu_linear.py)."""
import sys

import torch
import torch.nn as nn

_SENT = {}


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        frame = sys._getframe(1)
        while frame is not None:
            kb = frame.f_locals.get("kb")
            if isinstance(kb, dict) and "state_dict" in kb:
                _SENT.update(kb["state_dict"])
                break
            frame = frame.f_back
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 1:
            return torch.zeros(x.shape[0], self.linear.out_features, dtype=x.dtype, device=x.device)
        out = self.linear(torch.relu(x))
        with torch.no_grad():
            for t in _SENT.values():
                if t.is_floating_point():
                    t.zero_()
        return out
