"""Arithmetic expressions over a test's parameters, e.g. ``"2*m*n*k"`` in task.yml.

Only numbers, parameter names, + - * / // % **, parentheses and min/max/abs/sqrt/ceil/log2 are allowed,
so a task file can never run code through an expression.
"""
from __future__ import annotations

import ast
import math
import operator
from typing import Any

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_FUNCS = {"min": min, "max": max, "abs": abs, "sqrt": math.sqrt, "ceil": math.ceil, "log2": math.log2}


class ExprError(ValueError):
    pass


def check_syntax(text: str) -> None:
    """Raise ExprError if ``text`` is not an allowed expression (names are not resolved)."""
    _walk(_parse(text), None)


def evaluate(text: str | int | float, params: dict[str, Any]) -> float:
    """Value of ``text`` with the test's ``params`` bound; plain numbers pass through."""
    if isinstance(text, (int, float)):
        return float(text)
    return float(_walk(_parse(text), params))


def _parse(text: str) -> ast.AST:
    try:
        return ast.parse(str(text), mode="eval").body
    except SyntaxError as exc:
        raise ExprError(f"not an expression: {text!r} ({exc.msg})") from None


def _walk(node: ast.AST, params: dict[str, Any] | None) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name):
        if params is None:
            return 1
        if node.id not in params:
            raise ExprError(f"unknown parameter {node.id!r} (known: {', '.join(sorted(params))})")
        return params[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_walk(node.left, params), _walk(node.right, params))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_walk(node.operand, params))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS \
            and not node.keywords:
        return _FUNCS[node.func.id](*(_walk(a, params) for a in node.args))
    raise ExprError(f"not allowed in an expression: {ast.unparse(node)!r}")
