"""bench/batch_bounds.py: the rate a batch's memory x time and CPU seconds allow, from the files a GPU run returns."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from batch_bounds import bounds  # noqa: E402

from kernel_mcp.worker.needs import problem_key  # noqa: E402

GIB = 1 << 30


def _run_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A KernelBench root of two problems and a batch's files: a large problem judged twice (one check ran into its
    call's time limit), a small one once; 3 nvcc builds, of which the two CUDA candidates' sources tell."""
    kb = tmp_path / "KB"
    (kb / "level1").mkdir(parents=True)
    large, small = kb / "level1" / "1_Large.py", kb / "level1" / "2_Small.py"
    for path in (large, small):
        path.write_text("# a problem\n")
    cuda, plain = tmp_path / "cuda.py", tmp_path / "plain.py"
    cuda.write_text("load_inline(name='k', cpp_sources='', cuda_sources=src)\n")
    plain.write_text("import torch\n")
    rows = [
        {"id": "a", "problem": "1_Large.py", "candidate": str(cuda), "seconds": 30.0, "phases": {"measured_at": 10.0}},
        {"id": "b", "problem": "1_Large.py", "candidate": str(cuda), "seconds": 200.0, "cause": "timeout",
         "phases": {"measured_at": 2.0, "admitted_at": 20.0}},
        {"id": "c", "problem": "2_Small.py", "candidate": str(plain), "seconds": 5.0, "phases": {"measured_at": 1.0}},
    ]
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "results-batch.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    peaks = {large: 40 * GIB, small: 4 * GIB}  # reserved x1.25: 50 and 5 GiB
    (folder / "memory.json").write_text(json.dumps(
        {f"NVIDIAH100-85520809984:{problem_key(SimpleNamespace(path=p))}": peak for p, peak in peaks.items()}))
    summary = {"batch": {"per_hour": 300, "cpu_s": {"compilers": 150.0, "python": 60.0, "runs": {"nvcc": 3}}}}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder, kb


def test_bounds_follow_the_memory_each_check_held_and_the_cpu_each_candidate_cost(tmp_path):
    folder, kb = _run_folder(tmp_path)
    found = bounds(folder, kb, [80.0], [16])
    # held: a 50 GiB x 20 s, b 50 GiB x 180 s (from its admission), c 5 GiB x 4 s
    assert found["gib_s"] == 1000 + 9000 + 20
    assert found["largest"][0] == [9000, "b", "1_Large.py"]
    assert found["memory_per_hour"]["80.0"] == round(0.9 * 80 * 3600 / (10020 / 3))
    assert found["memory_per_hour_without_timeouts"]["80.0"] == round(0.9 * 80 * 3600 / (1020 / 2))
    # 50 CPU-s a CUDA build, 20 a candidate's judging, 2 of 3 candidates build CUDA
    assert found["cpu"] == {"cuda_build_s": 50.0, "judging_s": 20.0, "cuda_share": round(2 / 3, 2)}
    assert found["cpu_per_hour"]["16"] == round(16 * 3600 / (2 / 3 * 50 + 20))
    assert found["problems_without_record"] == []


def test_a_problem_without_a_memory_record_is_named_not_counted(tmp_path):
    folder, kb = _run_folder(tmp_path)
    (kb / "level1" / "1_Large.py").rename(kb / "level1" / "1_Large_moved.py")  # its record's key no longer matches
    found = bounds(folder, kb, [80.0], [16])
    assert found["problems_without_record"] == ["1_Large.py"] and found["gib_s"] == 20


def test_a_folder_without_the_runs_files_is_a_usage_error(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "bench" / "batch_bounds.py"), str(tmp_path), "--problems",
                           str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2 and "lacks results-batch.jsonl, memory.json, summary.json" in done.stderr


def test_records_of_two_gpu_models_are_refused_not_mixed(tmp_path):
    folder, kb = _run_folder(tmp_path)
    records = json.loads((folder / "memory.json").read_text())
    records.update({key.replace("NVIDIAH100", "NVIDIAH200"): 1 for key in records})
    (folder / "memory.json").write_text(json.dumps(records))
    with pytest.raises(SystemExit, match="2 GPU models"):
        bounds(folder, kb, [80.0], [16])


def test_the_loops_checks_go_to_the_gpu_running_the_fewest():
    """bench/batch_bench.py --gpus: one-shot checks spread as the batch's pool spreads its checks."""
    from batch_bench import GpuTurns
    turns = GpuTurns([{"CUDA_VISIBLE_DEVICES": "0"}, {"CUDA_VISIBLE_DEVICES": "1"}])
    with turns.least_busy() as first, turns.least_busy() as second:
        with turns.least_busy() as third:
            assert [first, second, third] == [{"CUDA_VISIBLE_DEVICES": g} for g in "010"]
        with turns.least_busy() as fourth:  # GPU 0 runs one again (third ended), GPU 1 one
            assert fourth == {"CUDA_VISIBLE_DEVICES": "0"}
    with GpuTurns([]).least_busy() as unpinned:
        assert unpinned == {}
