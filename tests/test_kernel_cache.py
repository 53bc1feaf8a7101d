"""worker/isolation/kernel_cache.py: each candidate's kernel builds kept apart, copied in without touching what a
running process has loaded, Triton's group files pointing at the copy."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cheats import VECTOR_ADD

from kernel_mcp.tools.check import check
from kernel_mcp.worker.isolation import kernel_cache, sandbox

REUSE = Path(__file__).resolve().parent / "fixtures" / "cpp" / "reuse_kept_build.py"


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    return kernel_cache.store()


def build(scratch, entry: str, files: dict[str, str]) -> None:
    """What Triton writes for one build: files in a folder named by its hash, and a group naming them."""
    folder = scratch / "triton" / entry
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    group = {name: str(folder / name) for name in files}
    (folder / "__grp__kernel.json").write_text(json.dumps({"child_paths": group}))


def test_builds_travel_from_one_process_to_the_next_of_the_same_candidate(store, tmp_path):
    candidate = tmp_path / "c.py"
    candidate.write_text("x = 1\n")
    key = kernel_cache.key_for(candidate)
    first, second = tmp_path / "first", tmp_path / "second"
    kernel_cache.prepare(first)
    build(first, "HASH1", {"kernel.cubin": "binary", "kernel.json": "{}"})
    kernel_cache.keep(key, first)
    kernel_cache.prepare(second)
    kernel_cache.fill(key, second)
    copied = second / "triton" / "HASH1"
    assert (copied / "kernel.cubin").read_text() == "binary"
    children = json.loads((copied / "__grp__kernel.json").read_text())["child_paths"]
    assert children == {"kernel.cubin": str(copied / "kernel.cubin"), "kernel.json": str(copied / "kernel.json")}


def test_filling_never_rewrites_a_file_a_running_process_may_have_loaded(store, tmp_path):
    candidate = tmp_path / "c.py"
    candidate.write_text("x = 1\n")
    key = kernel_cache.key_for(candidate)
    earlier, running = tmp_path / "earlier", tmp_path / "running"
    kernel_cache.prepare(earlier)
    build(earlier, "STUB", {"cuda_utils.so": "kept copy"})
    kernel_cache.keep(key, earlier)
    kernel_cache.prepare(running)
    build(running, "STUB", {"cuda_utils.so": "loaded"})
    loaded = running / "triton" / "STUB" / "cuda_utils.so"
    inode = loaded.stat().st_ino
    kernel_cache.fill(key, running)
    assert loaded.read_text() == "loaded" and loaded.stat().st_ino == inode


def test_a_lock_left_by_a_killed_build_is_never_copied(store, tmp_path):
    """torch's extension build holds a file named ``lock`` in the build folder (its FileBaton) and waits while one
    exists: a process killed mid-build leaves it, and a copy of it would hang every later check of the candidate
    until its time ran out. The rest of the build travels."""
    import inspect

    from torch.utils import cpp_extension
    assert "'lock'" in inspect.getsource(cpp_extension._jit_compile)  # the name torch gives its baton
    candidate = tmp_path / "c.py"
    candidate.write_text("x = 1\n")
    key = kernel_cache.key_for(candidate)
    killed, fresh = tmp_path / "killed", tmp_path / "fresh"
    kernel_cache.prepare(killed)
    folder = killed / "torch_extensions" / "py311_cpu" / "ext"
    folder.mkdir(parents=True)
    (folder / "main.cpp").write_text("int f();")
    (folder / "lock").write_text("")
    kernel_cache.keep(key, killed)
    kernel_cache.prepare(fresh)
    kernel_cache.fill(key, fresh)
    copied = fresh / "torch_extensions" / "py311_cpu" / "ext"
    assert (copied / "main.cpp").read_text() == "int f();" and not (copied / "lock").exists()


def test_another_candidate_gets_none_of_its_builds(store, tmp_path):
    one, other = tmp_path / "one.py", tmp_path / "other.py"
    one.write_text("x = 1\n")
    other.write_text("x = 2\n")
    scratch, fresh = tmp_path / "s1", tmp_path / "s2"
    kernel_cache.prepare(scratch)
    build(scratch, "PLANTED", {"kernel.cubin": "poison"})
    kernel_cache.keep(kernel_cache.key_for(one), scratch)
    kernel_cache.prepare(fresh)
    kernel_cache.fill(kernel_cache.key_for(other), fresh)
    assert not (fresh / "triton" / "PLANTED").exists()


def test_a_malformed_or_wandering_group_points_nowhere_outside(store, tmp_path):
    candidate = tmp_path / "c.py"
    candidate.write_text("x = 1\n")
    key = kernel_cache.key_for(candidate)
    scratch, next_one = tmp_path / "s1", tmp_path / "s2"
    kernel_cache.prepare(scratch)
    build(scratch, "H", {"kernel.cubin": "b"})
    (scratch / "triton" / "H" / "__grp__evil.json").write_text(json.dumps({"child_paths": {"k": "/etc/passwd"}}))
    (scratch / "triton" / "H" / "__grp__bad.json").write_text("{not json")
    kernel_cache.keep(key, scratch)
    kernel_cache.prepare(next_one)
    kernel_cache.fill(key, next_one)
    folder = next_one / "triton" / "H"
    assert json.loads((folder / "__grp__evil.json").read_text())["child_paths"] == {"k": str(folder / "passwd")}
    assert not (folder / "__grp__bad.json").exists()


def test_old_entries_are_pruned(store, tmp_path, monkeypatch):
    monkeypatch.setattr(kernel_cache, "KEEP_ENTRIES", 2)
    for i in range(4):
        candidate = tmp_path / f"c{i}.py"
        candidate.write_text(f"x = {i}\n")
        scratch = tmp_path / f"s{i}"
        kernel_cache.prepare(scratch)
        build(scratch, f"H{i}", {"k": "b"})
        kernel_cache.keep(kernel_cache.key_for(candidate), scratch)
    assert len(list(store.iterdir())) == 2


def test_a_kept_load_inline_build_is_loaded_not_built_again(tmp_path):
    """torch writes its build folder's absolute path into build.ninja, so a kept build copied into another
    process's scratch folder was built again: each process now builds at a path its mount namespace makes the
    same. The fixture fails its own import when it finds a kept build and torch builds it again anyway."""
    if not sandbox.sealed_for_candidates((str(tmp_path),)):
        pytest.skip("candidates get no mount namespace here: a kept torch build is built again, as before")
    candidate = tmp_path / "reuse_kept_build.py"  # a path of its own: a store entry of its own
    candidate.write_bytes(REUSE.read_bytes())
    first = check(VECTOR_ADD, candidate, device="cpu")
    assert first.passed, (first.verdict, [f.message for f in first.findings])
    entry = kernel_cache.store() / kernel_cache.key_for(candidate)
    assert any(entry.rglob("kmcp_reuse_kept*.so")) and not any(entry.rglob("lock"))
    second = check(VECTOR_ADD, candidate, device="cpu")
    assert second.passed, (second.verdict, [f.message for f in second.findings])


def _extension(scratch, ninja: str, so: str = "built"):
    folder = scratch / "torch_extensions" / "ext"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "build.ninja").write_text(ninja)
    (folder / "ext.so").write_text(so)
    return folder


SHARED = f"build main.o: compile /cache/scratch/{kernel_cache.BUILD_PATH}/ext/main.cpp\n"


def test_an_extension_built_again_at_the_shared_path_replaces_the_kept_one_and_nothing_else_does(store, tmp_path):
    """A build kept from another path (or toolchain) is built again at the shared build path; that build replaces the
    kept one, else every later check would build it again. One made in a scratch folder (no mount namespace: its
    paths differ every run) never replaces one, nor does a build.ninja too large to be a build's."""
    candidate = tmp_path / "c.py"
    candidate.write_text("x = 1\n")
    key = kernel_cache.key_for(candidate)
    kept = store / key / "torch_extensions" / "ext"
    for k, (ninja, so, replaced) in enumerate([("old paths\n", "first", True), (SHARED, "second", True),
                                               ("scratch paths\n", "third", False)]):
        scratch = tmp_path / f"s{k}"
        kernel_cache.prepare(scratch)
        _extension(scratch, ninja, so)
        kernel_cache.keep(key, scratch)
        assert (kept / "ext.so").read_text() == ("second" if k else "first"), k
    huge = tmp_path / "huge"
    kernel_cache.prepare(huge)
    folder = _extension(huge, SHARED, "huge")
    with open(folder / "build.ninja", "r+b") as f:
        f.truncate(kernel_cache.NINJA_MAX_BYTES + 1)  # sparse: never read whole
    kernel_cache.keep(key, huge)
    assert (kept / "ext.so").read_text() == "second"
    assert sorted(p.name for p in kept.parent.iterdir()) == ["ext"]  # no partial or set-aside copy left


