"""Class: a precision downgrade hidden in the saved-LSE form: the log-sum-exp kept in bfloat16 (as a kernel
storing it for a backward pass might), so every row is scaled by up to 2^-8 of lse. The bound's exp() argument term
(tolerance.exp_argument, |lse| * 2^-24 relative) must not admit it."""
import torch


def custom_kernel(data):
    (x,) = data
    lse = torch.logsumexp(x, -1, keepdim=True).bfloat16().float()
    return torch.exp(x - lse)
