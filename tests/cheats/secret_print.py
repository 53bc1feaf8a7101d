"""Cheat/leak: print, and raise with, a secret the caller holds (written into this file, as if it had been
stolen): nothing of it may reach the result, its log tail, a compile result or the cache (the runner
redacts every result: worker/runners/redact.py; the tests set the same value as the caller's API key).
Launches a Triton kernel first, so that `compile` runs it too.
"""
import sys

from _triton_add import add

SECRET = "sk-test-secret-kernel-mcp"
print(f"stolen key: {SECRET}")
print(f"stolen key again: {SECRET}", file=sys.stderr)



def custom_kernel(data):
    add(*data)
    raise RuntimeError(f"the key is {SECRET}")
