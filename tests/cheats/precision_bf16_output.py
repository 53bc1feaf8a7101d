"""Class: a float64 reference lets the candidate choose its precision. The reference returns float64 row
sums of float32 inputs; this returns them rounded to bfloat16 (half the bytes written), which was accepted
and held to bf16's own rounding (tests/fixtures/attacks/rowsum_float64)."""


def custom_kernel(data):
    return data[0].sum(dim=-1).bfloat16()
