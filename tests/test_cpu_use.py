"""bench/cpu_use.py: CPU seconds of the processes below one, by kind, read from /proc while they run.

Each test roots the count at a shell made for it (``_root``): below the test's own process are whatever earlier tests
of its worker left running (warm judges, fork servers), which are none of these tests' business."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from cpu_use import CpuUse, kind  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")

# burns ``seconds`` of CPU, says so on its output, then sleeps ``rest`` seconds
BUSY = ("import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end:\n    pass\n"
        "print('burned', flush=True)\ntime.sleep({rest})\n")
PYTHON = '"$KMCP_PYTHON" -c "$KMCP_SCRIPT"'  # a shell's command for the Python program _env gives


def _env(seconds: float, rest: float = 0) -> dict[str, str]:
    return {**os.environ, "KMCP_PYTHON": sys.executable, "KMCP_SCRIPT": BUSY.format(seconds=seconds, rest=rest)}


def _root(script: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """A shell that waits for a line on its input, then runs ``script``: counting starts before any work does."""
    return subprocess.Popen(["sh", "-c", f"read go; {script}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env)


def _run(root: subprocess.Popen, interval_s: float = 0.1) -> CpuUse:
    with CpuUse(root=root.pid, interval_s=interval_s) as use:
        root.communicate("go\n", timeout=120)
    return use


def test_a_grandchild_s_cpu_time_is_counted_under_its_kind():
    # the shell starts Python: the Python process is below the root, and its CPU time is Python's
    use = _run(_root(PYTHON, _env(1.0)))
    seconds = use.seconds()
    assert use.compiler_runs() == {}
    assert 0.8 <= seconds["python"] <= 1.6  # one second of CPU and a start-up, less the last interval unread
    assert seconds["compilers"] == 0
    assert seconds["total"] == pytest.approx(sum(v for k, v in seconds.items() if k != "total"), abs=0.2)


def test_processes_outside_the_tree_are_not_counted():
    idle = _root("sleep 1")  # the root: it starts nothing but a sleep
    outside = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=1.0, rest=0)], stdout=subprocess.DEVNULL)
    try:
        use = _run(idle)
        outside.wait(timeout=120)
    finally:
        outside.kill()
    assert use.seconds()["python"] == 0 and use.seconds()["total"] < 0.2


def test_what_a_process_used_before_the_block_is_not_counted():
    # a child that burns a second and sleeps: counted from after its second, it used next to nothing
    root = subprocess.Popen(["sh", "-c", PYTHON], stdout=subprocess.PIPE, text=True, env=_env(1.0, rest=1.5))
    try:
        assert root.stdout.readline().strip() == "burned"
        with CpuUse(root=root.pid, interval_s=0.1) as use:
            root.wait(timeout=120)
    finally:
        root.kill()
    assert use.seconds()["python"] < 0.2


def test_compiler_runs_count_the_compilers_started_in_the_block(tmp_path):
    source = tmp_path / "big.c"  # long enough to be seen by a sampler every 0.05 s
    source.write_text("".join(f"int f{i}(int x) {{ return x * {i} + {i % 7}; }}\n" for i in range(1500)))
    compile_twice = f'gcc -O2 -c "{source}" -o "{tmp_path}/a.o" && gcc -O2 -c "{source}" -o "{tmp_path}/b.o"'
    use = _run(_root(compile_twice), interval_s=0.05)
    assert use.compiler_runs().get("cc1") == 2
    assert use.seconds()["compilers"] > 0


def test_compiler_processes_are_told_apart():
    assert kind("cicc") == kind("cudafe++") == kind("cc1plus") == kind("ninja") == "compilers"
    assert kind("python3.11") == "python" and kind("bash") == "other"
