"""Where a result came from (issue 39): the device and the software stack, read in the judge, which has the
device and torch in hand. The stack is read once per judge process; the clocks at the end of each run.
Nothing here starts a process: a compiler's version is read from the toolkit's own version.json."""
from __future__ import annotations

import functools
import json
import os
import platform
from pathlib import Path

import torch

from kernel_mcp import __version__
from kernel_mcp.reproducibility import Provenance
from kernel_mcp.worker import nvml
from kernel_mcp.worker.protocol import Device


def provenance_of(device: Device) -> Provenance:
    """The stack that ran on ``device``, with its clocks now."""
    return _stack(device).model_copy(update={"clocks_mhz": nvml.clocks_mhz(device)})


@functools.cache
def _stack(device: Device) -> Provenance:
    return Provenance(device=device.name or ("cpu" if not device.is_gpu else ""), device_uuid=device.uuid,
                      driver=nvml.driver_version() if device.vendor == "nvidia" else "",
                      cuda=torch.version.cuda or "", rocm=getattr(torch.version, "hip", None) or "",
                      toolkit=toolkit_version(), torch=torch.__version__, triton=_triton_version(),
                      kernel_mcp=__version__, python=platform.python_version())


def _triton_version() -> str:
    try:
        import triton
    except ImportError:
        return ""
    return triton.__version__


def toolkit_version() -> str:
    """The CUDA toolkit's version from its version.json (CUDA 11.1 and later write one), found where torch's
    extension builds find nvcc: $CUDA_HOME, else /usr/local/cuda; "" when there is none."""
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if not home:
            continue
        try:
            return str(json.loads((Path(home) / "version.json").read_text())["cuda"]["version"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return ""
