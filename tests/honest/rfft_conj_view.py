"""Honest: the rfft returned as torch's lazy conjugate of its conjugate (``is_conj()`` set on a tensor whose
memory holds the conjugated values): its reader sees rfft(x). The conjugation bit does not cross processes on
its own, so the host sends the values the reader sees; judged from raw memory it would read as conjugated."""
import torch


def custom_kernel(data):
    (x,) = data
    conjugated = torch.fft.rfft(x, dim=-1).conj().resolve_conj()  # memory: the conjugate
    out = conjugated.conj()  # a lazy view: reads as rfft(x)
    assert out.is_conj()
    return out, x.t()
