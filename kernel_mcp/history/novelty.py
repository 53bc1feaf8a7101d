"""Is a candidate new? Exact and near duplicates of earlier candidates, found from the source alone (no GPU
time). An exact duplicate need not be evaluated again (its result is known); near duplicates are worth
evaluating (a changed block size is a real experiment) but many of them among the last proposals is a
stall signal (S4, mode collapse: the agent keeps proposing what it already tried).

* exact: the same Python syntax tree once comments, docstrings, formatting and local names' spelling are
  set aside (a renamed variable is the same kernel);
* near: token 5-gram Jaccard similarity >= NEAR (0.9; docs/orchestrator.md, "Near duplicates"), which catches a changed
  constant or a reordered line in an otherwise identical file. Sources that do not parse (CUDA C++, or
  Python with a syntax error) are compared by tokens only.
"""
from __future__ import annotations

import ast
import hashlib
import io
import tokenize

NEAR = 0.9  # token 5-gram Jaccard similarity at or above which two candidates are near duplicates
GRAM = 5


def structure_hash(source: str) -> str:
    """A hash of the source's syntax tree without docstrings and with local names numbered in order of
    first use; the token text itself when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return hashlib.sha256(" ".join(_tokens(source)).encode()).hexdigest()[:16]
    _Canonical().visit(tree)
    return hashlib.sha256(ast.dump(tree, annotate_fields=False).encode()).hexdigest()[:16]


class _Canonical(ast.NodeTransformer):
    """Docstrings dropped; names bound inside functions renamed v0, v1... in order of appearance."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
        for arg in node.args.args + node.args.kwonlyargs:
            arg.arg = self._local(arg.arg)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Store) or node.id in self.names:
            node.id = self._local(node.id)
        return node

    def _local(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")


def _tokens(source: str) -> list[str]:
    """Code tokens without comments and layout; a crude split when Python's tokenizer gives up."""
    try:
        skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                tokenize.ENCODING, tokenize.ENDMARKER}
        return [t.string for t in tokenize.tokenize(io.BytesIO(source.encode()).readline) if t.type not in skip]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source.split()


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the two sources' token 5-gram sets (1.0: the same token stream)."""
    grams_a, grams_b = _grams(a), _grams(b)
    if not grams_a and not grams_b:
        return 1.0
    return len(grams_a & grams_b) / len(grams_a | grams_b)


def _grams(source: str) -> set[tuple[str, ...]]:
    tokens = _tokens(source)
    return {tuple(tokens[i:i + GRAM]) for i in range(max(1, len(tokens) - GRAM + 1))}


def duplicate_of(source: str, earlier: list[str]) -> int | None:
    """Index of the most recent earlier source this one duplicates (exactly or nearly), else None."""
    mine = structure_hash(source)
    for index in range(len(earlier) - 1, -1, -1):
        if structure_hash(earlier[index]) == mine or similarity(source, earlier[index]) >= NEAR:
            return index
    return None
