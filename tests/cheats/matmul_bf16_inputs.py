"""Cheat (precision downgrade): a and b read as bfloat16, products summed in fp32."""
import torch


def custom_kernel(data):
    a, b = data
    return a.bfloat16().float() @ b.bfloat16().float()
