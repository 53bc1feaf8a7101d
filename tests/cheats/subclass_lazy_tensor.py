"""Cheat: a lazy ``torch.Tensor`` subclass whose comparisons are faked (GPU MODE #159-#162: lazy outputs).

Holds zeros, but ``__torch_function__`` makes every comparison-like op (``allclose``, ``isclose``, ``eq``,
``equal``, ``sub``, ``abs``...) report "equal", and ``__eq__`` returns True. A harness that compares inside
the candidate's process, or trusts the object it gets back, would accept it. The judge only accepts plain
tensors: expected verdict forged (refused by the restricted unpickler) or structure.
"""
import torch

_FAKE_TRUE = {torch.allclose, torch.equal, torch.Tensor.allclose, torch.Tensor.equal}
_FAKE_ELEMENTWISE = {torch.isclose, torch.eq, torch.Tensor.eq, torch.Tensor.__eq__, torch.Tensor.isclose}


class LazyAnswer(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _FAKE_TRUE:
            return True
        if func in _FAKE_ELEMENTWISE:
            return torch.ones(args[0].shape, dtype=torch.bool)
        if func in (torch.sub, torch.Tensor.sub, torch.Tensor.__sub__):
            return torch.zeros(args[0].shape)
        return super().__torch_function__(func, types, args, kwargs)

    def __eq__(self, other):  # noqa: D105
        return True

    __hash__ = torch.Tensor.__hash__


def custom_kernel(data):
    a, _ = data
    return torch.zeros_like(a).as_subclass(LazyAnswer)
