"""WRONG matmul_bf16: sums 16-wide K-block partial products, but rounds the running sum to
bf16 after every block, so each of the k/16 additions loses up to half a bf16 ulp."""
import torch

K_BLOCK = 16  # products per partial sum


def custom_kernel(data):
    a, b = data
    k = a.shape[1]
    acc = torch.zeros((a.shape[0], b.shape[1]), dtype=torch.bfloat16, device=a.device)
    for k0 in range(0, k, K_BLOCK):
        part = a[:, k0:k0 + K_BLOCK].float() @ b[k0:k0 + K_BLOCK].float()  # exact-ish fp32 partial
        acc = (acc.float() + part).to(torch.bfloat16)  # BUG: bf16 accumulator
    return acc
