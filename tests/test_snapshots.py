"""The snapshot store on real git repositories: the user's branch, index and working tree untouched,
history, best, diff, restore safety, lineage, and concurrent writers that lose nothing."""
import subprocess
from concurrent.futures import ProcessPoolExecutor

import pytest

from kernel_mcp.errors import UsageError
from kernel_mcp.history.snapshots import SnapshotMeta, Store, best, leaderboard


def _git(root, *args):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    _git(root, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "start")
    (root / "kernel.py").write_text("def custom_kernel(data):\n    return data[0] + data[1]\n")
    return root


def _meta(**kw):
    return SnapshotMeta(**{"problem": "vector_add", "candidate": "kernel.py", "files": ["kernel.py"], **kw})


def test_saving_leaves_branch_index_and_working_tree_alone(workspace):
    (workspace / "staged.txt").write_text("staged")
    _git(workspace, "add", "staged.txt")
    before = (_git(workspace, "rev-parse", "HEAD"), _git(workspace, "status", "--porcelain"),
              _git(workspace, "diff", "--cached"), _git(workspace, "branch", "--list"))
    snap = Store(workspace).save(_meta(passed=True, trusted=True, speedup=1.5, author="agent-a"))
    after = (_git(workspace, "rev-parse", "HEAD"), _git(workspace, "status", "--porcelain"),
             _git(workspace, "diff", "--cached"), _git(workspace, "branch", "--list"))
    assert before == after
    assert f"refs/kernel_mcp/snapshots/{snap.id}" in _git(workspace, "for-each-ref")
    assert Store(workspace).file_at(snap, "kernel.py") == (workspace / "kernel.py").read_bytes()


def test_a_folder_that_is_not_a_repository_becomes_one(tmp_path):
    (tmp_path / "k.py").write_text("x = 1\n")
    snap = Store(tmp_path).save(SnapshotMeta(problem="p", candidate="k.py", files=["k.py"]))
    assert (tmp_path / ".git").is_dir() and Store(tmp_path).get(snap.id[:8]).id == snap.id


def test_history_best_lineage_and_diff(workspace):
    store = Store(workspace)
    first = store.save(_meta(passed=True, trusted=True, speedup=1.2, verdict="pass", author="a"))
    (workspace / "kernel.py").write_text("def custom_kernel(data):\n    return sum(data)\n")
    second = store.save(_meta(passed=True, trusted=True, speedup=2.0, verdict="pass", author="b"), parent=first.id)
    wrong = store.save(_meta(passed=False, speedup=None, verdict="fail: mismatch", author="b"), parent=second.id)
    fake = store.save(_meta(passed=True, trusted=False, speedup=50.0, verdict="pass (timing not trusted)"))
    snaps = store.all()
    assert [s.id for s in snaps] == [first.id, second.id, wrong.id, fake.id]
    assert second.parent == first.id and wrong.parent == second.id and first.parent is None
    assert best(snaps).id == second.id  # an untrusted 50x never wins
    assert [s.id for s in leaderboard(snaps, author="b")] == [second.id, wrong.id]
    assert [s.id for s in leaderboard(snaps, passed_only=True)][0] == second.id
    text = store.diff(first, second)
    assert "-    return data[0] + data[1]" in text and "+    return sum(data)" in text
    assert "snapshot.json" not in text


def test_restore_refuses_to_lose_unsaved_work(workspace):
    store = Store(workspace)
    old = store.save(_meta())
    (workspace / "kernel.py").write_text("# an edit nobody saved\n")
    with pytest.raises(UsageError, match="unsaved changes in kernel.py"):
        store.restore(old)
    store.save(_meta(note="the edit, saved"))
    assert store.restore(old) == ["kernel.py"]
    assert (workspace / "kernel.py").read_bytes() == store.file_at(old, "kernel.py")
    (workspace / "kernel.py").write_text("# another unsaved edit\n")
    store.restore(old, force=True)
    assert (workspace / "kernel.py").read_bytes() == store.file_at(old, "kernel.py")


def test_bad_input(workspace):
    store = Store(workspace)
    with pytest.raises(UsageError, match="outside the workspace"):
        store.save(_meta(files=["kernel.py", "../elsewhere.py"]))
    with pytest.raises(UsageError, match="no snapshot"):
        store.get("deadbeef")
    with pytest.raises(UsageError, match="not a file"):
        store.save(_meta(files=["kernel.py", "missing.py"]))
    with pytest.raises(UsageError, match="must be one of the files"):
        store.save(_meta(files=["other.py"]))


def _writer(root, author, count):
    store = Store(root)
    return [store.save(_meta(author=author, note=str(i))).id for i in range(count)]


def test_concurrent_writers_lose_nothing(workspace):
    with ProcessPoolExecutor(max_workers=3) as pool:
        futures = [pool.submit(_writer, str(workspace), f"agent-{k}", 8) for k in range(3)]
        written = [sid for f in futures for sid in f.result()]
    stored = Store(workspace).ids()
    assert len(written) == 24 and set(written) <= set(stored)
    assert _git(workspace, "fsck", "--no-progress").strip() == ""


