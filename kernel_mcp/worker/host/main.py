"""The untrusted process: import the candidate, then run ``custom_kernel`` on whatever the judge sends.

Nothing this process says is believed: it can only hand back tensors, which the judge validates. It never
sees a seed, an expected output or a verdict. Usage (by the judge only):
``python -B -m kernel_mcp.worker.host.main FD``.
"""
from __future__ import annotations

import gc
import multiprocessing
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable

from kernel_mcp.worker.channel import INPUT_VIEW, input_placeholder, serve_inherited
from kernel_mcp.worker.host.load import MissingEntryPoint, import_candidate, kernel_from
from kernel_mcp.worker.isolation import header_cache

# imports inside functions: the host boots on harness code alone; torch and what uses it load after its boot
# line, and the clocks are bound before any candidate code runs

MAX_TEXT = 4000  # characters of a traceback worth sending back
HARNESS = str(Path(__file__).resolve().parents[2])  # kernel_mcp's own files: not the candidate's business


def _error(kind: str, exc: BaseException) -> tuple:
    """The failure as the candidate's author needs it: the traceback through their own code, without the
    harness's frames (or importlib's), and a missing entry point as one sentence."""
    if isinstance(exc, MissingEntryPoint):
        return ("error", kind, str(exc), "")
    shown = traceback.TracebackException.from_exception(exc)
    _drop_harness_frames(shown)
    return ("error", kind, type(exc).__name__, "".join(shown.format())[-MAX_TEXT:])


def _drop_harness_frames(shown: traceback.TracebackException) -> None:
    seen = set()
    while shown is not None and id(shown) not in seen:
        seen.add(id(shown))
        kept = [f for f in shown.stack if not f.filename.startswith((HARNESS, "<frozen importlib"))]
        shown.stack = traceback.StackSummary.from_list(kept)
        shown = shown.__cause__ or shown.__context__


def _refer_to_inputs(output: Any, data: Any) -> Any:
    """Replace each output tensor that *is* one of the received inputs (GPU MODE output buffers) by a
    placeholder, and one that is a view of an input's memory (``x.t()``, as a reference may return) by where it
    lies in it: CUDA IPC cannot send a received tensor back, and the judge already holds that memory."""
    from kernel_mcp.worker import tensors
    inputs = [t for _, t in tensors.leaves(data)]

    def same(t: Any, i: Any) -> bool:
        return (t.data_ptr(), t.shape, t.stride(), t.dtype, t.device) == \
            (i.data_ptr(), i.shape, i.stride(), i.dtype, i.device)

    def swap(t: Any) -> Any:
        for k, i in enumerate(inputs):
            if same(t, i):
                return input_placeholder(k)
            if t.device == i.device and t.untyped_storage().data_ptr() == i.untyped_storage().data_ptr():
                return {INPUT_VIEW: k, "offset": t.storage_offset(), "shape": list(t.shape),
                        "stride": list(t.stride()), "dtype": str(t.dtype).removeprefix("torch.")}
        return t
    return tensors.tree_map(swap, output)


def _plain_values(output: Any) -> Any:
    """Every output tensor detached from autograd and as a plain Tensor (a non-leaf that requires grad, which a
    KernelBench ModelNew built from nn.Parameters returns, or a Parameter, cannot be pickled across processes:
    that is the transport's concern, not the candidate's fault). Values, strides and storage are unchanged."""
    from kernel_mcp.worker import tensors
    return tensors.tree_map(lambda t: t.detach(), output)


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        import torch
        torch.cuda.synchronize()  # device-wide: work on side streams is finished before the output leaves


