"""Cheat: monkeypatch every comparison function to say "equal", then return garbage.

Models harnesses that compare inside the candidate's process (pygpubench exploits; docs/threat-model.md, rule 1: "not
torch.allclose"). Patches torch.allclose, torch.isclose, torch.equal, torch.testing.assert_close,
torch.Tensor.__eq__/__ne__/allclose/equal, and numpy.allclose/array_equal where numpy is present.
The judge compares in another process, so the zeros fail: expected verdict mismatch.
"""
import torch
import torch.testing

_PATCHED = []


def _always_true(*args, **kwargs):
    return True


def _all_true_like(a, *args, **kwargs):
    return torch.ones(torch.as_tensor(a).shape, dtype=torch.bool)


def _patch():
    torch.allclose = _always_true
    torch.equal = _always_true
    torch.isclose = _all_true_like
    torch.testing.assert_close = lambda *a, **k: None
    torch.Tensor.__eq__ = _all_true_like
    torch.Tensor.__ne__ = lambda a, *x, **k: torch.zeros(a.shape, dtype=torch.bool)
    torch.Tensor.allclose = _always_true
    torch.Tensor.equal = _always_true
    try:
        import numpy
        numpy.allclose = _always_true
        numpy.array_equal = _always_true
        numpy.testing.assert_allclose = lambda *a, **k: None
    except ImportError:
        pass
    _PATCHED.append(True)


_patch()  # at import time


def custom_kernel(data):
    a, _ = data
    if not _PATCHED:
        _patch()
    return torch.zeros_like(a)
