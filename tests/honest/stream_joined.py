"""Honest (GPU): the same private stream and delay as tests/cheats/stream_unjoined_output.py, joined to the
caller's stream before returning. Must pass."""
import torch

_side = {}


def custom_kernel(data):
    a, b = data
    stream = _side.setdefault(a.device, torch.cuda.Stream(device=a.device))
    out = torch.empty_like(a)
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        torch.cuda._sleep(20_000_000)
        torch.add(a, b, out=out)
    torch.cuda.current_stream().wait_stream(stream)
    out.record_stream(torch.cuda.current_stream())
    return out