def serve(conn: Connection) -> None:
    """Boot (harness code only), warm up when the judge says so, then load one candidate and serve it.
    Until the candidate is imported this process runs nothing but kernel_mcp and torch: a warm host
    started ahead of need has run no candidate's code."""
    boot = conn.recv()  # plain data: the authkey must be set before tensors arrive
    multiprocessing.current_process().authkey = boot["authkey"]
    try:
        from kernel_mcp.worker.host import warm
        triton_ready = warm.start_triton(boot.get("kind", ""))
        import torch  # noqa: F401  (registers tensor sharing reductions)
        import torch.multiprocessing  # noqa: F401

        from kernel_mcp.worker.host import timing  # binds its clocks now, before any candidate code
        _, device = conn.recv()  # ("warm", device): sent once the judge holds the device's lease
        warm.host(device, boot.get("profiler", False), triton_ready)
        conn.send(("booted",))
        init = conn.recv()
        init.update(conn.recv())  # tensors (KernelBench weights) travel in a second message
        header_cache.use_for(Path(init["candidate"]))
        module = import_candidate(Path(init["candidate"]), init["problem_dirs"])
        kernel = kernel_from(module, init, device)
    except (EOFError, BrokenPipeError):
        raise
    except BaseException as exc:  # noqa: BLE001  (SystemExit and KeyboardInterrupt are candidate failures too)
        conn.send(_error("import", exc))
        return
    conn.send(("ready", {"unmatched": [str(k)[:200] for k in init.get("unmatched", [])][:64]}))
    keep_alive = None  # the last output must outlive its CUDA IPC handle until the judge has copied it
    clock = timing.Clock(device)
    while True:
        message = conn.recv()
        kind = message[0]
        if kind == "run":
            keep_alive = _run(conn, kernel, message, device)
        elif kind == "time":
            keep_alive = _time(conn, kernel, message, clock)
        else:
            return
        # the inputs are the judge's memory, held for us (CUDA IPC) until we drop them: drop them now,
        # not when the next message arrives
        message = None
        if kind == "run" and init.get("release_between_calls") and device.startswith("cuda"):
            _release_memory()
    del keep_alive


def _seed(rng_seed: int) -> None:
    """The case's RNG seed, as the judge's reference runs start from it (a dropout draws the same mask)."""
    import torch
    torch.manual_seed(rng_seed)


def _run(conn: Connection, kernel: Callable, message: tuple, device: str) -> Any:
    """One call of a check. ``serialize`` (a diagnosis the judge asks for after a mismatch): every torch op the
    call makes waits for all device work before and after it, so work a side stream leaves unordered cannot
    race the ops that read or overwrite it. ``late``: the output's bits read on the caller's stream at return
    differ from its bits once the whole device is idle (results left on a stream never joined to the caller's:
    whoever reads them next on that stream reads them unfinished)."""
    _, case_id, data, rng_seed, options = message
    try:
        _seed(rng_seed)
        with _serialized(device, options.get("serialize", False)):
            output = kernel(data)
        output = _lazy_bits_applied(output)  # ordered on the caller's stream after the call's own work
        at_return = _stream_digest(output, device)
        _synchronize(device)
        # a CPU has no streams: its digest at return is already the final one (computed once, not twice)
        final = _stream_digest(output, device) if device.startswith("cuda") else at_return
        late = at_return is not None and at_return != final
    except BaseException as exc:  # noqa: BLE001  (SystemExit and KeyboardInterrupt are candidate failures too)
        conn.send(_error("call", exc))
        return None
    _send_output(conn, ("output", case_id, {"late": late, "digest": final or []}), _refer_to_inputs(output, data))
    return output


def _lazy_bits_applied(output: Any) -> Any:
    """Each tensor that carries torch's lazy negation or conjugation bit (``torch._neg_view``, ``x.conj()``)
    as a tensor holding the values its reader sees: the bits are not sent across processes, and its raw
    memory alone would show the judge other values than the caller reads (tests/cheats/neg_bit_output.py)."""
    from kernel_mcp.worker import tensors

    def applied(t: Any) -> Any:
        return t.resolve_neg().resolve_conj() if t.is_neg() or t.is_conj() else t
    return tensors.tree_map(applied, output)


