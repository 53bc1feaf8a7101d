"""The untrusted process of one compile step: record a candidate's Triton launches, build them for targets,
capture its C++ sources, or build its torch extensions ahead of its check. Started like a candidate host
(worker/isolation/sandbox.py), it imports torch and Triton at once and then waits for exactly one
``StepRequest`` (JSON) on its socket, so a warm one can be started ahead of need; it answers with one
``StepReply`` (JSON, never pickle: the caller does not unpickle what candidate code could have written) and
exits. Usage (by worker/launch/step.py only):
``python -B -m kernel_mcp.worker.steps.main FD``.
"""
from __future__ import annotations

import sys
import traceback
from multiprocessing.connection import Connection

from kernel_mcp.worker.channel import serve_inherited

# imports inside functions: a step host imports only the step it was asked for (Triton, or torch's C++
# extension machinery)

MAX_REQUEST_BYTES = 16 << 20


def _run(request) -> list:
    if request.kind == "record":
        from kernel_mcp.worker.steps.triton_record import run
    elif request.kind == "build":
        from kernel_mcp.worker.steps.triton_build import run
    elif request.kind == "prebuild":
        from kernel_mcp.worker.steps.prebuild import run
    else:
        from kernel_mcp.worker.steps.cpp_capture import run
    return run(request)


def serve(conn: Connection) -> None:
    import torch  # noqa: F401  (the boot a warm step host pays ahead of need)
    try:
        import triton  # noqa: F401
    except ImportError:
        pass
    from kernel_mcp.worker.protocol import STEP_REQUEST, StepReply
    request = STEP_REQUEST.validate_json(conn.recv_bytes(MAX_REQUEST_BYTES))
    try:
        reply = StepReply(ok=True, value=_run(request))
    except BaseException as exc:  # noqa: BLE001  (the candidate's failure is the step's result)
        reply = StepReply(ok=False, error="".join(traceback.format_exception(exc))[-4000:])
    sys.stdout.flush()
    sys.stderr.flush()
    conn.send_bytes(reply.model_dump_json().encode())


def main() -> None:
    serve_inherited(serve)


if __name__ == "__main__":
    main()
