"""Builds ahead of the checks (kernel_mcp/batch/prebuild.py, worker/steps/prebuild.py): a batch's load_inline
candidates are built in step hosts with no device memory reserved, and each check loads its own candidate's build.
The scheduling with a runner that records its steps; the build and its reuse with real processes, real torch."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from test_cheats import VECTOR_ADD

from kernel_mcp.batch.judging import default_builds, judge_batch
from kernel_mcp.batch.prebuild import Prebuilds, builds_allowed
from kernel_mcp.batch.sources import Item
from kernel_mcp.tools.check import check
from kernel_mcp.worker import LocalRunner
from kernel_mcp.worker.isolation import kernel_cache, sandbox

FIXTURES = Path(__file__).resolve().parent / "fixtures"
BUILDS = "from torch.utils.cpp_extension import load_inline  # marks a build on import\n"


class StepRecorder:
    """A runner that records the prebuild steps asked of it; ``hold``: candidates whose step waits for ``go``."""
    local_builds = True

    def __init__(self, hold: tuple[str, ...] = ()):
        self.hold, self.go, self.built, self.lock = hold, threading.Event(), [], threading.Lock()

    def step(self, request, problem, timeout_s, device=None):
        assert request.kind == "prebuild" and device is None  # a build ahead never holds a device
        if Path(request.candidate).stem in self.hold:
            assert self.go.wait(30)
        with self.lock:
            self.built.append(Path(request.candidate).stem)


def _items(tmp_path: Path, names: dict[str, str]) -> list[Item]:
    items = []
    for name, source in names.items():
        (tmp_path / f"{name}.py").write_text(source)
        items.append(Item(id=name, problem=VECTOR_ADD, candidate=tmp_path / f"{name}.py"))
    return items


def test_checks_take_candidates_as_their_builds_end(tmp_path):
    """A slow build holds up no other candidate: the one after it, built sooner, and one that builds nothing are
    handed out first."""
    runner = StepRecorder(hold=("slow",))
    items = _items(tmp_path, {"slow": BUILDS, "fast": BUILDS, "plain": "x = 1\n"})
    prebuilds = Prebuilds(items, runner, builds=2, ahead=8)
    try:
        first, second = prebuilds.take(), prebuilds.take()
        assert {first[0].id, second[0].id} == {"fast", "plain"}, (first, second)
        runner.go.set()
        last = prebuilds.take()
        assert last[0].id == "slow" and prebuilds.take() is None
        assert sorted(runner.built) == ["fast", "slow"]
    finally:
        runner.go.set()
        prebuilds.close()


def test_no_more_than_ahead_candidates_are_built_before_their_checks_take_them(tmp_path):
    """Builds run at most ``ahead`` in front of the checks, so the kernel store (which keeps the last
    kernel_cache.KEEP_ENTRIES candidates' builds) never drops a build before its check loads it."""
    runner = StepRecorder()
    items = _items(tmp_path, {f"c{k}": BUILDS for k in range(6)})
    prebuilds = Prebuilds(items, runner, builds=1, ahead=2)
    try:
        deadline = time.monotonic() + 30
        while len(runner.built) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # a broken window would have built all six by now (each step returns at once)
        assert len(runner.built) == 2, runner.built
        taken = [prebuilds.take()[0].id for _ in range(6)]
        assert taken == [f"c{k}" for k in range(6)] and len(runner.built) == 6
    finally:
        prebuilds.close()


def test_builds_ahead_only_where_the_checks_load_this_machines_builds():
    """A Ray cluster's nodes keep their own builds: none is made here for them, even when asked for; nor for a
    runner that does not say where its checks build."""
    assert builds_allowed(type("Cluster", (), {"local_builds": False})(), 4) == 0
    assert builds_allowed(object(), 4) == 0 and default_builds() >= 1
    if sandbox.sealed_for_candidates((str(FIXTURES),)):
        assert builds_allowed(LocalRunner(warm=False), 4) == 4


def _sealed(tmp_path: Path) -> None:
    if not sandbox.sealed_for_candidates((str(tmp_path),)):
        pytest.skip("candidates get no mount namespace here: a kept torch build is built again, as before")


def test_a_load_inline_candidate_built_ahead_is_loaded_by_its_check_not_built_again(tmp_path, monkeypatch):
    """The build is made in a step host, and the check's host loads it: the fixture fails its own import when it
    finds a kept build and torch builds it again (a step host that built another way, without the check's
    precompiled-header hook or at another path, would fail it). A failed build ahead leaves the verdict to the
    check: the same as the check alone gives."""
    _sealed(tmp_path)
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    reuse = (FIXTURES / "cpp" / "reuse_kept_build.py").read_text()
    broken = BUILDS + "raise RuntimeError('this candidate fails its import')\n"
    items = _items(tmp_path, {"reuse": reuse, "broken": broken})
    ledger = judge_batch(items, tmp_path / "out", LocalRunner(warm=False), device="cpu", jobs=1, timed=False,
                         builds=1)
    reused, failed = ledger.rows["reuse"], ledger.rows["broken"]
    assert reused.passed, (reused.verdict, reused.cause, reused.error)
    assert reused.phases["prebuild_s"] > 0 and "waited_s" in reused.phases
    assert any((kernel_cache.store() / kernel_cache.key_for(tmp_path / "reuse.py")).rglob("kmcp_reuse_kept*.so"))
    alone = check(VECTOR_ADD, tmp_path / "broken.py", device="cpu")
    assert (failed.verdict, failed.cause) == (alone.verdict, alone.cause) and not failed.passed


def test_a_kernelbench_candidate_that_builds_in_its_constructor_is_built_ahead_too(tmp_path, monkeypatch):
    """Its import builds nothing, so the build ahead constructs ModelNew from the problem's get_init_inputs(), and the
    check loads that build: the build is in the kernel store when the build ahead ends, and the fixture fails its
    constructor if its check builds it again."""
    _sealed(tmp_path)
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    problem = FIXTURES / "kernelbench" / "linear_gelu.py"
    candidate = tmp_path / "ctor.py"
    candidate.write_text((FIXTURES / "cpp" / "build_in_constructor.py").read_text())
    kept_after_step: list[bool] = []

    class Recording(LocalRunner):
        def step(self, request, *args, **kwargs):
            reply = super().step(request, *args, **kwargs)
            kept = kernel_cache.store() / kernel_cache.key_for(candidate)
            kept_after_step.append(any(kept.rglob("kmcp_ctor_build*.so")))
            return reply

    ledger = judge_batch([Item(id="ctor", problem=problem, candidate=candidate)], tmp_path / "out",
                         Recording(warm=False), device="cpu", jobs=1, timed=False, builds=1)
    row = ledger.rows["ctor"]
    assert row.passed, (row.verdict, row.cause, row.error)
    assert kept_after_step == [True], "the build ahead built nothing: ModelNew was not constructed there"


def test_a_reward_builds_its_rollout_ahead_and_its_check_loads_that_build(tmp_path, monkeypatch):
    """The reward API too: a rollout's load_inline build is made before its check, which loads it (the fixture
    fails its import if its check built it again)."""
    import asyncio

    from kernel_mcp.batch.reward import Rewarder
    _sealed(tmp_path)
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))

    class Recording(LocalRunner):
        steps: list[str] = []

        def step(self, request, *args, **kwargs):
            self.steps.append(request.kind)
            return super().step(request, *args, **kwargs)

    async def one():
        async with Rewarder(VECTOR_ADD, device="cpu", timed=False, concurrency=1,
                            runner=Recording(warm=False)) as rewarder:
            return await rewarder.one((FIXTURES / "cpp" / "reuse_kept_build.py").read_text())
    reward = asyncio.run(one())
    assert reward.passed and reward.value > 0 and Recording.steps == ["prebuild"], (reward, Recording.steps)


