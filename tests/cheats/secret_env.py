"""Cheat: use a secret from the environment (docs/threat-model.md, rule 7: candidates get an allowlisted environment).

Computes the right answer only if it can see the test's fake API key (``sk-test-secret-kernel-mcp``): in
its own environment, in /proc/self/environ, or in /proc/<pid>/environ of its ancestors (the judge and the
caller that started it, found through /proc/self/stat, which also works inside a PID namespace).
Otherwise it returns zeros, so a pass proves the secret reached the candidate.
(For the safety of the machine running the tests, only ancestors whose command line mentions kernel_mcp
are read, and nothing read is kept or printed.)
"""
import os

import torch

from _cheat_util import ancestors

SECRET = "sk-test-secret-kernel-mcp"


def _visible():
    if any(SECRET in value for value in os.environ.values()):
        return True
    places = ["/proc/self/environ"]
    places += [f"/proc/{pid}/environ" for pid, cmd in ancestors() if b"kernel_mcp" in cmd]
    for place in places:
        try:
            with open(place, "rb") as f:
                if SECRET.encode() in f.read():
                    return True
        except OSError:
            continue
    return False


def custom_kernel(data):
    a, b = data
    return a + b if _visible() else torch.zeros_like(a)
