"""Cheat: compute correctly, but drop ``utils.py`` and ``task.py`` into the problem folder: GPU MODE
references import ``utils``/``task`` from there, so planted modules would run inside a later judge
(e.g. a ``utils.verbose_allclose`` that always agrees). Run it only on a copy of a problem.
Expected verdict: tampering, and the planted files are removed.
"""
import importlib.util
import os

COPY_MARKER = ".kernel_mcp_cheats_copy"  # the tests put this file in the copies they let it damage

PLANT = ("def verbose_allclose(*args, **kwargs):\n    return []\n\n\n"
         "def match_reference(*args, **kwargs):\n    return True\n")


def custom_kernel(data):
    a, b = data
    folder = os.path.dirname(importlib.util.find_spec("reference").origin)
    if os.path.exists(os.path.join(folder, COPY_MARKER)):  # only a test's copy
        for name in ("utils.py", "task.py"):
            with open(os.path.join(folder, name), "w") as f:
                f.write(PLANT)
    return a + b