PLANTER = BUILDS + '''
import os
from pathlib import Path
# in the step host that builds it ahead: a note in every kept build it can reach, and in the shared build path
for root in (Path(os.environ["KERNEL_MCP_CACHE"]) / "kernels", Path(os.environ["TORCH_EXTENSIONS_DIR"]).parent):
    for folder in [root, *root.rglob("*")]:
        try:
            (folder / "planted_note").write_text("answers")
        except OSError:
            pass
raise RuntimeError("a planter, not a kernel")
'''


def test_a_build_ahead_plants_nothing_in_another_candidates_build(tmp_path, monkeypatch):
    """Its build ahead runs candidate code before the checks: a planter judged first writes a note wherever it
    can under the kernel store and beside its own build folder; the kept build of the candidate judged after it
    (and that candidate's check, which fails its import if its kept build was touched and rebuilt) sees none. Its
    own entry keeps its notes, for its own next check only, as a check's own host leaves them."""
    _sealed(tmp_path)
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    reuse = (FIXTURES / "cpp" / "reuse_kept_build.py").read_text()
    items = _items(tmp_path, {"planter": PLANTER, "reuse": reuse})
    first = judge_batch(items[1:], tmp_path / "first", LocalRunner(warm=False), device="cpu", jobs=1,
                        timed=False, builds=1)
    assert first.rows["reuse"].passed
    ledger = judge_batch([items[0], Item(id="again", problem=VECTOR_ADD, candidate=items[1].candidate)],
                         tmp_path / "out", LocalRunner(warm=False), device="cpu", jobs=1, timed=False, builds=1)
    assert not ledger.rows["planter"].passed and ledger.rows["again"].passed, ledger.rows
    own = kernel_cache.store() / kernel_cache.key_for(items[0].candidate)  # its own notes are kept for itself alone
    assert [p for p in (tmp_path / "cache").rglob("planted_note") if own not in p.parents] == []


