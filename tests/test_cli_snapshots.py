"""The CLI twins of the server's snapshot tools (evaluate, snapshot, history, diff, restore, status), run as a
user runs them, in a real git workspace: the same results as the tools (--json), usage errors exit 2."""
import json
import shutil
import subprocess
import sys

from conftest import PROBLEMS, repo_pythonpath

ADD = "def custom_kernel(data):\n    a, b = data\n    return a + b\n"


def _cli(root, *args):
    import os
    return subprocess.run([sys.executable, "-m", "kernel_mcp", *map(str, args)], capture_output=True, text=True,
                          cwd=root, timeout=600, env={**os.environ, "PYTHONPATH": repo_pythonpath()})


def test_evaluate_then_browse_and_restore_from_the_command_line(tmp_path):
    from kernel_mcp.tools.snapshot import history, status
    shutil.copytree(PROBLEMS / "vector_add", tmp_path / "vector_add", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "add.py").write_text(ADD)
    done = _cli(tmp_path, "evaluate", "vector_add", "add.py", "--device", "cpu", "--budget", "2", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    first = json.loads(done.stdout)["snapshot_id"]
    (tmp_path / "add.py").write_text(ADD.replace("a + b", "b + a"))
    second = json.loads(_cli(tmp_path, "snapshot", "vector_add", "add.py", "--note", "commuted", "--json").stdout)["id"]
    listed = json.loads(_cli(tmp_path, "history", "--json").stdout)
    assert listed == json.loads(json.dumps([s.model_dump() for s in history(tmp_path)]))  # what the tool returns
    assert [s["id"] for s in listed] == [first, second]
    shown = _cli(tmp_path, "diff", first[:8], second[:8])
    assert shown.returncode == 0 and "-    return a + b" in shown.stdout and "+    return b + a" in shown.stdout
    (tmp_path / "add.py").write_text("unsaved work\n")
    refused = _cli(tmp_path, "restore", first[:8])
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert _cli(tmp_path, "restore", first[:8], "--force").returncode == 0
    assert (tmp_path / "add.py").read_text() == ADD
    stuck = json.loads(_cli(tmp_path, "status", "vector_add", "--json").stdout)
    assert stuck == json.loads(status(tmp_path, "vector_add").model_dump_json())
    bad = _cli(tmp_path, "diff", "not-an-id")
    assert bad.returncode == 2 and "bad snapshot id" in bad.stderr
