"""Compile recorded Triton launches for each target, with Triton's own specialization rules.

Imports the candidate (so it runs in its own process), rebuilds each launch's arguments as stand-ins that
carry only a dtype and an alignment, binds them as Triton's launcher would for *that target's* backend,
and calls ``triton.compile``. Writes the artifacts to the request's out_dir. Runs in a step host
(worker/steps/main.py).
"""
from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any

from kernel_mcp.hardware.targets import parse
from kernel_mcp.worker.host.load import import_candidate

ARTIFACTS = {"nvidia": ("ptx", "cubin", "ttgir"), "amd": ("amdgcn", "hsaco", "ttgir")}


class Pointer:
    """What Triton's specializer reads from a tensor argument: its dtype and the address alignment."""

    def __init__(self, dtype: Any, aligned: bool):
        self.dtype, self._address = dtype, 0 if aligned else 8

    def data_ptr(self) -> int:
        return self._address


def decode(value: Any) -> Any:
    import torch
    import triton.language as tl
    if not isinstance(value, dict):
        return value
    if "tensor" in value:
        return Pointer(getattr(torch, value["tensor"]), value["aligned"])
    if "constexpr" in value:
        return tl.constexpr(decode(value["constexpr"]))
    if "dtype" in value:
        return getattr(torch, value["dtype"])
    if "tl_dtype" in value:
        return getattr(tl, value["tl_dtype"])
    raise ValueError(f"cannot rebuild a launch argument of type {value.get('unsupported')}")


def find_kernel(launch: dict) -> Any:
    """The JITFunction behind a recorded launch (unwrapping autotune/heuristics decorators)."""
    from triton.runtime.jit import JITFunction
    obj: Any = sys.modules[launch["module"]]
    for part in launch["qualname"].split("."):
        obj = getattr(obj, part)
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn"):
        obj = obj.fn
    if not isinstance(obj, JITFunction):
        raise TypeError(f"{launch['qualname']} is not a @triton.jit kernel here")
    return obj


def compile_one(kernel: Any, launch: dict, target: Any) -> Any:
    import triton
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature
    backend = make_backend(target)
    binder = create_function_from_signature(kernel.signature, kernel.params, backend)
    args = [decode(a) for a in launch["args"]]
    kwargs = {k: decode(v) for k, v in launch["kwargs"].items()}
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = kernel._pack_args(backend, kwargs, bound, specialization, options)
    compiled = triton.compile(ASTSource(kernel, signature, constexprs, attrs), target=target,
                              options=options.__dict__)
    names = list(signature)
    constants = {names[path[0]]: _plain(value) for path, value in constexprs.items() if len(path) == 1}
    return compiled, signature, constants


def _plain(value: Any) -> Any:
    value = getattr(value, "value", value)  # tl.constexpr
    return value if isinstance(value, (bool, int, float, str)) or value is None else str(value)


def error_location(exc: BaseException, kernel: Any) -> tuple[str, int]:
    """(file, line) of a Triton compilation error in the candidate's own source, when it says where."""
    node = getattr(exc, "node", None)
    line = getattr(node, "lineno", None)
    if line is None or kernel is None:
        return "", 0
    import inspect
    lines, start = inspect.getsourcelines(kernel.fn)  # start is the first decorator's line
    def_offset = next((i for i, text in enumerate(lines) if text.lstrip().startswith("def ")), 0)
    return inspect.getsourcefile(kernel.fn) or "", start + def_offset + line - 1  # Triton counts from the def


def build(launch: dict, index: int, target_spec: dict, out_dir: Path) -> dict:
    target = parse(target_spec)
    entry = {"kernel": launch["qualname"], "launch": index, "target": target.name, "ok": False}
    kernel = None
    try:
        kernel = find_kernel(launch)
        compiled, signature, constants = compile_one(kernel, launch, target.triton())
    except Exception as exc:  # noqa: BLE001  (a compile error is a result, not a crash)
        entry["file"], entry["line"] = error_location(exc, kernel)
        entry["error"] = "".join(traceback.format_exception_only(exc))[-4000:]
        return entry
    md = compiled.metadata
    entry.update(ok=True, name=md.name, num_warps=md.num_warps, num_stages=md.num_stages, shared=md.shared,
                 warp_size=md.warp_size, signature={k: str(v) for k, v in signature.items()}, constants=constants,
                 artifacts={})
    for kind in ARTIFACTS[target.vendor]:
        if kind in compiled.asm:
            path = out_dir / f"{index}-{target.name}-{md.name}.{kind}"
            data = compiled.asm[kind]
            path.write_bytes(data if isinstance(data, bytes) else data.encode())
            entry["artifacts"][kind] = path.name  # a name in out_dir: the trusted side moves the files
    return entry


def run(request) -> list[dict]:
    """The build step (a BuildRequest): every recorded launch for every target."""
    out_dir = Path(request.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    import_candidate(Path(request.candidate), request.problem_dirs)
    return [build(launch, i, target, out_dir) for i, launch in enumerate(request.launches)
            for target in request.targets]