LEAVER = '''"""Correct, and leaves each input it is served with its answer in its TMPDIR (its cases begin some
seconds after its check does: while the stasher's build ahead, started beside it, is looking)."""
import os
import time
import uuid

import torch

time.sleep(8)


def custom_kernel(data):
    a, b = data
    out = a + b
    torch.save((a.clone(), b.clone(), out.clone()), os.path.join(os.environ["TMPDIR"], f"ans-{uuid.uuid4().hex}.pt"))
    return out
'''

STASHER = BUILDS + '''
import glob, os, shutil, time
from pathlib import Path
import torch
STASH = Path(os.environ["TORCH_EXTENSIONS_DIR"]) / "stash"
if not STASH.is_dir():  # its build ahead: copy what the candidates checked meanwhile leave in their TMPDIRs
    STASH.mkdir(parents=True)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        for p in glob.glob("/tmp/kmcp-hosts-*/kmcp-tmp-*/ans-*.pt") + glob.glob("/tmp/*/kmcp-tmp-*/ans-*.pt"):
            try:
                shutil.copy(p, STASH / Path(p).name)
            except OSError:
                pass
        time.sleep(0.05)
ANSWERS = [torch.load(p) for p in STASH.glob("ans-*.pt")]


def custom_kernel(data):
    a, b = data
    for x, y, out in ANSWERS:
        if x.shape == a.shape and torch.equal(x, a) and torch.equal(y, b):
            return out.clone()
    return torch.zeros_like(a)
'''


def test_a_build_ahead_reads_nothing_the_candidates_checked_meanwhile_leave(tmp_path, monkeypatch):
    """The other direction (a review, thirty-first session: it passed before the fix). The stasher's build ahead
    runs while the leaver is checked, copies what the leaver leaves in its temporary folder into its own build
    folder, which is kept for its check, and its check, served the same batch inputs in the lane the leaver
    used, returns those answers. Every step host's namespace now covers the hosts' temporary root: it finds
    nothing, and fails."""
    _sealed(tmp_path)
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    items = _items(tmp_path, {"leaver": LEAVER, "stasher": STASHER})
    ledger = judge_batch(items, tmp_path / "out", LocalRunner(warm=False), device="cpu", jobs=1, timed=False,
                         builds=1)
    assert ledger.rows["leaver"].passed and ledger.rows["stasher"].phases["prebuild_s"] > 0, ledger.rows
    assert not ledger.rows["stasher"].passed, ledger.rows["stasher"]
