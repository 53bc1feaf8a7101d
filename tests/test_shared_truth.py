"""A batch's candidates of one problem share their secret inputs and the reference's float64 truth
(batch/sharing.py, worker/judge/shared_truth.py): computed by the first check, read back by the others, with
the verdicts ``check`` gives alone; entries useless to whoever holds no secret; nothing gained by candidates
that pass notes. Real judges on the CPU."""
from __future__ import annotations

import io
import secrets
import shutil
from pathlib import Path

import pytest
import torch
from test_cheats import CHEATS, VECTOR_ADD

from kernel_mcp.batch.sharing import BatchSharing, scheduled
from kernel_mcp.batch.sources import Item
from kernel_mcp.tools.check import check
from kernel_mcp.worker.judge.shared_truth import SharedTruth, Truth
from kernel_mcp.worker.protocol import SharedReference
from kernel_mcp.worker.runners.redact import Redactor, remember

SOLUTIONS = VECTOR_ADD / "solutions"
HONEST, WRONG = SOLUTIONS / "correct" / "torch_add.py", SOLUTIONS / "wrong" / "sum_in_half.py"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
BATCHNORM_MODEL = """
import torch
import torch.nn as nn

class Model(nn.Module):  # training mode, as KernelBench runs it: every call moves BatchNorm's running statistics
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.bn(self.linear(x)){tail}

def get_inputs():
    return [torch.rand(64, 96)]

def get_init_inputs():
    return [96]
"""


def _share(folder: Path) -> SharedReference:
    folder.mkdir(parents=True, exist_ok=True)  # the batch makes it (batch/sharing.py); a judge never does
    return SharedReference(secret=secrets.token_hex(32), store=str(folder))


# on a GPU the first failing case is run twice more, as before and serialized, to ask whether it races
# (worker/judge/reruns.py): two more lookups of that case's truth
RACE_RERUNS = {"cpu": 0, "cuda": 2}


def _stored(result) -> tuple[int, int]:
    """(cases whose truth came from the store, cases looked up), from the check's finding."""
    finding = next(f for f in result.findings if f.code == "shared_reference")
    words = finding.message.split()
    return int(words[0]), int(words[3])


@pytest.mark.parametrize("device", DEVICES)
def test_a_problems_truth_is_computed_once_and_the_verdicts_are_checks_own(tmp_path, device):
    shared = _share(tmp_path / "store")
    first = check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device=device, shared=shared)
    honest = check(VECTOR_ADD, HONEST, device=device, shared=shared)
    wrong = check(VECTOR_ADD, WRONG, device=device, shared=shared)
    assert first.passed and honest.passed and not wrong.passed
    found, looked = _stored(first)
    repeats = [c.name for c in first.cases if c.name.endswith("(repeated)")]
    assert repeats == ["test 0 (repeated)"] and found == 1 and looked == len(first.cases)  # the repeat reads test 0's
    assert _stored(honest) == (len(honest.cases), len(honest.cases)), honest.findings  # every case, drawn shapes too
    assert _stored(wrong)[0] > 0
    alone = [check(VECTOR_ADD, path, device=device) for path in (HONEST, WRONG)]
    assert [r.verdict for r in alone] == [honest.verdict, wrong.verdict]
    listed = lambda result: [(c.name, c.passed) for c in result.cases if c.name.startswith("test")]  # noqa: E731
    assert listed(alone[1]) == listed(wrong)  # the same listed cases fail (a drawn shape differs between runs)
    assert not any(f.code == "shared_reference" for r in alone for f in r.findings)
    assert shared.secret not in honest.model_dump_json()


