"""Cheat/leak through compile (found on 2026-12-01, run as an ordinary user: the compile step's candidate
read the API keys from /proc/<pid>/environ of the server and of its MCP client, and they reached results,
workspace files and the compile cache). Looks for the test's fake key where secret_env.py does (its own
environment, /proc/self/environ, its ancestors' environ) while `compile` records its launches, and leaves
a marker file if it found it (and one that it ran, so that the test cannot pass by silence). An honest
Triton kernel otherwise.
"""
import os

from _cheat_util import STATE_DIR, write_atomic
from _triton_add import add
from secret_env import _visible

os.makedirs(STATE_DIR, exist_ok=True)
write_atomic(os.path.join(STATE_DIR, "compile_secret_env.ran"), "imported\n")
if _visible():
    write_atomic(os.path.join(STATE_DIR, "compile_secret_env.seen"), "the caller's key was readable\n")



def custom_kernel(data):
    return add(*data)