def test_a_store_entry_linked_elsewhere_never_gets_a_folder_replaced(store, tmp_path):
    """Without a mount namespace a candidate can write the store, and could link its entry's torch_extensions to any
    folder: a kept build is replaced only where no link stands between the store and it (a review, thirtieth
    session)."""
    candidate = tmp_path / "c.py"
    candidate.write_text("x = 1\n")
    key = kernel_cache.key_for(candidate)
    victim = tmp_path / "victim" / "ext"
    victim.mkdir(parents=True)
    (victim / "precious.txt").write_text("keep me")
    (store / key).mkdir(parents=True)
    (store / key / "torch_extensions").symlink_to(victim.parent)
    scratch = tmp_path / "s"
    kernel_cache.prepare(scratch)
    _extension(scratch, SHARED)
    kernel_cache.keep(key, scratch)
    assert (victim / "precious.txt").read_text() == "keep me" and not (victim / "ext.so").exists()


def test_a_build_kept_with_another_torch_is_never_filled_in(store, tmp_path, monkeypatch):
    """ninja tracks commands and file times, not the torch library an extension was linked against: a kept build
    from before torch changed must not be loaded after (an undefined symbol at import fails an honest kernel)."""
    candidate = tmp_path / "c.py"
    candidate.write_text("x = 1\n")
    before = kernel_cache.key_for(candidate)
    monkeypatch.setattr(kernel_cache, "_toolchain", lambda: "python (3, 11, 7) torch 99.0")
    assert kernel_cache.key_for(candidate) != before
