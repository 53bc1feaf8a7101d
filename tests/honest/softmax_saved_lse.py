"""Honest: softmax in FlashAttention's saved-LSE form, out = exp(x - logsumexp(x)), in float32. One pass finds
each row's log-sum-exp (max plus the log of the shifted sum), the next writes exp(x - lse) with no division.
Rounding lse, which is as large as the logits (up to about 260 in problems/softmax), scales the whole row by
1 +- |lse| * 2^-24: an error set by the logits' size, not by the row's length."""
import torch


def custom_kernel(data):
    (x,) = data
    m = x.amax(dim=-1, keepdim=True)
    lse = m + torch.log(torch.exp(x - m).sum(dim=-1, keepdim=True))
    return torch.exp(x - lse)
