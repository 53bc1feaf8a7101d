"""Precompiled torch headers for candidates' load_inline builds: most of a KernelBench candidate's C++ build is
parsing ``torch/extension.h`` (about 15 of the 22 CPU-seconds of its ``main.cpp``, measured on this project's CI
machine; BENCHMARKS.md), the same header with the same flags for every candidate. GCC can load that parse from a
precompiled header (``.gch``) instead.

How it stays safe and exact:

* **Who writes.** Only trusted code (worker/launch/headers.py, for ``kernel-mcp judge``) builds an entry, with the
  flags torch itself would use for that ``extra_cflags`` (read from the ninja file torch writes), into
  ``<cache>/headers/<torch version>/<key>/torch/extension.h.gch``. Processes that run candidate code see that
  folder read-only where they get a mount namespace (sandbox._enter_namespaces seals every file system).
  Without namespaces a candidate could write it, as it could every file of its user, the kernel build store
  included (worker/isolation/kernel_cache.py says the same); the check then says ``no_pid_namespace``.
* **Who reads.** The candidate host wraps ``load_inline`` (``install``): a call whose ``extra_cflags`` and CUDA
  use match an entry gets that entry's folder first on its include path, nothing else changed (unless its build
  was kept from before the entry existed: ``kept_without``). GCC takes a ``.gch`` only where the compiler, its
  options and every macro the header uses are the same as when it was built, and otherwise reads the header as
  always, so an entry can make a build faster, never different.
* **What is built.** The flag sets come from the candidates' sources, read as text (``flag_sets``), and only
  flags on an allowlist: a trusted compiler never runs with an option a candidate chose beyond these.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shlex
from collections import Counter
from pathlib import Path

from kernel_mcp.files import cache_root

HEADER = "torch/extension.h"
# options that change how a header compiles and are common in published candidates; anything else (a plugin,
# an output path, a specs file) keeps its candidate out of the precompiled path
ALLOWED_FLAG = re.compile(r"-O[0-3s]|-std=(c|gnu)\+\+(14|17|20)|-DNDEBUG|-ffast-math|-funroll-loops|-w|-Wall"
                          r"|-march=native|-fopenmp")
_CFLAGS_LIST = re.compile(r"extra_cflags\s*=\s*(\[[^\]]*\])")


def store() -> Path:
    return cache_root() / "headers"


def stack_folder(torch_version: str) -> Path:
    """Entries of one torch build (its headers); the compiler is checked by GCC itself."""
    return store() / re.sub(r"[^A-Za-z0-9._+-]", "_", torch_version)


def normalized(extra_cflags) -> tuple[str, ...]:
    """``extra_cflags`` as torch uses them: each stripped, empty ones dropped (``[""]`` compiles as ``[]``)."""
    if isinstance(extra_cflags, str):
        extra_cflags = [extra_cflags]
    return tuple(f.strip() for f in (extra_cflags or []) if f and f.strip())


def entry_key(extra_cflags, with_cuda: bool) -> str:
    flags = json.dumps([list(normalized(extra_cflags)), bool(with_cuda)])
    return hashlib.sha256(flags.encode()).hexdigest()[:16]


def entry(torch_version: str, extra_cflags, with_cuda: bool) -> Path:
    """The folder an entry's ``torch/extension.h.gch`` lives in (the include path a build gets)."""
    return stack_folder(torch_version) / entry_key(extra_cflags, with_cuda)


def flag_sets(sources: list[str], at_least: int = 4) -> list[tuple[str, ...]]:
    """The ``extra_cflags`` worth an entry: written literally in at least ``at_least`` of these load_inline
    sources (an entry costs about as much CPU as it saves in three builds), allowlisted flags only."""
    seen: Counter = Counter()
    for text in sources:
        if "load_inline" not in text:
            continue
        written = _CFLAGS_LIST.findall(text)
        if not written and "extra_cflags" in text:
            continue  # flags made at run time: unknown here
        for literal in (written[:1] or ["[]"]):  # the first call's flags; none written: torch's defaults
            try:
                flags = normalized(ast.literal_eval(literal))
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if all(isinstance(f, str) and ALLOWED_FLAG.fullmatch(f) for f in flags):
                seen[flags] += 1
    return [flags for flags, n in seen.most_common() if n >= at_least]


def use_for(candidate: Path) -> None:
    """``install`` for a candidate that calls load_inline (others never pay for importing cpp_extension)."""
    try:
        if "load_inline" in candidate.read_text(errors="replace"):
            install()
    except Exception:  # noqa: BLE001  (a faster build is all this offers: without it the build is as before)
        pass


def install() -> None:
    """In a process that runs candidate code, before the candidate is imported: its ``load_inline`` calls use a
    matching entry where one exists. Calls that name include paths of their own are left alone (a header of
    theirs could shadow one the entry was built from)."""
    import inspect

    import torch
    from torch.utils import cpp_extension

    if getattr(torch.version, "hip", None):
        return  # ROCm builds hipify their sources first; not measured there
    original = cpp_extension.load_inline
    signature = inspect.signature(original)

    def load_inline(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)  # torch says what is wrong with the call
        given = bound.arguments
        with_cuda = given.get("with_cuda")
        with_cuda = bool(given.get("cuda_sources")) if with_cuda is None else with_cuda
        folder = entry(torch.__version__, given.get("extra_cflags"), with_cuda)
        if not given.get("extra_include_paths") and (folder / (HEADER + ".gch")).is_file() \
                and not kept_without(given.get("name"), given.get("build_directory"), folder):
            given["extra_include_paths"] = [str(folder)]
        return original(*bound.args, **bound.kwargs)

    load_inline.__wrapped__ = original
    cpp_extension.load_inline = load_inline


def kept_without(name, build_directory, folder: Path) -> bool:
    """Is a build of this extension kept from before the entry existed (a batch's builds ahead start beside the
    entry's own, not after it), made at this very path? Then the entry is left out: with the flags that build was
    made with, torch loads it as it is, where another include path would build it all again. A build kept from
    another path (no mount namespace: kernel_cache.py) is built again anyway, and takes the entry."""
    try:
        from torch.utils import cpp_extension
        where = os.path.abspath(build_directory or cpp_extension._get_build_directory(str(name), verbose=False))
        made_with = (Path(where) / "build.ninja").read_text(errors="replace")
    except Exception:  # noqa: BLE001  (nothing kept, or a torch without this helper: the entry is used)
        return False
    # torch writes the sources' absolute paths, and an include path absolute and shell-quoted
    return where in made_with and f"-I{shlex.quote(os.path.abspath(folder))}" not in made_with
