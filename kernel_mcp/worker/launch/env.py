"""How a judge process is started, whether exec'd (judge.py here) or forked from a fork server that was started
the same way (fork_client.py): its boot command, its ``sys.path`` and its environment."""
from __future__ import annotations

import sys
from pathlib import Path

from kernel_mcp.files import CACHE_VAR, cache_root
from kernel_mcp.worker.isolation import sandbox

# The judge starts isolated (-I: no PYTHON* variables, no user site, no cwd on sys.path) and without the
# site module (-S: no sitecustomize, no .pth code), with this process's sys.path given explicitly. A file
# planted in site-packages or the working folder therefore cannot run inside the judge.
# Its arguments: that sys.path, the fd of its result pipe, and (optional) the device asked for, which it
# needs before its boot line (host_factory.start: whether its hosts will run Triton on a GPU).
JUDGE_BOOT = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
              "from kernel_mcp.worker.judge.start import main; main(int(sys.argv[2]), *sys.argv[3:4])")


def judge_sys_path() -> list[str]:
    return [sandbox.PACKAGE_ROOT] + [str(Path(p).resolve()) for p in sys.path if p and Path(p).is_dir()]


def judge_env() -> dict[str, str]:
    # the judge needs no secrets either, and passes none on; it writes no .pyc (the guard treats new ones
    # as planted); its build caches are private temporary folders it makes itself (judge.private_caches)
    return sandbox.harness_env(PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", **{CACHE_VAR: str(cache_root())})
