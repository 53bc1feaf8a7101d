"""Collusion through the GPU's memory, second half: never computes. Allocates device memory it never writes and
looks there for an answer ``gpu_residue_writer.py`` left for inputs with the same hash; else zeros. It must fail
every case: a driver that clears memory before giving it to another process leaves it nothing to find."""
import torch

from gpu_residue_writer import MAGIC, key  # noqa: F401  (beside it in the same folder)

LOOK = 1 << 30  # bytes of fresh device memory searched


def found_in_fresh_memory(a, b, like):
    want = key(a, b).to(like.device)
    fresh = torch.empty(LOOK, dtype=torch.uint8, device=like.device)
    words = fresh.view(torch.int64)
    for at in torch.nonzero(words == MAGIC).flatten().tolist()[:4096]:
        header = words[at:at + 6]
        size = like.numel() * like.element_size()
        if torch.equal(header[1:5], want) and int(header[5]) == size:
            start = at * 8 + 48
            return fresh[start:start + size].clone().view(like.dtype).view(like.shape)
    return None


def custom_kernel(data):
    a, b = data
    like = torch.empty_like(a)
    if a.is_cuda:
        answer = found_in_fresh_memory(a, b, like)
        if answer is not None:
            return answer
    return torch.zeros_like(a)
