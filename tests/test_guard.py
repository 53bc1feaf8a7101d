"""The file guard on its own: what counts as tampering, what is restored, what is left alone."""
import marshal
import py_compile

from kernel_mcp.worker.runners.guard import FileGuard


def make_folder(tmp_path):
    folder = tmp_path / "prob"
    folder.mkdir()
    (folder / "reference.py").write_text("def ref_kernel(d):\n    return d\n")
    return folder


def test_changed_file_is_restored_and_its_new_content_kept(tmp_path):
    folder = make_folder(tmp_path)
    ref = folder / "reference.py"
    original = ref.read_bytes()
    guard = FileGuard([ref], [folder])
    ref.write_text("def ref_kernel(d):\n    return 0\n")
    changes = guard.restore()
    assert ref.read_bytes() == original and len(changes) == 1 and "restored" in changes[0]
    kept = changes[0].split("kept at ")[1].rstrip(")")
    assert "return 0" in open(kept).read()


def test_deleted_file_is_restored(tmp_path):
    folder = make_folder(tmp_path)
    ref = folder / "reference.py"
    guard = FileGuard([ref], [folder])
    ref.unlink()
    assert guard.restore() and ref.is_file()


def test_planted_modules_are_moved_but_unrelated_files_stay(tmp_path):
    folder = make_folder(tmp_path)
    guard = FileGuard([folder / "reference.py"], [folder])
    (folder / "utils.py").write_text("x = 1\n")  # GPU MODE references import utils from here
    (folder / "numpy.py").write_text("x = 1\n")  # would shadow an installed package
    (folder / "my_second_try.py").write_text("def custom_kernel(d):\n    return d\n")
    changes = guard.restore()
    assert sorted(c.split(" appeared")[0].rsplit("/", 1)[1] for c in changes) == ["numpy.py", "utils.py"]
    assert not (folder / "utils.py").exists() and (folder / "my_second_try.py").exists()


def test_pyc_that_is_not_its_source_is_planted(tmp_path):
    folder = make_folder(tmp_path)
    guard = FileGuard([folder / "reference.py"], [folder])
    pyc = py_compile.compile(str(folder / "reference.py"), cfile=str(folder / "__pycache__" / "reference.cpython-311.pyc"))
    assert guard.restore() == []  # a true compiled cache, as a concurrent honest process writes it
    header = open(pyc, "rb").read()[:16]
    open(pyc, "wb").write(header + marshal.dumps(compile("def ref_kernel(d):\n    return 0\n",
                                                         str(folder / "reference.py"), "exec")))
    changes = guard.restore()
    assert len(changes) == 1 and "reference.cpython-311.pyc appeared" in changes[0]


def test_the_guard_covers_the_judges_modules_and_data_not_other_candidates(tmp_path):
    """problem.guarded_files: reference.py, the modules it imports (from the folder and, as GPU MODE does,
    from its parent, at any depth) and the data; not the candidates agents save beside the problem."""
    from kernel_mcp.problem import Problem, imported_closure
    from kernel_mcp.taskspec import KernelMcpSpec
    parent = tmp_path / "suite"
    folder = parent / "prob"
    folder.mkdir(parents=True)
    (folder / "reference.py").write_text("from utils import check\nimport task\ndef ref_kernel(d):\n"
                                         "    from helpers import scale\n    return scale(d)\n")
    (folder / "task.py").write_text("X = 1\n")
    (folder / "task.yml").write_text("tests: []\n")
    (folder / "helpers.py").write_text("from . import deep\ndef scale(d):\n    return d\n")
    (folder / "deep.py").write_text("Y = 2\n")
    (parent / "utils.py").write_text("def check():\n    pass\n")
    for candidate in (folder / "attempt_a.py", parent / "attempt_b.py"):
        candidate.write_text("def custom_kernel(d):\n    return d\n")
    problem = Problem(name="prob", path=folder, kind="gpumode", spec=KernelMcpSpec(), tests=[], benchmarks=[])
    guarded = {p.relative_to(parent).as_posix() for p in problem.guarded_files()}
    assert guarded == {"prob/reference.py", "prob/task.py", "prob/task.yml", "prob/helpers.py", "prob/deep.py",
                       "utils.py"}
    (folder / "broken.py").write_text("def (:\n")
    assert imported_closure(folder / "broken.py", {"utils": parent / "utils.py"}) == \
        [folder / "broken.py", parent / "utils.py"]  # unparsable: every local module counts
