"""Honest control: captures its kernel in a CUDA graph per shape once, then copies each call's inputs into
the graph's static buffers, replays it and returns a copy of the static output."""
import torch

_graphs = {}


def custom_kernel(data):
    a, b = data
    key = (a.shape, a.dtype)
    if key not in _graphs:
        static_a, static_b = a.clone(), b.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            static_out = static_a + static_b
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = static_a + static_b
        _graphs[key] = (graph, static_a, static_b, static_out)
    graph, static_a, static_b, static_out = _graphs[key]
    static_a.copy_(a)
    static_b.copy_(b)
    graph.replay()
    return static_out.clone()
