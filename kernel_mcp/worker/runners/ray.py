"""Judges on a Ray cluster: each check or profile is one Ray task that needs one GPU (one CPU for device "cpu").

The caller (``RayRunner``) sends what the judge reads as bytes in the task's arguments: the problem (its folder and the
modules of its parent it may import, or a KernelBench file), the candidate and the baseline with the modules beside them
they import. The task writes them on the node at their absolute paths below a staging folder, runs the node's warm
``LocalRunner``, and strips the folder from every string of the result: the same models, with the caller's paths, as
local results. Judge, HMAC channel and sandbox live on the node; the cluster is trusted to run the task given and carry
its result. RayRunner ships the caller's kernel_mcp to the workers (runtime_env ``py_modules``); each task carries its
digest, and a node whose differs refuses. Faults: a lost worker or node is a system failure that Ray retries elsewhere
(``max_retries``); our own exceptions are never retried. The result is the one the task's object holds, never counted
twice; once retries run out, ``error: harness`` with a ``cluster_failed`` finding. Ray: imported here only, lazily."""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import socket
import tempfile
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_mcp.counters.report import CounterReport
from kernel_mcp.errors import UsageError
from kernel_mcp.problem import Problem, imported_closure, load_problem
from kernel_mcp.results import CheckResult, ProfileResult
from kernel_mcp.worker.protocol import Device, JudgeRequest, ProgressFn, StepReply
from kernel_mcp.worker.runners.base import BOOT_TIMEOUT_S, HARNESS_MARGIN_S, OnThisMachine, harness_error
from kernel_mcp.worker.runners.local import LocalRunner

PACKAGE_DIR = Path(__file__).resolve().parents[2]  # this kernel_mcp/, shipped to the workers
PROGRESS_EVERY_S = 30.0  # a task not done yet is said again this often
MAX_SEND_BYTES = 256 << 20  # problem and candidates together; more does not belong in a task's arguments
STAGE_PREFIX = "kernel_mcp-ray-"  # a worker process's folder of staged files on its node: + its pid
CONNECT_TIMEOUT_S = 10.0  # ray.init waits minutes on an address where nothing answers: probe it first
VISIBLE_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")  # Ray sets them per task


@dataclass(frozen=True)
class RayAttempt:
    """Where a result came from: the node, the try (0: first; n: the n-th retry after a lost worker or
    node; -1: Ray did not say), the Ray worker process, and the device the judge resolved there."""
    node: str
    attempt: int
    pid: int
    device: Device | None


