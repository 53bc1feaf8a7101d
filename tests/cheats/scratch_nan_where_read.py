"""Class: roles decided on the first test alone. Test 0 does not read the bias, so it was taken for scratch
and poisoned on every test: where the bias is used the expected output was NaN, and NaN matched NaN
(tests/fixtures/attacks/bias_some_tests)."""
import torch


def custom_kernel(data):
    x, bias, use_bias = data
    return torch.full_like(x, float("nan")) if use_bias else x * 2