def test_the_trivial_answer_probe_is_shared_and_still_names_a_degenerate_problem(tmp_path):
    """The probe of the first test (four trivial answers judged: degenerate.py) is the same for every candidate
    served the same inputs; the second check reads it and still calls the problem degenerate."""
    folder = tmp_path / "zeros_problem"
    folder.mkdir()
    (folder / "task.yml").write_text("tests: [{n: 256, seed: 1}, {n: 100, seed: 2}]\n")
    (folder / "reference.py").write_text(
        "import torch\n\ndef generate_input(n, seed):\n"
        "    return (torch.randn(n, generator=torch.Generator().manual_seed(seed)),)\n\n"
        "def ref_kernel(data):\n    return data[0] * 0\n")
    (folder / "zeros.py").write_text("def custom_kernel(data):\n    return data[0] * 0\n")
    shared = _share(tmp_path / "store")
    first, second = (check(folder, folder / "zeros.py", device="cpu", shared=shared) for _ in range(2))
    for result in (first, second):
        assert result.problem_degenerate and result.verdict == "pass (degenerate problem)", result.findings
    said = [next(f.message for f in r.findings if f.code == "shared_reference") for r in (first, second)]
    assert "trivial-answer probe" not in said[0] and "trivial-answer probe" in said[1], said


@pytest.mark.parametrize("device", DEVICES)
def test_a_model_whose_calls_move_its_buffers_reads_them_back_with_the_truth(tmp_path, device):
    """KernelBench's BatchNorm in training mode: each float64 run moves the float64 model's running statistics,
    which the next case's key covers. A check that reads a truth from the store also takes the buffers that
    run left, so every later case still finds its own; the verdicts are check's."""
    problem = tmp_path / "bn_model.py"
    problem.write_text(BATCHNORM_MODEL.format(tail=""))
    honest, wrong = tmp_path / "honest.py", tmp_path / "wrong.py"
    for path, tail in ((honest, ""), (wrong, " * 1.001")):
        path.write_text(BATCHNORM_MODEL.format(tail=tail).replace("class Model(", "class ModelNew("))
    shared = _share(tmp_path / "store")
    first, second = (check(problem, honest, device=device, shared=shared) for _ in range(2))
    assert first.passed and second.passed, (first.verdict, first.findings)
    assert _stored(first)[0] == 0 and _stored(second) == (len(second.cases), len(second.cases)), second.findings
    assert not check(problem, wrong, device=device, shared=shared).passed


