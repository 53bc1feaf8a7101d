"""Shared fixtures. Tests use real processes, real torch and Triton; `gpu` tests need a CUDA/ROCm device."""
from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PROBLEMS = REPO / "problems"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CUDA_FIXTURE = FIXTURES / "cuda" / "add_inline.py"  # vector_add in CUDA C++ through load_inline
# where daemon and leak fixtures report (tests/cheats/_cheat_util.py): shared memory, the one place a candidate
# may write outside its scratch where its file systems are sealed; one folder per user (another user's files
# there cannot be removed). Candidates learn it from their environment (KERNEL_MCP_* variables reach them).
CHEATS_STATE = Path("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp") / \
    f"kernel_mcp_cheats-{os.getuid()}{os.environ.get('PYTEST_XDIST_WORKER', '')}"  # one per parallel worker
os.environ["KERNEL_MCP_TEST_STATE_DIR"] = str(CHEATS_STATE)
# made now: a judge keeps it shared with its candidates only if it exists when the judge starts (every other
# place in /dev/shm is private to one check: worker/isolation/check_namespaces.py)
CHEATS_STATE.mkdir(exist_ok=True)
# Each test process (each parallel worker) its own fresh kernel_mcp cache, and with it its own device lease
# (worker/lease.py). With the user's one machine-wide cache, every test's timing run held the CPU's lease
# alone and every other worker's checks queued behind it: the suite ran at 43% of two cores (BENCHMARKS.md,
# "The test suite's duration"). Timing tests assert what holds on a loaded machine, so they may run beside
# other work; the lease's own tests give the processes they start a shared cache of their own. Fresh, so
# that no cached compile or measurement of an earlier run answers for this one; removed at the end.
TEST_CACHE = tempfile.mkdtemp(prefix=f"kernel_mcp-test-cache-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-")
os.environ["KERNEL_MCP_CACHE"] = TEST_CACHE


def kernelbench_files(folder: Path, source: str, variant_forward: str) -> tuple[Path, Path, Path]:
    """A KernelBench problem file written from ``source``; its own Model as a candidate (ModelNew = Model,
    which must pass); and a candidate whose ModelNew is Model with ``variant_forward`` (a whole method)."""
    problem, own, variant = folder / "problem.py", folder / "own_model.py", folder / "variant.py"
    problem.write_text(source)
    own.write_text(source + "\nModelNew = Model\n")
    variant.write_text(source + "\nclass ModelNew(Model):\n" + textwrap.indent(textwrap.dedent(variant_forward), "    "))
    return problem, own, variant


def vector_add_on_one_shape(folder: Path, n: int = 16384) -> Path:
    """A copy of vector_add timed on one test shape of ``n`` elements, at ``folder``/vector_add. Under the CPU
    interpreter a program costs ~0.5 ms whatever its size, so time ~ n / BLOCK: the baseline's BLOCK 128 runs
    128 programs, 1024 runs 16, and each doubling of BLOCK up to the tune's largest value (1024) is ~1.9x
    faster: a landscape whose best is known, with steps far above a loaded machine's noise."""
    import yaml
    problem = folder / "vector_add"
    shutil.copytree(PROBLEMS / "vector_add", problem, ignore=shutil.ignore_patterns("__pycache__"))
    spec = yaml.safe_load((problem / "task.yml").read_text())
    spec["tests"] = [{"n": n, "itemsize": 4, "seed": 7}]
    (problem / "task.yml").write_text(yaml.safe_dump(spec))
    return problem


def in_server_session(root, script):
    """``await script(client)`` in an MCP client session with the server of workspace ``root`` (in process),
    its warm runner closed with the session: otherwise the spare judge and step hosts it boots after each
    call go on booting beside the next tests (the test worker is their caller)."""
    import asyncio

    from mcp import Client

    from kernel_mcp.server import build_server
    from kernel_mcp.worker.runners.local import LocalRunner
    runner = LocalRunner(warm=True)  # as build_server would make its own

    async def run():
        async with Client(build_server(root, runner)) as client:
            return await script(client)
    try:
        return asyncio.run(run())
    finally:
        runner.close()


def resource_refusal(root, uri: str) -> str:
    """The error message of reading resource ``uri`` from the server of workspace ``root`` (which must refuse)."""
    import pytest
    from mcp.shared.exceptions import MCPError

    async def script(client):
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
        return str(caught.value)
    return in_server_session(root, script)


def repo_pythonpath() -> str:
    """PYTHONPATH for a child process: this checkout first, then whatever the caller had (the GPU machine
    installs the dependencies into a folder named only by PYTHONPATH; replacing it loses them)."""
    return os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


def processes_of_cache(cache: Path) -> list[int]:
    """The running processes (zombies aside) of calls that used this private kernel_mcp cache: each process
    of a call carries it in its environment (judge, hosts, step hosts, whatever a candidate forked)."""
    from kernel_mcp.files import CACHE_VAR
    from kernel_mcp.worker.isolation import proctree
    return proctree.running(proctree.carrying(CACHE_VAR, str(cache)))


