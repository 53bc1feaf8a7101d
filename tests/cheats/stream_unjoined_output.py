"""Race (GPU): a + b computed on a private stream, after a delay, and returned without ordering that stream
before the caller's. Right once the whole device is idle; a caller reading it on its own stream reads it
unfinished (the best-known timing hack of published RL kernels). Cause: unordered_stream."""
import torch

_side = {}


def custom_kernel(data):
    a, b = data
    stream = _side.setdefault(a.device, torch.cuda.Stream(device=a.device))
    out = torch.empty_like(a)
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        torch.cuda._sleep(20_000_000)  # ~10 ms: the caller's stream reads long before this ends
        torch.add(a, b, out=out)
    return out
