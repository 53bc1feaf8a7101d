import pytest

from kernel_mcp import expr


def test_arithmetic_over_params():
    assert expr.evaluate("2*m*n*k", {"m": 2, "n": 3, "k": 4}) == 48
    assert expr.evaluate("max(a, b) // 2 + sqrt(16)", {"a": 3, "b": 9}) == 8
    assert expr.evaluate(7, {}) == 7.0


@pytest.mark.parametrize("text", ["__import__('os')", "m.__class__", "open('x')", "[1, 2]", "lambda: 1", "m if m else 1"])
def test_refuses_anything_but_arithmetic(text):
    with pytest.raises(expr.ExprError):
        expr.evaluate(text, {"m": 1})


def test_unknown_parameter_is_named():
    with pytest.raises(expr.ExprError, match="'q'"):
        expr.evaluate("q*2", {"m": 1})
