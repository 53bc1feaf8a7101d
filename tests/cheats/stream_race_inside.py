"""Race (GPU): a * 2 made on a private stream after a delay, then added to b on the caller's stream without
waiting for it: the add reads a buffer not yet written. Wrong as run; right when every op waits for the whole
device. Cause: unordered_stream (the vector_add problem: the answer should be a + b, so the kernel computes
(a * 2 - a) + b)."""
import torch

_side = {}


def custom_kernel(data):
    a, b = data
    stream = _side.setdefault(a.device, torch.cuda.Stream(device=a.device))
    doubled = torch.zeros_like(a)
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        torch.cuda._sleep(20_000_000)
        torch.mul(a, 2, out=doubled)
    return doubled - a + b
