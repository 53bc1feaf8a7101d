"""A Triton candidate's tunable parameters, found in its source, and the source rewritten for a configuration
(no model: the ``tune`` agent's search space; docs/orchestrator.md, "The tune agent").

Found by reading the source (``ast``), never by running it:

* **module constants**: an upper-case name bound at module level to a power-of-two integer
  (``BLOCK = 1024``, ``BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 32``, ``MAX_BLOCK = 4096``): block sizes and
  caps; tried at powers of two within a factor SPAN of the value found (tl.arange needs powers of two);
* **launch keywords**: an integer literal passed to a constexpr parameter at a launch site
  (``kernel[grid](..., BLOCK=256)``), the same way;
* **launch options** of every launch of each ``@triton.jit`` kernel: ``num_warps`` and ``num_stages``,
  added to the launch when absent (Triton's defaults, 4 and 3, are the starting point).

A configuration maps each parameter's name to a value; ``apply`` writes it into the source by replacing
exactly the literals found (edits from the end backwards, so positions stay valid) and appending the
options to each launch. Kernels under ``@triton.autotune`` keep their own configs and are left alone.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

SPAN = 8  # block sizes tried from value / SPAN to value * SPAN (32 -> 16..256)
MIN_BLOCK = 16  # tl.dot needs tiles of at least 16 along each dimension
MAX_BLOCK = 8192
OPTIONS = {"num_warps": (4, (1, 2, 4, 8, 16)), "num_stages": (3, (1, 2, 3, 4, 5))}  # Triton's default, values

Config = dict[str, int]


@dataclass
class Param:
    name: str  # "BLOCK_M" (a constant), "_kernel.BLOCK@34" (a launch keyword), "_kernel.num_warps"
    current: int
    values: tuple[int, ...]  # ascending; includes current
    sites: list[tuple[int, int, int, int]] = field(default_factory=list)  # (line, col, end line, end col) to replace
    inserts: list[tuple[int, int, str]] = field(default_factory=list)  # (line, col, keyword): option to add


def powers_around(value: int) -> tuple[int, ...]:
    low, high = max(MIN_BLOCK if value >= MIN_BLOCK else 1, value // SPAN), min(MAX_BLOCK, value * SPAN)
    found, v = [], 1
    while v <= high:
        if v >= low:
            found.append(v)
        v *= 2
    return tuple(found)


def _power_of_two(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 2 \
            and not node.value & (node.value - 1):
        return node.value
    return None


def _span(node: ast.AST) -> tuple[int, int, int, int]:
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset


def _jit_kernels(tree: ast.Module) -> dict[str, set[str]]:
    """Name -> constexpr parameter names, for each @triton.jit function not under @triton.autotune."""
    kernels = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        names = {ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list}
        if any(n.endswith("jit") for n in names) and not any(n.endswith("autotune") for n in names):
            kernels[node.name] = {a.arg for a in node.args.args
                                  if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}
    return kernels


def _module_constants(tree: ast.Module) -> list[Param]:
    found = []
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        pairs = (list(zip(target.elts, node.value.elts)) if isinstance(target, ast.Tuple)
                 and isinstance(node.value, ast.Tuple) and len(target.elts) == len(node.value.elts)
                 else [(target, node.value)])
        for name, value in pairs:
            number = _power_of_two(value)
            if isinstance(name, ast.Name) and name.id.isupper() and number is not None:
                found.append(Param(name.id, number, powers_around(number), sites=[_span(value)]))
    return found


def _launches(tree: ast.Module, kernels: dict[str, set[str]]) -> list[tuple[str, ast.Call]]:
    """(kernel name, call) for every ``kernel[grid](...)`` of a tunable kernel."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in kernels:
            found.append((node.func.value.id, node))
    return found


def find_params(source: str) -> list[Param]:
    """Every tunable parameter of the candidate (see the module's docstring); raises SyntaxError."""
    tree = ast.parse(source)
    kernels = _jit_kernels(tree)
    params = _module_constants(tree)
    options: dict[str, Param] = {}
    for kernel, call in _launches(tree, kernels):
        given = {k.arg: k.value for k in call.keywords if k.arg}
        for keyword, value in given.items():
            number = _power_of_two(value)
            if keyword in kernels[kernel] and number is not None:
                params.append(Param(f"{kernel}.{keyword}@{call.lineno}", number, powers_around(number),
                                    sites=[_span(value)]))
        for option, (default, values) in OPTIONS.items():
            param = options.setdefault(f"{kernel}.{option}", Param(f"{kernel}.{option}", default, values))
            value = given.get(option)
            if isinstance(value, ast.Constant) and type(value.value) is int:
                param.current = value.value
                param.values = tuple(sorted(set(values) | {value.value}))
                param.sites.append(_span(value))
            elif option not in given:
                param.inserts.append((call.end_lineno, call.end_col_offset - 1, option))
    return params + list(options.values())


def apply(source: str, params: list[Param], config: Config) -> str:
    """The source with each parameter set to ``config``'s value (missing ones keep their current value)."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def at(line: int, col: int) -> int:
        return offsets[line - 1] + len(lines[line - 1].encode()[:col].decode(errors="ignore"))

    edits = []  # (start, end, text): replace source[start:end] with text
    added: dict[int, list[str]] = {}  # position of a launch's closing parenthesis -> options to add there
    for param in params:
        value = config.get(param.name, param.current)
        for line, col, end_line, end_col in param.sites:
            edits.append((at(line, col), at(end_line, end_col), str(value)))
        if param.name in config:  # an option is added only when the configuration sets it
            for line, col, keyword in param.inserts:
                added.setdefault(at(line, col), []).append(f"{keyword}={value}")
    for spot, options in added.items():
        before = source[:spot].rstrip()
        lead = "" if before.endswith("(") else " " if before.endswith(",") else ", "  # f(), f(a,), f(a)
        edits.append((spot, spot, lead + ", ".join(options)))
    for start, end, text in sorted(edits, reverse=True):
        source = source[:start] + text + source[end:]
    return source


def space_size(params: list[Param]) -> int:
    size = 1
    for param in params:
        size *= len(param.values)
    return size


def change_between(a: Config, b: Config) -> str:
    """'BLOCK 1024 -> 8192, num_warps 4 -> 8': what differs from a to b."""
    return ", ".join(f"{k} {a[k]} -> {b[k]}" for k in b if a.get(k) != b[k]) or "the same configuration"
