"""Every bad argument to every tool is a message the model can act on, under 1 kB: oversized strings, bad
ids, bad numbers, a restore blocked by a directory. Through a real MCP client session (in memory)."""
from __future__ import annotations

import shutil

import pytest
from conftest import PROBLEMS, in_server_session

HONEST = "def custom_kernel(data):\n    a, b = data\n    return a + b\n"
HUGE_PATH = "p" * 5_000_000  # 5 MB: beyond any file system's name limits
LONG_ID = "a" * 100_000
CALL = {"problem": "vector_add", "candidate": "add.py", "device": "cpu"}
QUICK = {**CALL, "budget_s": 1, "shapes": "tests"}

MISUSES = [
    ("check", {**CALL, "candidate": HUGE_PATH}, "too long"),
    ("check", {**CALL, "problem": HUGE_PATH}, "too long"),
    ("check", {**CALL, "device": "x" * 100_000}, "unknown device"),
    ("compile", {"candidate": HUGE_PATH}, "too long"),
    ("sanitize", {**CALL, "candidate": HUGE_PATH}, "too long"),
    ("sanitize", {**CALL, "tools": ["valgrind"]}, "unknown sanitizer tool"),
    ("compile", {"candidate": "vector_add/baseline.py", "targets": ["sm_" + "9" * 100_000]}, "target"),
    ("profile", {**QUICK, "baseline": HUGE_PATH}, "too long"),
    ("roofline", {**QUICK, "png": HUGE_PATH}, "too long"),
    ("evaluate", {**QUICK, "budget_s": -1}, "budget"),
    ("evaluate_start", {**QUICK, "candidate": HUGE_PATH}, "too long"),
    ("snapshot", {"problem": "vector_add", "candidate": "add.py", "note": "n" * 300_000}, "note"),
    ("snapshot", {"problem": "vector_add", "candidate": "add.py", "author": "a" * 100_000}, "author"),
    ("snapshot", {"problem": "vector_add", "candidate": "add.py", "parent": LONG_ID}, "snapshot id"),
    ("snapshot", {"problem": HUGE_PATH, "candidate": "add.py"}, "problem"),
    ("history", {"limit": -1}, "limit"),
    ("history", {"limit": 0}, "limit"),
    ("history", {"problem": HUGE_PATH}, "problem"),
    ("diff", {"a": LONG_ID}, "snapshot id"),
    ("diff", {"a": "z"}, "snapshot id"),
    ("restore", {"snapshot_id": LONG_ID}, "snapshot id"),
    ("restore", {"snapshot_id": "a"}, "snapshot id"),
    ("status", {"problem": HUGE_PATH}, "problem"),
    ("job_wait", {"job_id": LONG_ID}, "job"),
    ("steer", {"run": "vector_add", "text": "try split-K"}, "not a run folder"),
    ("steer", {"run": HUGE_PATH, "text": "try split-K"}, "too long"),
    ("steer", {"run": "../outside", "text": "try split-K"}, "workspace"),
]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("misuse") / "ws"
    root.mkdir()
    shutil.copytree(PROBLEMS / "vector_add", root / "vector_add", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "add.py").write_text(HONEST)
    return root


def call(root, tool: str, arguments: dict):
    return in_server_session(root, lambda client: client.call_tool(tool, arguments))


@pytest.mark.parametrize("tool, arguments, words", MISUSES, ids=[f"{t}-{'-'.join(a)[:40]}" for t, a, _ in MISUSES])
def test_every_bad_argument_is_a_short_clear_message(workspace, monkeypatch, tmp_path, tool, arguments, words):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    result = call(workspace, tool, arguments)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert result.is_error, text[:500]
    assert len(text.encode()) < 1024, f"{len(text)} characters: {text[:300]}"
    assert words in text.lower(), text


def test_a_restore_blocked_by_a_directory_says_so(workspace, monkeypatch, tmp_path):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    (workspace / "blocked.py").write_text(HONEST)
    made = call(workspace, "snapshot", {"problem": "vector_add", "candidate": "blocked.py"}).structured_content
    (workspace / "blocked.py").unlink()
    (workspace / "blocked.py").mkdir()
    result = call(workspace, "restore", {"snapshot_id": made["id"]})
    text = result.content[0].text
    assert result.is_error and "blocked.py" in text and "directory" in text and len(text) < 1024


def test_a_long_note_is_kept_whole(workspace, monkeypatch, tmp_path):
    """A note within the limit but far beyond what fits on a command line (git reads it from a file)."""
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    note = "why this attempt: " + "x" * 60_000
    made = call(workspace, "snapshot", {"problem": "vector_add", "candidate": "add.py", "note": note})
    assert not made.is_error, made.content[0].text[:500]
    assert made.structured_content["note"] == note


def test_steer_leaves_a_hint_for_a_run_in_the_workspace(workspace):
    run = workspace / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}")
    result = call(workspace, "steer", {"run": "runs/r1", "text": "stop trying larger tiles"})
    assert not result.is_error, result.content
    assert [p.read_text() for p in (run / "hints").glob("*.txt")] == ["stop trying larger tiles"]