def test_tools_record_results_and_answer_over_the_history(workspace):
    from kernel_mcp.results import ProfileResult
    from kernel_mcp.tools import snapshot as tools
    profile = ProfileResult(passed=True, trusted=True, verdict="pass", problem="vector_add", candidate="kernel.py",
                            speedup=1.3, speedup_ci=[1.25, 1.35])
    first = tools.snapshot(workspace, "vector_add", "kernel.py", author="agent-a", profile=profile)
    assert (first.passed, first.trusted, first.speedup, first.speedup_ci, first.lines) == (True, True, 1.3, [1.25, 1.35], 2)
    (workspace / "kernel.py").write_text("def custom_kernel(data):\n    a, b = data\n    return a + b\n")
    faster = profile.model_copy(update={"speedup": 1.8, "speedup_ci": [1.7, 1.9]})
    second = tools.snapshot(workspace, "vector_add", workspace / "kernel.py", parent=first.id, profile=faster)
    assert tools.best(workspace, "vector_add").id == second.id
    assert [s.id for s in tools.history(workspace, "vector_add")] == [second.id, first.id]
    assert "+    a, b = data" in tools.diff(workspace, first.id)  # against the best
    assert tools.status(workspace, "vector_add").best_id == second.id
    with pytest.raises(UsageError, match="outside the workspace"):
        tools.snapshot(workspace, "vector_add", "/etc/passwd")


def test_status_reads_the_sources_from_the_store_and_sees_repeated_proposals(workspace):
    """Mode collapse (S4) from the snapshots' own files: the same kernel proposed again and again, each a
    little faster within the noise, is seen by the status tool as the orchestrator would see it."""
    from kernel_mcp.results import ProfileResult
    from kernel_mcp.tools import snapshot as tools
    profile = ProfileResult(passed=True, trusted=True, verdict="pass", problem="vector_add", candidate="kernel.py",
                            speedup=1.3, speedup_ci=[1.28, 1.32])
    for i in range(10):
        (workspace / "kernel.py").write_text(f"def custom_kernel(data):\n    a, b = data  # try {i}\n    return a + b\n")
        tools.snapshot(workspace, "vector_add", "kernel.py", profile=profile)
    status = tools.status(workspace, "vector_add")
    assert "S4" in {s.code for s in status.signals} and status.level >= 1, status


def test_reading_never_creates_a_repository(tmp_path):
    from kernel_mcp.tools import snapshot as tools
    assert tools.history(tmp_path) == [] and tools.best(tmp_path) is None
    assert tools.status(tmp_path, "p").evaluations == 0
    with pytest.raises(UsageError, match="no snapshots yet"):
        tools.restore(tmp_path, "abcd")
    assert not (tmp_path / ".git").exists()


def test_attachments_are_kept_but_never_restored_or_diffed(workspace):
    store = Store(workspace)
    first = store.save(_meta(), attachments={"roofline.png": b"\x89PNG first"})
    (workspace / "kernel.py").write_text("def custom_kernel(data):\n    return data[1] + data[0]\n")
    second = store.save(_meta(), parent=first.id, attachments={"roofline.png": b"\x89PNG second"})
    assert store.attachment(first, "roofline.png") == b"\x89PNG first" and store.attachment(first, "x.png") is None
    diff = store.diff(first, second)
    assert "data[1] + data[0]" in diff and "roofline.png" not in diff and "snapshot.json" not in diff
    store.restore(first, force=True)
    assert not (workspace / ".kernel_mcp").exists()
    for bad in ("../escape.png", "snapshot.json", ""):
        with pytest.raises(UsageError, match="bad attachment name"):
            store.save(_meta(), attachments={bad: b"x"})


def test_a_problem_path_and_its_name_file_the_same_snapshots(tmp_path):
    """evaluate files snapshots under the folder name; an agent passing the path to status or history
    must find them too."""
    from kernel_mcp.tools import snapshot as tools
    (tmp_path / "add.py").write_text("def custom_kernel(data):\n    return data\n")
    made = tools.snapshot(tmp_path, "problems/vector_add/", "add.py")
    assert made.problem == "vector_add"
    assert [s.id for s in tools.history(tmp_path, "problems/vector_add")] == [made.id]
    assert [s.id for s in tools.history(tmp_path, "vector_add")] == [made.id]
    assert tools.status(tmp_path, "problems/vector_add").evaluations == tools.status(tmp_path, "vector_add").evaluations == 1


def test_a_snapshot_keeps_the_bytes_it_is_given_not_the_files_content_now(workspace):
    evaluated = b"def custom_kernel(data):\n    return data[0] + data[1]  # evaluated\n"
    (workspace / "kernel.py").write_text("# saved by an editor since\n")
    snap = Store(workspace).save(_meta(), contents={"kernel.py": evaluated})
    assert Store(workspace).file_at(snap, "kernel.py") == evaluated and snap.lines == 2


def test_evaluate_refuses_a_candidate_that_changes_while_it_is_evaluated(tmp_path, monkeypatch):
    """Another agent (or an editor) saves the file mid-evaluation: the instruments may have measured two
    versions, so no snapshot may claim their numbers; the error says so."""
    import shutil
    import threading

    from conftest import PROBLEMS

    from kernel_mcp.tools._request import evaluate_request
    from kernel_mcp.tools.evaluate import evaluate
    from kernel_mcp.tools.snapshot import history
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "ws"
    shutil.copytree(PROBLEMS / "vector_add", root / "vector_add", ignore=shutil.ignore_patterns("__pycache__"))
    candidate = root / "add.py"
    candidate.write_text("def custom_kernel(data):\n    a, b = data\n    return a + b\n")
    started = threading.Event()

    def progress(message, done=0, total=0):
        started.set()

    def save_meanwhile():
        started.wait(120)  # the first progress message: the evaluation has begun
        candidate.write_text("def custom_kernel(data):\n    a, b = data\n    return b + a  # edited\n")

    editor = threading.Thread(target=save_meanwhile)
    editor.start()
    with pytest.raises(UsageError, match="changed while it was being evaluated"):
        evaluate(evaluate_request(root=root, problem=root / "vector_add", candidate=candidate, device="cpu", budget_s=2,
                                  shapes="tests"), on_progress=progress)
    editor.join()
    assert history(root) == []
