"""problems/, skills/ and prompts/: one copy each at the repository's top level, found from a checkout, and
carried inside the package by the wheel so an installed kernel_mcp finds them the same way."""
import subprocess
import sys
import zipfile

import pytest
from conftest import REPO

from kernel_mcp.errors import UsageError
from kernel_mcp.files import asset_dir, bundled_problems, load_prompt


def test_a_checkout_finds_its_top_level_folders():
    assert asset_dir("skills") == REPO / "skills" and asset_dir("prompts") == REPO / "prompts"
    assert "{problem}" in load_prompt("optimize_kernel") and "vector_add" in {p.name for p in bundled_problems()}
    with pytest.raises(UsageError, match="no prompt"):
        load_prompt("../README")


def test_the_wheel_carries_them_inside_the_package(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = next(tmp_path.glob("kernel_mcp-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("kernel_mcp/problems/vector_add/task.yml", "kernel_mcp/skills/kernel-optimization-loop/SKILL.md",
                     "kernel_mcp/prompts/optimize_kernel.md", "kernel_mcp/files.py"):
        assert expected in names, expected
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); from kernel_mcp import files; from kernel_mcp.install import agent_files; "
             "print(files.asset_dir('prompts')); print(len(agent_files.load_skills()))")
    found = subprocess.run([sys.executable, "-c", probe, str(site)], capture_output=True, text=True, cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    prompts, skills = found.stdout.split()
    assert prompts == str(site / "kernel_mcp" / "prompts") and int(skills) == 6
