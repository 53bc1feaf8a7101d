"""Honest: float32 row sums (summed in float32, in two halves) for a float64 reference of float32 inputs."""


def custom_kernel(data):
    x = data[0]
    half = x.shape[1] // 2
    return x[:, :half].sum(dim=-1) + x[:, half:].sum(dim=-1)