def test_entries_tell_nothing_without_the_secret_and_a_changed_one_is_recomputed(tmp_path):
    """The store as a candidate or another batch could find it: not loadable, not readable under another
    secret; an entry changed or planted under a real name is a miss, and the verdicts stay right."""
    store = tmp_path / "store"
    shared = _share(store)
    check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu", shared=shared)
    entries = sorted(store.iterdir())
    assert entries
    mine, other = SharedTruth(shared.secret, str(store), "x"), SharedTruth(secrets.token_hex(32), str(store), "x")
    for entry in entries:
        with pytest.raises(Exception):
            torch.load(io.BytesIO(entry.read_bytes()), weights_only=False)
        assert mine.load(entry.name) is not None and other.load(entry.name) is None
    (tmp_path / "planted").mkdir()
    planted = SharedTruth(secrets.token_hex(32), str(tmp_path / "planted"), "x")  # valid under another secret
    planted.save("p", Truth(ref64=(torch.zeros(1), []), terms=[], magnitude=None, findings=[]), complete=True)
    for i, entry in enumerate(entries):
        if i % 2:
            blob = bytearray(entry.read_bytes())
            blob[len(blob) // 2] ^= 1
            entry.write_bytes(bytes(blob))
        else:
            shutil.copy(tmp_path / "planted" / "p", entry)
    honest = check(VECTOR_ADD, HONEST, device="cpu", shared=shared)
    wrong = check(VECTOR_ADD, WRONG, device="cpu", shared=shared)
    assert honest.passed and not wrong.passed
    assert _stored(honest)[0] == 0  # nothing believed; each recomputed (and kept again for the next)


@pytest.mark.parametrize("device", DEVICES)
def test_colluding_candidates_served_the_same_secret_inputs_gain_nothing(tmp_path, device):
    """The pair of test_batch, now served the *same* secret inputs (the batch's sharing, seen working: the
    reader's truths came from the writer's check): the reader still fails every case, the secret ones too,
    because its check shares no writable place with the writer's."""
    folder = tmp_path / "pair"
    folder.mkdir()
    for name in ("collude_writer", "collude_reader"):
        shutil.copy(CHEATS / f"{name}.py", folder)
    places = [Path("/dev/shm"), Path("/dev"), Path("/tmp"), Path.home() / ".cache", folder]
    shared = _share(tmp_path / "store")
    try:
        writer = check(VECTOR_ADD, folder / "collude_writer.py", device=device, shared=shared)
        reader = check(VECTOR_ADD, folder / "collude_reader.py", device=device, shared=shared)
        assert writer.passed, writer.findings
        found, looked = _stored(reader)
        assert found == looked == len(reader.cases) + RACE_RERUNS[device]  # the very inputs the writer saw
        assert not any(case.passed for case in reader.cases), [(c.name, c.passed) for c in reader.cases]
    finally:
        for place in places:
            shutil.rmtree(place / "kernel_mcp_collusion", ignore_errors=True)


@pytest.mark.gpu
def test_answers_left_in_freed_device_memory_reach_no_later_candidate(tmp_path):
    """The GPU's memory as the note: the writer leaves each answer (behind a marker and its inputs' hash) in
    device memory it frees to the driver; the reader, next in the same lane (the same secret inputs), searches
    1 GiB of fresh memory it never wrote. A driver that clears memory between processes leaves it nothing."""
    folder = tmp_path / "pair"
    folder.mkdir()
    for name in ("gpu_residue_writer", "gpu_residue_reader"):
        shutil.copy(CHEATS / f"{name}.py", folder)
    shared = _share(tmp_path / "store")
    writer = check(VECTOR_ADD, folder / "gpu_residue_writer.py", device="cuda", shared=shared)
    reader = check(VECTOR_ADD, folder / "gpu_residue_reader.py", device="cuda", shared=shared)
    assert writer.passed, writer.findings
    assert _stored(reader)[0] == _stored(reader)[1] == len(reader.cases) + RACE_RERUNS["cuda"]
    assert not any(case.passed for case in reader.cases), [(c.name, c.passed) for c in reader.cases]


def test_candidates_running_at_once_never_share_inputs_and_a_problems_store_goes_with_its_last(tmp_path):
    """Lanes (batch/sharing.py): two candidates of a problem judged at the same moment get different secrets
    (no live note between them is worth passing); the next one takes a freed lane and its secret, so it reads
    what that lane's last candidate kept. A problem's store goes after its last candidate; a new run starts
    clean."""
    a, b = tmp_path / "a", tmp_path / "b.py"
    (tmp_path / ".shared_truth" / "leftover").mkdir(parents=True)  # an earlier run's, under a secret now gone
    c = tmp_path / "c.py"
    items = [Item("1", a, tmp_path / "1.py"), Item("2", b, tmp_path / "2.py"), Item("3", a, tmp_path / "3.py"),
             Item("4", a, tmp_path / "4.py"), Item("5", c, tmp_path / "5.py")]
    # two at a time: problems a and b side by side, a candidate of each in turn, then c
    assert [i.id for i in scheduled(items, 2)] == ["1", "2", "3", "4", "5"]
    assert [i.id for i in scheduled(items, 1)] == ["1", "3", "4", "2", "5"]
    assert [i.id for i in scheduled(items, 3)] == ["1", "2", "5", "3", "4"]
    items = items[:4]
    sharing = BatchSharing(tmp_path, [i.problem for i in items])
    assert not (tmp_path / ".shared_truth" / "leftover").exists()
    (first, lane0), (second, lane1) = sharing.take(a), sharing.take(a)
    (other, _) = sharing.take(b)
    assert (lane0, lane1) == (0, 1) and first.secret != second.secret and first.store != second.store
    assert Path(first.store).is_dir() and Path(other.store).is_dir()
    sharing.done(a, lane0)
    again, lane = sharing.take(a)
    assert lane == 0 and again == first  # one after another: the same inputs and store
    assert Redactor().text(f"x {first.secret} y") == "x [redacted the batch's secret] y"
    sharing.done(a, lane1)
    assert Path(first.store).exists()
    sharing.done(a, lane)
    assert not Path(first.store).exists() and Path(other.store).exists()
    sharing.close()
    assert not (tmp_path / ".shared_truth").exists()


def test_a_secret_remembered_after_the_runner_was_made_is_still_redacted():
    redactor = Redactor(environ={})
    value = secrets.token_hex(16)
    remember(value, "late")
    assert redactor.text(value) == "[redacted late]"
