"""What a candidate's call may leave behind in its process to run code after the clock stops
(docs/threat-model.md, rule 9).

Once ``custom_kernel`` returns, the harness still runs Python and torch in the candidate's process: the
output's snapshot and digest, the reply. Code the candidate left in place could run there, off the clock,
and finish or fake the answer: a profile or trace hook (``sys.setprofile``, ``sys.settrace``, a
``sys.monitoring`` tool), a torch dispatch or function mode still pushed, dispatch keys forced on, or a
kernel of its own registered for an op the snapshot uses (``torch.library``). ``state()`` is read right
after the call returns, inside the timed region (only C functions, bound before the candidate was
imported: a hook that hides itself at that moment has run its last code on the clock), and ``left()``
names what it finds; the judge fails such a call. Threads that keep running are the judge's to catch: the
output's digest (``tensors.digest``) is taken right after the call, before its snapshot is copied and
sent, and the judge copies the snapshot while the candidate's processes are stopped and compares the
digests: an answer written into it later fails.
"""
from __future__ import annotations

import sys
from typing import Any

import torch

from kernel_mcp.worker.tensors import digest

_gettrace, _getprofile = sys.gettrace, sys.getprofile
_dispatch_depth = torch._C._len_torch_dispatch_stack
_function_depth = getattr(torch._C, "_len_torch_function_stack", lambda: 0)
_included = torch._C._dispatch_tls_local_include_set
_excluded = torch._C._dispatch_tls_local_exclude_set
_dump = torch._C._dispatch_dump_table

# the ops the snapshot and the digest run (timing.snapshot, tensors.digest)
SNAPSHOT_OPS = ("aten::detach", "aten::clone", "aten::copy_", "aten::empty_strided", "aten::empty.memory_format",
                "aten::view", "aten::view.dtype", "aten::_reshape_alias", "aten::reshape", "aten::contiguous",
                "aten::to.dtype", "aten::_to_copy", "aten::arange.start", "aten::arange.start_out",
                "aten::mul.Tensor", "aten::mul.Scalar", "aten::add.Tensor", "aten::add_.Tensor", "aten::sum",
                "aten::sum.dim_IntList", "aten::_local_scalar_dense", "aten::slice.Tensor")


def _tables() -> dict[str, str]:
    found = {}
    for op in SNAPSHOT_OPS:
        try:
            found[op] = _dump(op)
        except RuntimeError:  # an op this torch does not have
            continue
    return found


_BOOT_TABLES = _tables()  # this module is imported before any candidate code


def baseline() -> tuple:
    """The dispatch keys forced on and off before a call (compared with them after it)."""
    return repr(_included()), repr(_excluded())


def state() -> tuple:
    """Read right after the call returns (C calls only)."""
    return _gettrace(), _getprofile(), _dispatch_depth(), _function_depth(), _included(), _excluded()


def left(after: tuple, before: tuple) -> list[str]:
    """What the call left in place that could run code later, in words ([] when nothing)."""
    trace, profile, dispatch, function, included, excluded = after
    found = []
    if trace is not None:
        found.append("a trace hook (sys.settrace)")
    if profile is not None:
        found.append("a profile hook (sys.setprofile)")
    if dispatch:
        found.append(f"{dispatch} torch dispatch mode(s) still pushed")
    if function:
        found.append(f"{function} torch function mode(s) still pushed")
    if (repr(included), repr(excluded)) != before:
        found.append(f"dispatch keys forced on or off ({included}; excluded {excluded})")
    found += _monitoring_tools() + _overridden_ops()
    return found


def _monitoring_tools() -> list[str]:
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12+
    if monitoring is None:
        return []
    return [f"a sys.monitoring tool ({monitoring.get_tool(i)!r})" for i in range(6) if monitoring.get_tool(i)]


def _overridden_ops() -> list[str]:
    changed = [op for op, table in _tables().items() if _BOOT_TABLES.get(op) != table]
    return [f"a kernel of its own for {', '.join(changed)} (torch.library)"] if changed else []


def judged(figures: dict, output: Any) -> tuple[str, str]:
    """The judge's verdict on what a timed call's figures say it left behind, and on the judge's own copy of
    its output: (failure, message), ("", "") when nothing was left and the copy's digest is the one taken
    right after the call."""
    if figures["left"]:
        return "left_running", ("the candidate left code to run after its call returned, off the clock: "
                                + "; ".join(figures["left"]))[:2000]
    if digest(output) != figures["digest"]:
        return "late_output", ("the output changed after the clock stopped (a thread, a stream or a hook still "
                               "writing it): its values were not there when the call ended")
    return "", ""


def plain_list(value: Any) -> bool:
    return type(value) is list and len(value) <= 64 and all(type(v) is str and len(v) <= 2000 for v in value)
