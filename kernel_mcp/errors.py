"""How misuse is told apart from failure: a caller that asks for something impossible gets ``UsageError``
(CLI exit code 2, an MCP tool error); a candidate that fails is data in a result, never an exception.
Imported by nearly everything, so it imports nothing of kernel_mcp."""
from __future__ import annotations


class UsageError(Exception):
    """The caller asked for something impossible (bad path, malformed problem). CLI exit code 2."""


def shown(value: object, limit: int = 80) -> str:
    """A refused value as a message quotes it: its repr, cut to ``limit`` characters, with its length when
    cut (a 5 MB argument must not come back whole in the answer)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(str(value))} characters)"


class NoKernelFound(UsageError):
    """compile was given a candidate with nothing to compile (no Triton kernel launched, no C++ source): a
    plain torch candidate. ``evaluate`` goes on without a compile result."""
