"""Precompiled torch headers for candidates' load_inline builds (worker/isolation/header_cache.py,
worker/launch/headers.py): entries only for allowlisted flags enough candidates write; a build whose flags match
an entry takes it (GCC itself says so); the verdict is the one the check gives anyway; and a candidate cannot
change an entry or plant a header beside it. Real builds with the machine's compiler and torch."""
from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
import torch
from test_cheats import VECTOR_ADD

from kernel_mcp.batch.judging import precompile_headers
from kernel_mcp.batch.sources import Item
from kernel_mcp.tools.check import check
from kernel_mcp.worker.isolation import header_cache, kernel_cache, sandbox
from kernel_mcp.worker.launch.headers import ninja_variables

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "cpp"
HONEST, POISONER = FIXTURES / "add_inline_cpu.py", FIXTURES / "poison_headers.py"
REUSE = FIXTURES / "reuse_kept_build.py"


def _calling(flags) -> str:
    return f"from torch.utils.cpp_extension import load_inline\nload_inline('x', cpp_sources='', extra_cflags={flags!r})\n"


def test_entries_are_built_only_for_allowlisted_flags_that_enough_candidates_write():
    sources = ([_calling(["-O3"])] * 4 + [_calling([""]), _calling([]), _calling([" "])]
               + ["from torch.utils.cpp_extension import load_inline\nload_inline('x', cpp_sources='')\n"]
               + [_calling(["-O2"])] * 3  # too few to pay for an entry
               + [_calling(["-fplugin=/tmp/evil.so"])] * 9 + [_calling(["-O3", "-o", "/etc/cron.d/x"])] * 9
               + ["load_inline('x', cpp_sources='', extra_cflags=FLAGS + ['-O1'])\n"] * 9  # not a literal list
               + ["import torch  # builds nothing\nextra_cflags=['-O1']\n"] * 9)
    assert set(header_cache.flag_sets(sources)) == {("-O3",), ()}
    # the same flags as torch compiles them share an entry; CUDA builds (other include paths) have their own
    assert header_cache.entry_key([" -O3", ""], False) == header_cache.entry_key(["-O3"], False)
    assert header_cache.entry_key(["-O3"], True) != header_cache.entry_key(["-O3"], False)


def test_a_load_inline_build_takes_the_entry_and_no_candidate_can_change_it(tmp_path):
    # a batch of four candidates that build with -O3 (and a Triton-free one that builds nothing) asks for one entry
    items = [Item(id=f"c{k}", problem=VECTOR_ADD, candidate=HONEST) for k in range(4)]
    items.append(Item(id="plain", problem=VECTOR_ADD, candidate=VECTOR_ADD / "solutions" / "correct" / "torch_add.py"))
    builder = precompile_headers(items, "cpu", tmp_path / "headers.json")
    assert builder is not None
    builder.join()
    report = json.loads((tmp_path / "headers.json").read_text())
    assert report["flag_sets"] == [["-O3"]] and len(report["entries"]) == 1, report
    made = [Path(report["entries"][0])]
    gch = made[0] / "torch" / "extension.h.gch"
    before = (gch.stat().st_size, gch.stat().st_mtime_ns)

    honest = check(VECTOR_ADD, HONEST, device="cpu")
    assert honest.passed, (honest.verdict, [f.message for f in honest.findings])
    # the build this check made (kept in the kernel store) had the entry first on its include path, and the
    # compiler takes the entry for that very command: `-H` marks a precompiled header it used with "!"
    ninja = next((kernel_cache.store() / kernel_cache.key_for(HONEST)).rglob("build.ninja"))
    values = ninja_variables(ninja)
    assert f"-I{made[0]}" in shlex.split(values["cflags"])
    ran = subprocess.run([*shlex.split(values["cxx"]), *shlex.split(values["cflags"]), "-H", "-fsyntax-only",
                          str(ninja.parent / "main.cpp")], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert f"! {gch}" in ran.stderr.splitlines(), ran.stderr[:2000]

    poisoner = check(VECTOR_ADD, POISONER, device="cpu")
    assert poisoner.passed, poisoner.verdict  # it adds honestly: only its sabotage must fail, and does
    assert (gch.stat().st_size, gch.stat().st_mtime_ns) == before
    assert not gch.with_name("extension.h").exists()


def test_a_build_kept_from_before_its_entry_is_loaded_as_it_was_made(tmp_path, monkeypatch):
    """A batch's builds ahead start beside the entry's own build, so a candidate may be built before its entry
    exists. Its check then loads that build as it was made, rather than building it all again with the entry on
    its include path (the fixture fails its own import if a kept build is built again); a candidate built after
    the entry exists gets it. The entry here is one GCC refuses (not a precompiled header at all), which GCC passes
    over as it would a stale one: the test is of which builds are given it, in a cache of the test's own."""
    if not sandbox.sealed_for_candidates((str(tmp_path),)):
        pytest.skip("candidates get no mount namespace here: a kept torch build is built again, as before")
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    early = tmp_path / "early.py"
    early.write_bytes(REUSE.read_bytes())
    assert check(VECTOR_ADD, early, device="cpu").passed  # built while no entry exists

    folder = header_cache.entry(torch.__version__, [], False)  # the fixture's flags: none, no CUDA
    (folder / "torch").mkdir(parents=True)
    (folder / "torch" / (Path(header_cache.HEADER).name + ".gch")).write_bytes(b"not a precompiled header")
    again = check(VECTOR_ADD, early, device="cpu")
    assert again.passed, (again.verdict, [f.message for f in again.findings])
    assert f"-I{folder}" not in _kept_ninja(early)

    late = tmp_path / "late.py"
    late.write_text(REUSE.read_text().replace("kmcp_reuse_kept", "kmcp_built_after_the_entry"))
    built = check(VECTOR_ADD, late, device="cpu")
    assert built.passed, (built.verdict, [f.message for f in built.findings])
    assert f"-I{folder}" in _kept_ninja(late)


def _kept_ninja(candidate: Path) -> str:
    return next((kernel_cache.store() / kernel_cache.key_for(candidate)).rglob("build.ninja")).read_text()
