"""Running one compile step (a module that imports or runs candidate code) as a sandboxed subprocess and
reading its one result line back. The candidate sees an allowlisted environment and a scratch HOME."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kernel_mcp.results import CompileResult, Finding
from kernel_mcp.worker import sandbox

STEP_TIMEOUT_S = 300


def environment(scratch: Path, interpret: bool) -> dict[str, str]:
    env = sandbox.harness_env(HOME=str(scratch), TMPDIR=str(scratch), PYTHONDONTWRITEBYTECODE="1",
                              TRITON_CACHE_DIR=str(scratch / "triton"))
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton's current default, stated to silence its warning
    # set or cleared, never inherited: under the interpreter @triton.jit gives no compilable JITFunction,
    # so a build step that inherited the caller's TRITON_INTERPRET=1 would find no kernel to compile
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return env


def run_step(module: str, spec: dict, env: dict, marker: str, result: CompileResult) -> list | None:
    try:
        done = subprocess.run([sys.executable, "-B", "-m", module, json.dumps(spec)], env=env, cwd=env["TMPDIR"],
                              capture_output=True, text=True, timeout=STEP_TIMEOUT_S, stdin=subprocess.DEVNULL,
                              preexec_fn=sandbox.make_preexec(None, False), start_new_session=True)
    except subprocess.TimeoutExpired:
        result.findings.append(Finding(code="timeout", message=f"{module} took longer than {STEP_TIMEOUT_S} s"))
        return None
    result.log_tail = (done.stdout + done.stderr)[-3000:]
    line = next((ln for ln in reversed(done.stdout.splitlines()) if ln.startswith(marker)), None)
    if line is None:
        result.findings.append(Finding(code="candidate_failed", message=(
            f"running the candidate to find its kernels failed (exit {done.returncode}):\n"
            + done.stderr[-2500:])))
        return None
    try:
        value = json.loads(line[len(marker):])
    except ValueError:
        value = None
    if not isinstance(value, list):
        result.findings.append(Finding(code="candidate_failed", message="malformed output from " + module))
        return None
    return value


