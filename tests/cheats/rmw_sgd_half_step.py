"""Class: read-modify-write buffers. Updates half of p (the other half left as it came)."""


def custom_kernel(data):
    p, g = data
    half = p.shape[0] // 2
    p[:half].add_(g[:half], alpha=-0.1)
