"""The judge process: the verdict is made here and nowhere else.

Started by ``worker.client`` (isolated Python, see ``client.JUDGE_BOOT``) with the fd of its result pipe
and one JSON request on stdin. Writes signed JSON lines (progress, then one result) to RESULT_FD.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback

from kernel_mcp.results import CheckResult, Finding, ProfileResult
from kernel_mcp.worker import channel, sandbox


class Reporter:
    def __init__(self, fd: int, key: bytes):
        self.stream, self.key = os.fdopen(fd, "w"), key

    def send(self, kind: str, body: dict) -> None:
        self.stream.write(channel.sign(self.key, {"type": kind, **body}) + "\n")
        self.stream.flush()

    def progress(self, message: str, done: int = 0, total: int = 0) -> None:
        self.send("progress", {"message": message, "done": done, "total": total})


def resolve_device(requested: str) -> str:
    import torch
    if requested in ("auto", ""):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("--device cuda asked for, but torch sees no CUDA/ROCm device here")
    return requested


def _run(request: dict, reporter: Reporter) -> CheckResult | ProfileResult:
    if request["mode"] == "profile":
        from kernel_mcp.worker.profile_run import run_profile
        return run_profile(request, reporter)
    from kernel_mcp.worker.check_run import run_check
    return run_check(request, reporter)


def main(fd: int) -> None:
    sandbox.harden_trusted_process()
    request = json.loads(sys.stdin.readline())
    sys.stdin.close()
    reporter = Reporter(fd, bytes.fromhex(request.pop("key")))
    started = time.monotonic()
    try:
        result = _run(request, reporter)
    except Exception as exc:  # noqa: BLE001  (a harness failure is reported, never mistaken for a pass)
        finding = Finding(code="harness_error", message="".join(traceback.format_exception(exc))[-3000:])
        fields = {"passed": False, "verdict": "error: harness", "problem": request.get("problem", ""),
                  "candidate": request.get("candidate", ""), "findings": [finding]}
        result = ProfileResult(trusted=False, **fields) if request["mode"] == "profile" else CheckResult(**fields)
    result.seconds = round(time.monotonic() - started, 3)
    sandbox.kill_tree(os.getpid(), include_self=False)  # daemons the candidate left behind
    reporter.send("result", {"result": result.model_dump()})
    reporter.stream.close()
    os._exit(0)


if __name__ == "__main__":
    main(int(sys.argv[1]))
