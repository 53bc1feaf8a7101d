"""Honest: float32 throughout, the reduction split in two halves summed afterwards (another order)."""


def custom_kernel(data):
    a, b = data
    half = a.shape[1] // 2
    return a[:, :half] @ b[:half] + a[:, half:] @ b[half:]