class RayRunner(OnThisMachine):
    """The Runner methods (base.Runner), judges on a Ray cluster, compile steps here. ``address``: "auto" (RAY_ADDRESS
    or this machine's cluster), "HOST:6379", "ray://HOST:10001" (Ray Client) or "local" (start one here; ``init_kwargs``
    go to ``ray.init``). ``retries``: how often a task lost with its worker runs again. ``spares``: judges booted ahead
    by each Ray worker process (H200, a tune measurement: 12.6 s with 1, 5.9 s with 4)."""
    local_builds = False  # a node's checks fill from that node's kernel store, never this machine's

    def __init__(self, address: str = "auto", retries: int = 3, spares: int = 1, **init_kwargs: Any):
        if retries < 0 or spares < 0:
            raise ValueError("retries (how often a lost task runs again) and spares count from 0")
        self.address, self.retries, self.spares, self._local = address, retries, spares, LocalRunner(warm=False)
        self._mine = threading.local()  # per calling thread: last (RayAttempt), devices (asked -> Device)
        ray = _ray()
        self._owns = not ray.is_initialized()  # this runner calls ray.init, so close() disconnects
        if self._owns:
            self._init(ray, init_kwargs)
        elif address not in ("auto", "local", ray.get_runtime_context().gcs_address):
            raise UsageError(f"this process is connected to the Ray cluster at {ray.get_runtime_context().gcs_address}"
                             f", not {address}: one process talks to one cluster (address 'auto' uses it)")
        self._digest = package_digest(PACKAGE_DIR)
        self._task = ray.remote(_judge_on_node)

    def _init(self, ray, init_kwargs: dict[str, Any]) -> None:
        """Connect (or start "local"), shipping this kernel_mcp to the job's workers. ray.init waits minutes
        for an address where nothing answers: a probe says so at once."""
        target = os.environ.get("RAY_ADDRESS", "") if self.address == "auto" else self.address
        host, _, port = target.removeprefix("ray://").rpartition(":")
        env = dict(init_kwargs.pop("runtime_env", None) or {})
        env["py_modules"] = [*env.get("py_modules", []), str(PACKAGE_DIR)]
        env["excludes"] = [*env.get("excludes", []), "__pycache__", "*.pyc"]
        init_kwargs.setdefault("log_to_driver", False)  # workers' output must not reach an MCP server's stdout
        try:
            if host and port.isdigit():  # not "local", nor "auto" without RAY_ADDRESS: Ray fails fast there
                socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
            ray.init(address=self.address, runtime_env=env, **init_kwargs)
        except (OSError, RuntimeError, ValueError) as exc:  # OSError: ConnectionError, TimeoutError, refused
            if "ray[client]" in str(exc):
                raise UsageError(f"Ray Client (address {self.address}) needs grpcio: install kernel-mcp[ray]") from None
            raise UsageError(f"no Ray cluster reachable at {self.address}: {exc} (token auth: docs/ray.md)") from None

    @property
    def parallel(self) -> int:  # evaluations worth running at once: the cluster's GPUs (its CPUs where none)
        have = _ray().cluster_resources()
        return max(1, int(have.get("GPU", 0) or have.get("CPU", 1)))

    def describe(self) -> str:
        have = _ray().cluster_resources()
        return f"the Ray cluster at {self.address} ({int(have.get('GPU', 0))} GPUs, {int(have.get('CPU', 0))} CPUs)"

    # --- judges: one Ray task each -------------------------------------------------------------------
    def judge(self, request: JudgeRequest, device: str = "auto", on_progress: ProgressFn | None = None,
              problem: Problem | None = None) -> CheckResult | ProfileResult:
        """One check or profile as a Ray task; the result, validated here, names the caller's paths."""
        problem = problem or load_problem(request.problem)
        model = ProfileResult if request.mode == "profile" else CheckResult
        say = on_progress or (lambda *_: None)
        files, (on_node, needs) = _pack(problem, request), self._placement(device)
        ref = self._task.options(max_retries=self.retries, retry_exceptions=False, name=f"kernel_mcp {request.mode}",
                                 **needs).remote(files, request.model_dump(mode="json"), on_node, self._digest,
                                                 self.spares)
        self._mine.last = None
        say(f"queued on the Ray cluster at {self.address}", 0, 0)
        ray = _ray()
        try:
            reply = self._wait(ray, ref, problem, request, say)
        except ray.exceptions.RayTaskError:
            raise  # our own code failed on the node: as LocalRunner lets a bug through, never retried
        except ray.exceptions.RayError as exc:  # the worker or node was lost and retries ran out, or setup failed
            return _cluster_failed(model, problem, request, exc, self.retries)
        if "usage_error" in reply:
            raise UsageError(reply["usage_error"])
        ran = RayAttempt(reply["node"], reply["attempt"], reply["pid"],
                         Device.model_validate(reply["device"]) if reply["device"] else None)
        self._mine.last, self._mine.devices = ran, {**getattr(self._mine, "devices", {}), device: ran.device}
        say(f"ran on {ran.node}" + (f" (retry {ran.attempt} after a lost worker)" if ran.attempt > 0 else ""), 0, 0)
        return model.model_validate(reply["result"])

    def _placement(self, device: str) -> tuple[str, dict[str, int]]:
        """The device the node's judge asks for, and what the task needs: a GPU, which Ray picks (any cuda:N is
        "cuda" there), or a CPU for "cpu" and, as locally, for "auto" where the cluster has no GPU."""
        gpus = _ray().cluster_resources().get("GPU", 0)
        if device == "cpu" or (device == "auto" and not gpus):
            return "cpu", {"num_cpus": 1}
        if not gpus:
            raise UsageError(f"the Ray cluster at {self.address} has no GPU for device {device} (cpu runs there)")
        return "cuda", {"num_cpus": 1, "num_gpus": 1}

    def _wait(self, ray, ref, problem: Problem, request: JudgeRequest, say: ProgressFn) -> dict[str, Any]:
        """The task's reply. No deadline of our own: a busy cluster may queue a task for long, and cancelling
        on time alone would drop work the cluster will do; once running, the node's LocalRunner bounds the
        judge (the problem's timeouts and boot, as here), and Ray reports a lost worker or node. Progress
        says how long it has waited; a caller that gives up (an exception here) cancels the task."""
        started, done = time.monotonic(), False
        expected_s = (problem.spec.timeouts.total + HARNESS_MARGIN_S + BOOT_TIMEOUT_S  # LocalRunner.judge's, a boot
                      + 2 * request.settings.budget_s * (request.mode == "profile"))
        try:
            while not ray.wait([ref], timeout=PROGRESS_EVERY_S)[0]:
                waited = time.monotonic() - started
                late = f"; a run takes up to {expected_s:.0f} s once it starts" if waited > expected_s else ""
                say(f"waiting on the Ray cluster at {self.address}: {waited:.0f} s, queued or running{late}", 0, 0)
            done = True
            return ray.get(ref)
        finally:
            if not done:
                with suppress(Exception):  # cancelling is a courtesy: the error that brought us here is the news
                    ray.cancel(ref, force=True)

    def last_attempt(self) -> RayAttempt | None:
        """Where the calling thread's last judge ran (None before any, or when the cluster failed it)."""
        return getattr(self._mine, "last", None)

    def resolved(self, device: str) -> Device | None:
        """The device the calling thread's last judge asked as ``device`` ran on (a node's)."""
        return getattr(self._mine, "devices", {}).get(device)

    # --- on this machine ------------------------------------------------------------------------------
    def step(self, request, problem: Problem, timeout_s: float, device: Device | None = None) -> StepReply:
        return self._local.step(request, problem, timeout_s, device)

    def counters(self, result: ProfileResult, problem: Problem, candidate: Path, device: Device | None,
                 shape: int = 0) -> None:
        result.counters = CounterReport(message="hardware counters are not taken through a Ray cluster (ncu needs "
                                                "the GPU held alone on its node): profile on that machine for them")

    def local_gpu(self) -> Device | None:
        return self._local.local_gpu()

    def close(self) -> None:
        self._local.close()
        if self._owns:
            self._owns = False
            _ray().shutdown()


