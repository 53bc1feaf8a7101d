"""Configurations worth timing first, for kernels of a kind recognised by what their parameters are called
(the tune agent's prior knowledge; no model).

A matrix multiply tiled into BLOCK_M x BLOCK_N output tiles, stepping BLOCK_K along the reduction, is the
best-studied Triton kernel. Its fast configurations on recent NVIDIA GPUs sit in a small corner of the
space: output tiles of 64-256 a side, K steps of 32-64, 4-8 warps, 3-4 pipeline stages (the region
Triton's matmul tutorial autotunes over, and torch Inductor's mm heuristics draw from). A spread sample
of 16 out of the bundled matmul's 3,125 configurations found 0.40x of cuBLAS in 320 s on an H200
(BENCHMARKS.md, 2026-12-02); configurations from this corner, written by hand the same day, gave
0.77-0.90x.

Priors only add entries to the search's first round: each is timed and checked like any other draw and
wins only by being measured faster; one outside a parameter's searched values is left out, one that does
not fit the device (shared memory, registers) fails its measurement and is never chosen.
"""
from __future__ import annotations

import re

from kernel_mcp.agent.tune.params import Config, Param

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), the likeliest first: the large tiles fill an H100/H200
# class GPU's tensor cores at the published problem sizes (thousands a side); the smaller ones are there for
# smaller matrices and for GPUs with less shared memory per block.
MATMUL = (
    (128, 256, 64, 8, 3),
    (256, 128, 64, 8, 3),
    (128, 128, 64, 4, 4),
    (64, 256, 32, 4, 4),
    (128, 128, 32, 4, 4),
    (128, 64, 64, 4, 4),
    (64, 128, 64, 4, 4),
    (64, 64, 32, 4, 4),
)

# a tile dimension's parameter: BLOCK_M, BLOCK_SIZE_M, TILE_M, BLK_M, BM (a module constant or a launch
# keyword "kernel.BLOCK_M@41": the part after the last dot, without the line)
_TILE = re.compile(r"(?:(?:BLOCK|TILE|BLK)_?(?:SIZE_)?|B)([MNK])")


def _base(name: str) -> str:
    return name.rsplit(".", 1)[-1].split("@", 1)[0]


def matmul_roles(params: list[Param]) -> dict[str, list[Param]] | None:
    """"M", "N", "K" -> the one parameter naming that tile dimension, "num_warps" and "num_stages" -> every
    launch option of that name (possibly none); None unless each of M, N and K is named exactly once."""
    tiles: dict[str, list[Param]] = {"M": [], "N": [], "K": []}
    for param in params:
        found = _TILE.fullmatch(_base(param.name))
        if found:
            tiles[found.group(1)].append(param)
    if any(len(found) != 1 for found in tiles.values()):
        return None
    options = {o: [p for p in params if _base(p.name) == o] for o in ("num_warps", "num_stages")}
    return {**tiles, **options}


def seeds(params: list[Param]) -> list[Config]:
    """The priors that apply to ``params`` as configurations (each starting from the parameters' current
    values), likeliest first, without repeats; empty for a kernel of no recognised kind."""
    roles = matmul_roles(params)
    if roles is None:
        return []
    found: list[Config] = []
    for values in MATMUL:
        config = {p.name: p.current for p in params}
        for role, value in zip(("M", "N", "K", "num_warps", "num_stages"), values):
            for param in roles[role]:
                config[param.name] = value
        fits = all(config[p.name] in p.values for p in params)
        if fits and config not in found:
            found.append(config)
    return found
