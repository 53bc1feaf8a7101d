"""The tune agent end to end on the CPU (Triton's interpreter), with the real profile tool: a copy of the
bundled vector_add whose one test shape has 65,536 elements, so that under the interpreter the time is
the number of programs (n / BLOCK): the best BLOCK is known to be the largest tried, 8192."""
import shutil

import pytest
import yaml

from kernel_mcp.agent.tune.driver import Tuner
from kernel_mcp.results import ProfileSettings

from conftest import PROBLEMS


@pytest.mark.alone  # it finds the best block by timing on the CPU
def test_tune_finds_the_known_best_block_and_confirms_it(tmp_path):
    problem = tmp_path / "vector_add"
    shutil.copytree(PROBLEMS / "vector_add", problem)
    spec = yaml.safe_load((problem / "task.yml").read_text())
    spec["tests"] = [{"n": 65536, "itemsize": 4, "seed": 7}]
    (problem / "task.yml").write_text(yaml.safe_dump(spec))
    said = []
    tuner = Tuner(problem, problem / "baseline.py", tmp_path / "work", device="cpu", only=["BLOCK"],
                  settings=ProfileSettings(budget_s=3.0, shapes="tests", min_samples=8), on_progress=said.append)
    result = tuner.run()
    # 64 programs -> 16 or 8: each step is taken only on a significant gain, so under a loaded CPU the last
    # (16 -> 8 programs) may not be; the winner must be confirmed in a fresh run either way
    assert result.start == {"BLOCK": 1024} and result.best["BLOCK"] in (4096, 8192), (result, said)
    assert result.speedup and result.speedup[1] > 1.5
    best = result.best["BLOCK"]
    assert result.failed == 0 and f"BLOCK = {best}" in (tmp_path / "work" / result.best_file.split("/")[-1]).read_text()
    assert any("BLOCK 1024 -> 2048" in line for line in said)



def test_once_the_budget_is_spent_the_search_stops_but_its_winner_is_still_confirmed(tmp_path, monkeypatch):
    """A search cut off by the run's budget must not throw away what it found: its confirmation (one
    comparison) runs anyway; ordinary comparisons do not."""
    from kernel_mcp.agent.tune import driver
    from kernel_mcp.stats import Ratio
    timed = []

    def fake_compare(problem, a, b, device, settings, runner):  # what the real profile would answer
        timed.append((a.name, b.name))
        return Ratio(1.5, 1.3, 1.7)
    monkeypatch.setattr(driver, "compare_files", fake_compare)
    tuner = Tuner(PROBLEMS / "vector_add", PROBLEMS / "vector_add" / "baseline.py", tmp_path, device="cpu",
                  stop=lambda: True)
    start = {p.name: p.current for p in tuner.params}
    other = {**start, "BLOCK": start["BLOCK"] * 2}
    assert tuner.compare(start, other) is None and not timed
    assert tuner.compare(start, other, what="confirm") == Ratio(1.5, 1.3, 1.7) and len(timed) == 1


def test_a_configuration_file_torn_by_a_kill_is_written_again_whole(tmp_path):
    tuner = Tuner(PROBLEMS / "vector_add", PROBLEMS / "vector_add" / "baseline.py", tmp_path, device="cpu")
    config = {p.name: p.current for p in tuner.params}
    path = tuner.file_of(config)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # what a kill in the middle of a plain write leaves
    assert tuner.file_of(config) == path and path.read_bytes() == whole