def broken_cuda_candidate(folder: Path) -> tuple[Path, int]:
    """CUDA_FIXTURE with an undeclared name in its kernel, written to folder, and the line of the Python
    file the compiler error must be mapped back to."""
    source = CUDA_FIXTURE.read_text().replace("if (i < n) out[i] = add_values(a[i], b[i]);",
                                              "if (i < n) out[i] = add_values(a[i], b[i]) + missing_value;")
    assert "missing_value" in source  # the fixture still has the line replaced
    broken = folder / "broken_cuda.py"
    broken.write_text(source)
    return broken, next(i for i, text in enumerate(source.splitlines(), 1) if "missing_value" in text)


# The test command runs tests in parallel (pytest-xdist, pyproject's addopts). Tests marked `alone` time
# code on the CPU or measure how long something waits: no other test runs beside them. Every test passes a
# turnstile (``gate``) into a shared ``room``; an `alone` test keeps the gate while it takes the room for
# itself, so the others cannot keep it waiting by coming in one after another. A worker whose next test is
# `alone` too keeps both for it: the `alone` tests run as one block (they are sorted first, below), and the
# other workers are drained once for the block instead of once per test.
_kept: list = []  # (gate, room) this worker holds from one `alone` test into the next


def _alone(item) -> bool:
    return item is not None and item.get_closest_marker("alone") is not None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    worker = getattr(item.config, "workerinput", None)
    if worker is None:  # not in parallel: nothing to keep apart
        yield
        return
    import fcntl
    import tempfile
    alone = _alone(item)
    if _kept:
        gate, room = _kept.pop()
        if not alone:  # the test expected next went to another worker: share the room again
            fcntl.flock(room, fcntl.LOCK_SH)
            fcntl.flock(gate, fcntl.LOCK_UN)
    else:
        locks = Path(tempfile.gettempdir()) / f"kernel_mcp-tests-{worker['testrunuid']}"
        locks.mkdir(exist_ok=True)
        gate, room = open(locks / "gate", "a"), open(locks / "room", "a")
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
    try:
        yield  # setup (module fixtures included), call and teardown
    finally:
        if alone and _alone(nextitem):
            _kept.append((gate, room))
        else:
            for lock in (room, gate):
                fcntl.flock(lock, fcntl.LOCK_UN)
                lock.close()


def _scheduled(items: list, workers: int) -> list:
    """The order tests are handed out in (the same in every worker, as pytest-xdist requires). Its
    worksteal mode gives each worker one contiguous share of this list (shares as computed here) and later
    moves tests from the end of a busy worker's share to an idle one. Tests marked `long` (a minute or
    more) go at the heads of the shares, spread over them, so that no worker runs them all one after
    another while the others finish early. The `alone` tests go first in the first share, as one block
    (pytest_runtest_protocol): every worker waits while it runs, so it weighs on no share more than on
    another. A share other than the first starts with two ordinary tests before its long ones: whatever
    another worker runs when the block begins, the block waits for it to end."""
    alone = [item for item in items if _alone(item)]
    long = [item for item in items if not _alone(item) and item.get_closest_marker("long") is not None]
    rest = [item for item in items if not _alone(item) and item.get_closest_marker("long") is None]
    if workers <= 1:
        return alone + long + rest
    sizes, left = [], len(items)
    for i in range(workers):  # as pytest-xdist's WorkStealingScheduling splits its pending list
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    heads: list[list] = [list(alone)] + [[] for _ in range(workers - 1)]
    load = [0] * workers
    for item in long:
        share = min(range(workers), key=lambda i: (load[i], i))
        heads[share].append(item)
        load[share] += 1
    ordered = []
    for i, head in enumerate(heads):
        lead = rest[:2] if i and len(head) else []
        del rest[:len(lead)]
        share = lead + head
        fill = max(0, sizes[i] - len(share))
        ordered += share + rest[:fill]
        del rest[:fill]
    return ordered + rest


def pytest_unconfigure(config) -> None:
    shutil.rmtree(TEST_CACHE, ignore_errors=True)


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: one worker per core and one more per two cores. Since judges and hosts are forked
    (worker/launch/fork_server.py), about half of a test's time is waiting (hanging candidates' timeouts, agent
    turns, timing budgets), not CPU: on 2 cores a third worker cut the suite from 11.3 to 9.9 min
    (BENCHMARKS.md, "The test suite's duration")."""
    cores = os.cpu_count() or 1
    return cores + cores // 2


def _has_gpu() -> bool:
    import torch
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    items[:] = _scheduled(items, getattr(config, "workerinput", {}).get("workercount", 1))
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA or ROCm device (run on the GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device() -> str:
    return "cuda" if _has_gpu() else "cpu"


@pytest.fixture
def problem_copy(tmp_path):
    """copy('vector_add') -> a private copy of a bundled problem that a test may edit or let be tampered."""
    def copy(name: str) -> Path:
        target = tmp_path / "problems" / name
        shutil.copytree(PROBLEMS / name, target, ignore=shutil.ignore_patterns("__pycache__"))
        return target
    return copy


os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
