"""Class: a problem's own NaN-blind check decides alone. All NaN: max(abs(NaN - ref)) > tol is False, so
GPU MODE's own check_implementation passes it (tests/fixtures/attacks/nan_blind_check)."""
import torch


def custom_kernel(data):
    return torch.full_like(data[0], float("nan"))