def _stream_digest(output: Any, device: str) -> list[int] | None:
    """The output's digest (tensors.digest; its Python floats as tensors, as the judge reads them), computed on
    the current stream without waiting for the others; None where the output holds anything but plain tensors
    (the judge refuses it). The judge compares its own copy's digest with the last one taken here: a write
    after this one (a thread the call left running, waiting for the output to be shared) shows as a change
    (tests/cheats/unjoined_thread_cpu.py)."""
    import torch

    from kernel_mcp.worker import tensors
    try:
        if any(type(t) is not torch.Tensor for _, t in tensors.leaves(output)):  # noqa: E721
            return None
        with torch._C.DisableTorchFunction():
            return tensors.digest(tensors.floats_as_tensors(output))  # .item() waits for the current stream alone
    except Exception:  # noqa: BLE001  (no digest: nothing measured; the judge still judges the values)
        return None


def _serialized(device: str, on: bool) -> Any:
    import contextlib
    if not on or not device.startswith("cuda"):
        return contextlib.nullcontext()
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    sync = torch._C._cuda_synchronize  # the C function: the candidate may have replaced torch.cuda.synchronize

    class Serialized(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            sync()
            out = func(*args, **(kwargs or {}))
            sync()
            return out
    return Serialized()


def _release_memory() -> None:
    """Between the calls of a check tight on the device (the judge says so), hold no more of it than the
    output the judge is copying: its float64 reference runs next, beside this process. Not while timing:
    a candidate's allocations would then cost a cudaMalloc each."""
    import torch
    gc.collect()  # a reference cycle in the candidate's code may still hold the inputs
    torch.cuda.empty_cache()


def _time(conn: Connection, kernel: Callable, message: tuple, clock: Any) -> Any:
    """One timed call (see worker/host/timing.py), the judge having flushed the caches. The output goes back
    as a snapshot taken once all device work has finished, with its digest and the figures; what the call
    left running is reported (host/aftercall.py). ``mode`` "kernel" adds CUPTI's device busy time, "graph" times
    a replayed CUDA graph instead (a figure only: nothing it computes is returned)."""
    from kernel_mcp.worker.host import aftercall, timing
    _, call_id, data, options = message
    figures: dict[str, Any] = {}
    try:
        _seed(options["rng_seed"])
        before = aftercall.baseline()
        if options["mode"] == "graph":
            figures["graph_ms"] = timing.graph_replay_ms(kernel, data)
            output, call = None, None
        elif options["mode"] == "kernel":
            output, call, figures["busy_us"], figures["activities"] = timing.kernel_busy_us(kernel, data, clock.device)
            figures["op_ms"] = call.op_ms
        else:
            output, call = timing.timed_call(kernel, data, clock)
            figures.update(op_ms=call.op_ms, tail_ms=call.tail_ms, wall_ms=call.wall_ms, issue_ms=call.issue_ms)
        snapshot, digest = (None, []) if output is None else timing.snapshot(_lazy_bits_applied(output))
        if call is not None:
            figures["digest"] = digest
            timing.synchronize(clock.device)
            found = call.left()
            figures["left"] = found + [f"{what} (seen after the snapshot)" for what in
                                       aftercall.left(aftercall.state(), before) if what not in found]
        figures["patched"] = timing.patched_timers()
    except timing.NotPlain as exc:
        conn.send(_error("output", exc))
        return None
    except BaseException as exc:  # noqa: BLE001
        conn.send(_error("call", exc))
        return None
    _send_output(conn, ("timed", call_id, figures), snapshot)
    return snapshot


def _send_output(conn: Connection, head: tuple, output: Any) -> None:
    try:
        conn.send((*head, _plain_values(output)))
    except Exception as exc:  # noqa: BLE001  (an unpicklable object, a tensor that cannot be shared)
        conn.send(_error("output", exc))


def main() -> None:
    serve_inherited(serve)


if __name__ == "__main__":
    main()