def _ray():
    try:
        import ray
    except ImportError:
        raise UsageError("judging on a Ray cluster needs Ray: install kernel-mcp[ray]") from None
    return ray


def _modules(folder: Path) -> dict[str, Path]:
    return {p.stem: p for p in folder.glob("*.py") if p.is_file()}


def _pack(problem: Problem, request: JudgeRequest) -> dict[str, bytes]:
    """absolute path -> content of every file the judge and candidate hosts may read from the caller's disk."""
    if problem.kind == "gpumode":  # reference.py imports from its folder and its parent (GPU MODE's utils.py)
        files = {p for p in problem.path.rglob("*") if p.is_file()
                 and not {"__pycache__", ".git"} & set(p.relative_to(problem.path).parts)}
        files |= set(_modules(problem.path.parent).values())
    else:
        files = set(imported_closure(problem.path, _modules(problem.path.parent)))
    for name in filter(None, [request.candidate, request.baseline]):  # with the modules beside it it imports
        files |= set(imported_closure(Path(name), _modules(Path(name).parent)))
    size = sum(p.stat().st_size for p in files)
    if size > MAX_SEND_BYTES:
        raise UsageError(f"problem {problem.name} and its candidates are {size >> 20} MiB, more than a Ray task "
                         f"carries ({MAX_SEND_BYTES >> 20} MiB): judge it on its machine")
    return {str(p): p.read_bytes() for p in sorted(files)}


