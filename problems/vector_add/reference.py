"""Reference for vector_add: out = a + b on 1-D float16/float32 tensors."""
import torch

# test parameter `itemsize` (bytes per element) -> dtype
DTYPES = {2: torch.float16, 4: torch.float32}


def generate_input(n, itemsize, seed, device="cpu"):
    """Two 1-D tensors of n standard-normal values in the dtype named by itemsize."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    dtype = DTYPES[int(itemsize)]
    a = torch.randn(n, generator=gen, device=device).to(dtype)
    b = torch.randn(n, generator=gen, device=device).to(dtype)
    return a, b


def ref_kernel(data):
    """a + b in the inputs' dtype (a new tensor)."""
    a, b = data
    return a + b
