"""Which device a request means: a cheap guess before torch is imported (so candidate hosts can start
booting at once), and the resolution once it is (in the judge, which reports it to the caller)."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING

# imports inside functions: torch only when a device is resolved (the cheap guess must not import it)

if TYPE_CHECKING:
    from kernel_mcp.worker.protocol import Device  # imported by resolve(): guess_kind runs before pydantic is

_HIDDEN = ("", "-1", "none", "void")  # CUDA_VISIBLE_DEVICES values that hide every GPU


def guess_kind(requested: str) -> str:
    """"cpu" or "cuda" for a request, without importing torch: the device nodes of a driver, the visibility
    variables, and whether the installed torch was built for CUDA or ROCm (its version.py). A wrong guess
    costs only a restarted host."""
    if requested.startswith("cuda"):
        return "cuda"
    if requested == "cpu":
        return "cpu"
    for var in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        if os.environ.get(var, "unset").strip().lower() in _HIDDEN:
            return "cpu"
    if not (Path("/dev/nvidiactl").exists() or Path("/dev/kfd").exists()):
        return "cpu"
    spec = importlib.util.find_spec("torch")
    version = Path(spec.origin).parent / "version.py" if spec and spec.origin else None
    try:
        text = version.read_text() if version else ""
    except OSError:
        text = ""
    built_for_gpu = any(line.startswith(("cuda", "hip")) and "None" not in line
                        for line in text.splitlines() if "=" in line)
    return "cuda" if built_for_gpu else "cpu"


def default_shapes(requested: str) -> str:
    """The shapes a timing run uses unless told: the problem's small test shapes on a CPU (its benchmark
    shapes take minutes there), the benchmark shapes on a GPU."""
    return "tests" if guess_kind(requested) == "cpu" else "benchmarks"


def resolve(requested: str) -> tuple[Device | None, str]:
    """(the device, "") or (None, why not). Imports torch."""
    import torch

    from kernel_mcp.worker.protocol import CPU, Device
    if requested == "cpu":
        return CPU, ""
    if not torch.cuda.is_available():
        if requested == "auto":
            return CPU, ""
        return None, (f"--device {requested} asked for, but torch {torch.__version__} sees no CUDA/ROCm device "
                      "here; use --device cpu (or auto)")
    index = int(requested.split(":")[1]) if ":" in requested else 0
    if index >= torch.cuda.device_count():
        return None, f"--device {requested}: torch sees {torch.cuda.device_count()} GPU(s) (cuda:0 ...)"
    props = torch.cuda.get_device_properties(index)
    return Device(kind="cuda", index=index, vendor="amd" if getattr(torch.version, "hip", None) else "nvidia",
                  name=props.name, uuid=str(getattr(props, "uuid", "") or ""),
                  total_memory_bytes=int(props.total_memory)), ""
