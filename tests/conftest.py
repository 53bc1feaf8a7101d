"""Shared fixtures. Tests use real processes, real torch and Triton; `gpu` tests need a CUDA/ROCm device."""
from __future__ import annotations

import os
import shutil
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


def kernelbench_files(folder: Path, source: str, variant_forward: str) -> tuple[Path, Path, Path]:
    """A KernelBench problem file written from ``source``; its own Model as a candidate (ModelNew = Model,
    which must pass); and a candidate whose ModelNew is Model with ``variant_forward`` (a whole method)."""
    problem, own, variant = folder / "problem.py", folder / "own_model.py", folder / "variant.py"
    problem.write_text(source)
    own.write_text(source + "\nModelNew = Model\n")
    variant.write_text(source + "\nclass ModelNew(Model):\n" + textwrap.indent(textwrap.dedent(variant_forward), "    "))
    return problem, own, variant


def repo_pythonpath() -> str:
    """PYTHONPATH for a child process: this checkout first, then whatever the caller had (the GPU machine
    installs the dependencies into a folder named only by PYTHONPATH; replacing it loses them)."""
    return os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


def processes_of_cache(cache: Path) -> list[int]:
    """The running processes (zombies aside) of calls that used this private kernel_mcp cache: each process
    of a call carries it in its environment (judge, hosts, step hosts, whatever a candidate forked)."""
    from kernel_mcp.cache import CACHE_VAR
    from kernel_mcp.worker import proctree
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
# itself, so the others cannot keep it waiting by coming in one after another.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    worker = getattr(item.config, "workerinput", None)
    if worker is None:  # not in parallel: nothing to keep apart
        yield
        return
    import fcntl
    import tempfile
    locks = Path(tempfile.gettempdir()) / f"kernel_mcp-tests-{worker['testrunuid']}"
    locks.mkdir(exist_ok=True)
    alone = item.get_closest_marker("alone") is not None
    with open(locks / "gate", "a") as gate, open(locks / "room", "a") as room:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield  # setup (module fixtures included), call and teardown
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)
            fcntl.flock(gate, fcntl.LOCK_UN)


def _has_gpu() -> bool:
    import torch
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    # tests marked `long` first: parallel workers then end together instead of one finishing a long test
    # alone (the same order in every worker, as pytest-xdist requires)
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
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
