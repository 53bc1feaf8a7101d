"""bench/cpu_use.py: CPU seconds of the processes below this one, by kind, read from /proc while they run."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from cpu_use import CpuUse, kind  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux's /proc")

BUSY = "import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end:\n    pass\n"


def test_a_grandchild_s_cpu_time_is_counted_under_its_kind():
    # a shell that starts Python: the Python process is two levels down, and only its CPU time is Python's
    with CpuUse(interval_s=0.1) as use:
        subprocess.run(["sh", "-c", f'"{sys.executable}" -c "$0"', BUSY.format(seconds=1.0)], check=True)
    seconds = use.seconds()
    assert use.compiler_runs() == {}
    assert 0.8 <= seconds["python"] <= 1.5  # one second of CPU: what the last reading before it ended saw
    assert seconds["compilers"] == 0
    assert seconds["total"] == pytest.approx(sum(v for k, v in seconds.items() if k != "total"), abs=0.2)


def test_processes_outside_the_tree_are_not_counted():
    outside = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=1.0)])
    try:
        with CpuUse(root=1 << 22, interval_s=0.1) as use:  # a pid with no children: nothing is below it
            outside.wait()
    finally:
        outside.kill()
    assert use.seconds()["total"] == 0


def test_compiler_processes_are_told_apart():
    assert kind("cicc") == kind("cudafe++") == kind("cc1plus") == kind("ninja") == "compilers"
    assert kind("python3.11") == "python" and kind("bash") == "other"


def test_what_a_process_used_before_the_block_is_not_counted():
    # a child that burns a second, then sleeps through the block: the block saw it use nothing
    child = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=1.0) + "time.sleep(30)\n"])
    try:
        time.sleep(0.1)
        while _cpu_seconds(child.pid) < 1.0:
            time.sleep(0.1)
        with CpuUse(interval_s=0.1) as use:
            time.sleep(0.5)
    finally:
        child.kill()
        child.wait()
    assert use.seconds()["python"] < 0.2


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_compiler_runs_count_the_compilers_started_in_the_block(tmp_path):
    source = tmp_path / "big.c"  # long enough to be seen by a sampler every 0.05 s
    source.write_text("".join(f"int f{i}(int x) {{ return x * {i} + {i % 7}; }}\n" for i in range(4000)))
    with CpuUse(interval_s=0.05) as use:
        for _ in range(2):
            subprocess.run(["gcc", "-O2", "-c", str(source), "-o", str(tmp_path / "big.o")], check=True)
    assert use.compiler_runs().get("cc1") == 2
    assert use.seconds()["compilers"] > 0