def _cluster_failed(model: type[CheckResult] | type[ProfileResult], problem: Problem, request: JudgeRequest,
                    exc: Exception, retries: int) -> CheckResult | ProfileResult:
    return harness_error(model, problem, request, "cluster_failed", f"the Ray cluster gave no result after "
                         f"{retries + 1} attempt(s): {type(exc).__name__}: {str(exc)[:2000]}")


# --- on the worker node -------------------------------------------------------------------------------
_node_runners: dict[tuple[str | None, ...], LocalRunner] = {}


@functools.cache
def package_digest(folder: Path) -> str:
    """sha256 over the relative paths and contents of a kernel_mcp folder's Python files (once a process)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _node_runner(spares: int) -> LocalRunner:
    """This worker process's warm runner for the GPUs Ray gave this task, with the caller's ``spares``."""
    key = (*(os.environ.get(name) for name in VISIBLE_VARS), str(spares))
    if key not in _node_runners:  # Ray may give this process another GPU: one runner's judges kept, not one per GPU
        while _node_runners:
            _node_runners.popitem()[1].close()
        _node_runners[key] = LocalRunner(warm=True, spares=spares, step_hosts=False)  # steps run on the caller
    return _node_runners[key]


def _judge_on_node(files: dict[str, bytes], request: dict[str, Any], device: str, digest: str,
                   spares: int) -> dict[str, Any]:
    """The Ray task: stage the files, judge, and reply with the result (the staging folder stripped from
    it), the device, and where and at which attempt it ran; a usage error is a reply, never retried."""
    import ray
    node = socket.gethostname()
    if package_digest(PACKAGE_DIR) != digest:
        return {"usage_error": f"the Ray node {node} has a different kernel_mcp ({PACKAGE_DIR}) than the caller: "
                               "connect through RayRunner (it ships the caller's), or install the same one there"}
    root = _stage(files)
    try:
        staged = JudgeRequest.model_validate(request)
        staged = staged.model_copy(update={k: f"{root}{v}" for k in ("problem", "candidate", "baseline")
                                           if (v := getattr(staged, k))})
        runner = _node_runner(spares)
        try:
            result = runner.judge(staged, device)
        except UsageError as exc:
            return {"usage_error": _unstaged(str(exc), str(root))}
        resolved, attempt = runner.resolved(device), -1
        with suppress(AttributeError):  # not public API: without it the attempt is unknown (-1), the result stands
            attempt = ray._private.worker.global_worker.core_worker.get_current_task_attempt_number()
        return {"result": _unstaged(result.model_dump(mode="json"), str(root)), "node": node, "attempt": attempt,
                "pid": os.getpid(), "device": resolved.model_dump(mode="json") if resolved else None}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _stage(files: dict[str, bytes]) -> Path:
    """``files`` at their paths below this worker process's folder, the same for each of its tasks (the node's
    records of a problem, by path, serve the next: needs.py); those of workers gone (killed mid-task) go."""
    tmp = Path(tempfile.gettempdir()).resolve()  # as load_problem resolves the paths the results name
    for folder in tmp.glob(f"{STAGE_PREFIX}*"):
        pid = folder.name.removeprefix(STAGE_PREFIX)
        if pid.isdigit() and (int(pid) == os.getpid() or not Path(f"/proc/{pid}").exists()):
            shutil.rmtree(folder, ignore_errors=True)
    root = tmp / f"{STAGE_PREFIX}{os.getpid()}"
    root.mkdir(mode=0o700)  # fails where another user made it first
    for name, data in files.items():
        if not name.startswith("/") or ".." in Path(name).parts:
            raise ValueError(f"not an absolute path of a file to stage: {name!r}")
        target = root / name.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root


def _unstaged(value: Any, root: str) -> Any:
    """``value`` with the staging folder removed from every string: the caller's own paths again."""
    if isinstance(value, str):
        return value.replace(root, "")
    if isinstance(value, dict):
        return {_unstaged(k, root): _unstaged(v, root) for k, v in value.items()}
    return [_unstaged(v, root) for v in value] if isinstance(value, list) else value
