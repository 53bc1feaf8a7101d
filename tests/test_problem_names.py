"""Problems by name from anywhere (issue 35): a bare name (`vector_add`) or `problems/NAME` reaches the bundled
problem when no path of that name exists; a user's own folder always wins; the demo's hints run where they are
printed; install says what the workspace holds; the MCP resources and the prompt take the problem's name."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROBLEMS, in_server_session, repo_pythonpath, resource_refusal

from kernel_mcp.errors import UsageError
from kernel_mcp.files import bundled_problems
from kernel_mcp.problem import load_problem

BUNDLED = sorted(p.name for p in bundled_problems())
MINE = "a user's own vector_add, which wins over the bundled one"


def cli(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`kernel-mcp ARGS` as a user runs it, from ``cwd`` (outside the repository), this checkout importable."""
    env = {**os.environ, "PYTHONPATH": repo_pythonpath()}
    return subprocess.run([sys.executable, "-m", "kernel_mcp", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout)


def own_copy(folder: Path) -> Path:
    """A copy of the bundled vector_add at ``folder``, its description changed so it can be told apart."""
    shutil.copytree(PROBLEMS / "vector_add", folder, ignore=shutil.ignore_patterns("__pycache__", "solutions"))
    task = folder / "task.yml"
    task.write_text(re.sub(r"description: \|\n(  .*\n)+", f"description: {MINE}\n", task.read_text()))
    return folder


# ---------------------------------------------------------------- the command line, from anywhere

def test_check_by_bundled_name_from_a_directory_outside_the_repository(tmp_path):
    shutil.copy(PROBLEMS / "vector_add" / "baseline.py", tmp_path / "mine.py")
    done = cli(tmp_path, "check", "vector_add", "mine.py", "--device", "cpu", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    body = json.loads(done.stdout)
    assert body["passed"] is True and body["problem"] == "vector_add"


def test_an_unknown_name_says_what_was_looked_for_and_lists_the_bundled_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as caught:
        load_problem("vector_ad")
    message = str(caught.value)
    assert "problem not found: 'vector_ad'" in message and str(tmp_path) in message
    assert all(name in message for name in BUNDLED), message
    with pytest.raises(UsageError, match="vector_add"):  # a path that is not there: the names too
        load_problem("elsewhere/vector_add")
    (tmp_path / "mine.py").write_text("")
    done = cli(tmp_path, "check", "vector_ad", "mine.py", "--device", "cpu")
    assert done.returncode == 2 and "problem not found" in done.stderr
    assert all(name in done.stderr for name in BUNDLED), done.stderr


def test_a_users_folder_named_like_a_bundled_problem_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    own_copy(tmp_path / "problems" / "vector_add")
    for given in ("vector_add", "problems/vector_add", "./problems/vector_add/"):
        found = load_problem(given)
        assert found.path == tmp_path / "problems" / "vector_add" and found.description == MINE, given
    own_copy(tmp_path / "vector_add")  # the path itself first, then ./problems/NAME, then the bundled one
    assert load_problem("vector_add").path == tmp_path / "vector_add"
    bundled = load_problem("softmax")  # no folder of that name here: the bundled problem
    assert bundled.path == PROBLEMS / "softmax" and bundled.name == "softmax"


# ---------------------------------------------------------------- demo's hints

def test_demos_hints_run_where_they_are_printed(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import kernel_mcp.files
    from kernel_mcp.cli.main import app
    monkeypatch.setattr(kernel_mcp.files, "bundled_problems", lambda: [])  # the hints only, not 12 checks
    shown = CliRunner().invoke(app, ["demo", "--device", "cpu"], terminal_width=100)
    monkeypatch.undo()
    assert shown.exit_code == 0, shown.output
    commands = [shlex.split(c) for c in re.findall(r"`([^`]+)`", shown.output.split("next:")[1])]
    assert any(c[:2] == ["kernel-mcp", "check"] for c in commands) and any(c[0] == "cp" for c in commands)
    monkeypatch.chdir(tmp_path)
    for command in commands:
        if command[0] == "cp":  # the copy step, run as printed
            subprocess.run(command, check=True, cwd=tmp_path)
        elif command[1] in ("check", "profile", "roofline", "optimize"):
            assert load_problem(command[2]).name == "vector_add", command  # resolves from here
            if command[1] != "optimize":
                assert (tmp_path / command[3]).is_file(), command  # the file the copy step made


# ---------------------------------------------------------------- install

def test_install_in_an_empty_project_says_it_holds_no_problem_and_how_to_reach_one(tmp_path):
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    done = cli(tmp_path, "install", "cursor", "--root", str(root), "--home", str(home))
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert "no problem" in said and "vector_add" in said and "task.yml" in said, said
    from kernel_mcp.install.command import install
    own_copy(root / "problems" / "vector_add")
    found = install("cursor", root=root, home=home)
    assert found.problems == ["problems/vector_add"]
    assert any("problems/vector_add" in note and "no problem" not in note for note in found.notes), found.notes


# ---------------------------------------------------------------- MCP resources and the prompt

async def _description_and_task(client):
    texts = []
    for part in ("description", "task", "reference"):
        [content] = (await client.read_resource(f"kernel://problems/vector_add/{part}")).contents
        texts.append(content.text)
    return texts


def test_resources_by_name_read_the_workspaces_problems_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "ws"
    own_copy(root / "problems" / "vector_add")
    description, task, reference = in_server_session(root, _description_and_task)
    assert description == MINE and MINE in task and "def ref_kernel" in reference


def test_resources_by_name_read_a_bundled_problem_from_an_empty_workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "ws"
    root.mkdir()
    description, task, reference = in_server_session(root, _description_and_task)
    assert description.startswith("Elementwise vector addition") and "benchmarks:" in task
    assert reference == (PROBLEMS / "vector_add" / "reference.py").read_text()


def test_a_name_linked_out_of_the_workspace_is_refused_not_replaced_by_the_bundled_one(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "ws"
    root.mkdir()
    os.symlink(own_copy(tmp_path / "outside"), root / "vector_add")
    assert "outside the workspace" in resource_refusal(root, "kernel://problems/vector_add/description")


def test_the_tools_take_a_bundled_problems_name(tmp_path):
    from mcp.server.mcpserver.exceptions import ToolError

    from kernel_mcp.server.common import ToolSpace
    (tmp_path / "ws").mkdir()
    space = ToolSpace(tmp_path / "ws")  # an empty workspace
    assert space.problem("vector_add") == space.problem("problems/vector_add") == PROBLEMS / "vector_add"
    own_copy(tmp_path / "problems" / "vector_add")  # beside the workspace, out of it
    for refused in ("../problems/vector_add", str(PROBLEMS / "vector_add"), "-vector_add"):
        with pytest.raises(ToolError, match="outside the workspace|bad path"):
            space.problem(refused)  # a path stays confined: only a name reaches the bundled problem


@pytest.mark.parametrize("given", ["problems/vector_add", "vector_add"])
def test_the_prompt_names_the_resources_as_documented(tmp_path, monkeypatch, given):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "ws"
    own_copy(root / "problems" / "vector_add")

    async def script(client):
        got = await client.get_prompt("optimize_kernel", {"problem": given, "candidate": "add.py"})
        return got.messages[0].content.text
    text = in_server_session(root, script)
    assert "kernel://problems/vector_add/description" in text and "kernel://problems/vector_add/best" in text
    assert "kernel://problems/problems/" not in text
    assert f"problem={given!r}" in text  # the tools take what was given
