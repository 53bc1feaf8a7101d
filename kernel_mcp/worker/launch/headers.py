"""Build precompiled torch headers for candidates' load_inline builds (worker/isolation/header_cache.py says why
and how they stay safe). Trusted code only: the caller of a batch, before and while it judges.

One entry per ``extra_cflags`` set: torch writes the ninja file it would build ``main.cpp`` with (its build step
stopped before anything compiles), the compiler line is read from it, and the header is compiled with exactly
those options. An entry is kept only if GCC then takes it for a ``main.cpp`` as load_inline writes it (``-H``
marks a used precompiled header with ``!``); anything that fails leaves no entry, and builds go on as before.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kernel_mcp.worker.isolation import header_cache
from kernel_mcp.worker.isolation.sandbox import harness_env
from kernel_mcp.worker.launch.toolchain import run_tool

KEEP_ENTRIES = 4  # of one torch version; an entry is about 0.75 GB (GCC's image of torch/extension.h)
BUILD_TIMEOUT_S = 600.0

# torch writes build.ninja, then calls _run_ninja_build: stop there (nothing compiles, nothing loads)
_PROBE = """
import json, sys
from torch.utils import cpp_extension
class Written(Exception):
    pass
def stop(*args, **kwargs):
    raise Written
cpp_extension._run_ninja_build = stop
flags, with_cuda, folder = json.loads(sys.argv[1]), sys.argv[2] == "1", sys.argv[3]
try:
    cpp_extension.load_inline("kmcp_header_probe", cpp_sources="", extra_cflags=flags, with_cuda=with_cuda,
                              build_directory=folder)
except Written:
    pass
"""


def build_headers(flag_sets: list[tuple[str, ...]], with_cuda: bool) -> list[Path]:
    """An entry for each flag set that lacks one (already there: kept as it is); returns the entries there now."""
    import torch  # the caller's torch: the same installation the candidate processes import

    if getattr(torch.version, "hip", None):
        return []  # ROCm builds hipify their sources first (header_cache.install leaves them alone)
    folders = [header_cache.entry(torch.__version__, flags, with_cuda) for flags in flag_sets[:KEEP_ENTRIES]]
    missing = [(flags, folder) for flags, folder in zip(flag_sets, folders)
               if not (folder / (header_cache.HEADER + ".gch")).is_file()]
    # side by side: each is one compiler process, and the builds that start before an entry exists do without it
    # (three one after another took 144.5 s on an H100 host, twenty-fifth session)
    with ThreadPoolExecutor(max(1, len(missing))) as pool:
        list(pool.map(lambda pair: _build_entry(list(pair[0]), with_cuda, pair[1]), missing))
    made = [folder for folder in folders if (folder / (header_cache.HEADER + ".gch")).is_file()]
    _prune(header_cache.stack_folder(torch.__version__), keep=set(made))
    return made


def _build_entry(flags: list[str], with_cuda: bool, folder: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        compile_line = _torch_compile_line(flags, with_cuda, work / "probe")
        if compile_line is None:
            return
        header = _header_path()
        target = work / "entry" / (header_cache.HEADER + ".gch")
        target.parent.mkdir(parents=True)
        if not run_tool([*compile_line, "-x", "c++-header", header, "-o", target], timeout_s=BUILD_TIMEOUT_S).ok:
            return
        if _taken(compile_line, work / "entry", work / "probe"):
            os.rename(work / "entry", folder)  # whole or not at all; a concurrent builder's entry stays
    except OSError:
        return
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _torch_compile_line(flags: list[str], with_cuda: bool, probe: Path) -> list[str] | None:
    """The compiler and options torch would build ``main.cpp`` with, minus the extension's name and the
    source/output/dependency arguments (None where torch's ninja file cannot be had or read)."""
    probe.mkdir(parents=True)
    ran = run_tool([sys.executable, "-c", _PROBE, json.dumps(flags), "1" if with_cuda else "0", str(probe)],
                   timeout_s=120, env=harness_env())
    ninja = probe / "build.ninja"
    if not ran.ok or not ninja.is_file():
        return None
    values = ninja_variables(ninja)
    if "cxx" not in values or "cflags" not in values:
        return None
    options = [o for o in shlex.split(values["cflags"]) + shlex.split(values.get("post_cflags", ""))
               if not o.startswith("-DTORCH_EXTENSION_NAME=")]
    return [*shlex.split(values["cxx"]), *options]


def ninja_variables(ninja: Path) -> dict[str, str]:
    """The top-level variables of a ninja file torch wrote (``cxx``, ``cflags``, ``post_cflags``...)."""
    return dict(line.split(" = ", 1) for line in ninja.read_text().splitlines()
                if " = " in line and not line.startswith(" "))


def _taken(compile_line: list[str], entry: Path, probe: Path) -> bool:
    """Whether GCC uses the entry for a main.cpp as load_inline writes it (an extension name defined too)."""
    source = probe / "check.cpp"
    source.write_text(f"#include <{header_cache.HEADER}>\n")
    ran = run_tool([*compile_line, "-DTORCH_EXTENSION_NAME=kmcp_check", f"-I{entry}", "-H", "-fsyntax-only",
                    source], timeout_s=BUILD_TIMEOUT_S)
    return ran.ok and any(line.startswith("! ") and line.endswith(".gch") for line in ran.stderr.splitlines())


def _header_path() -> str:
    from torch.utils.cpp_extension import include_paths
    return next(str(Path(p) / header_cache.HEADER) for p in include_paths()
                if (Path(p) / header_cache.HEADER).is_file())


def _prune(stack: Path, keep: set[Path]) -> None:
    """At most KEEP_ENTRIES entries of this torch (the least recently built go first), none of another."""
    try:
        others = [p for p in header_cache.store().iterdir() if p.is_dir() and p != stack]
        entries = sorted((p for p in stack.iterdir() if p.is_dir() and not p.name.startswith(".") and p not in keep),
                         key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in others + entries[max(0, KEEP_ENTRIES - len(keep)):]:
        shutil.rmtree(old, ignore_errors=True)
