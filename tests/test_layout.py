"""tools/layout_check.py: the real tree keeps the import rules and the size budget, and every rule fires on a
small synthetic tree written to tmp_path (so the check is shown able to fail)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from conftest import REPO

SCRIPT = REPO / "tools" / "layout_check.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("layout_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


layout = _load_script()


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """files: path under root -> source; every folder of kernel_mcp/ gets an __init__.py."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in [root / "kernel_mcp", *(p for p in (root / "kernel_mcp").rglob("*") if p.is_dir())]:
        (folder / "__init__.py").touch()
    return root


def found(root: Path, rule: str, exceptions: dict[str, str] | None = None) -> list[tuple[str, int]]:
    return [(v.path, v.line) for v in layout.check(root, exceptions or {}) if v.rule == rule]


def test_the_real_tree_keeps_the_rules_and_the_budget():
    done = subprocess.run([sys.executable, str(SCRIPT)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, "layout violations:\n" + done.stdout + done.stderr


def test_the_script_prints_one_line_per_violation_and_exits_1(tmp_path):
    write_tree(tmp_path, {"kernel_mcp/tools/check.py": "from kernel_mcp.worker import guard\n",
                          "kernel_mcp/worker/guard.py": ""})
    done = subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "kernel_mcp/tools/check.py:1: R3 tools may import only worker.runner/protocol, not kernel_mcp.worker.guard"]


def test_a_clean_synthetic_tree_passes(tmp_path):
    write_tree(tmp_path, {"kernel_mcp/tools/check.py": "from kernel_mcp.worker.runner import Runner\n",
                          "kernel_mcp/worker/runner.py": "import subprocess\n"})
    assert layout.check(tmp_path, {}) == []


def test_r1_only_the_server_and_the_agent_import_mcp(tmp_path):
    write_tree(tmp_path, {
        "kernel_mcp/server.py": "from mcp.server import MCPServer\n",
        "kernel_mcp/server/tools.py": "import mcp.types\n",
        "kernel_mcp/agent/client.py": "from mcp import ClientSession\n",
        "kernel_mcp/tools/check.py": "import json\n\ndef f():\n    from mcp.types import ToolAnnotations\n",
        "kernel_mcp/cli.py": "import mcp\n",
    })
    assert found(tmp_path, "R1") == [("kernel_mcp/cli.py", 1), ("kernel_mcp/tools/check.py", 4)]


def test_r1_does_not_take_a_module_named_like_mcp_for_it(tmp_path):
    write_tree(tmp_path, {"kernel_mcp/cli.py": "import mcpx\nfrom kernel_mcp import results\n",
                          "kernel_mcp/results.py": ""})
    assert found(tmp_path, "R1") == []


def test_r2_only_the_worker_starts_processes(tmp_path):
    write_tree(tmp_path, {
        "kernel_mcp/worker/launch.py": "import subprocess, multiprocessing, os\nos.fork()\n",
        "kernel_mcp/backends/cuda.py": "import subprocess\n",
        "kernel_mcp/install.py": "from multiprocessing.pool import Pool\n",
        "kernel_mcp/cli.py": "import os as system_os\n\ndef run():\n    system_os.execvp('x', ['x'])\n",
        "kernel_mcp/stall.py": "import os\nos.system('ls')\nos.path.join('a')\n",
        "kernel_mcp/jobs.py": "from os import posix_spawn\nimport pty\n",
        "kernel_mcp/agent/loop.py": "import asyncio\nasyncio.create_subprocess_exec('x')\n",
        "kernel_mcp/stats.py": "from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor\n",
    })
    assert found(tmp_path, "R2") == [
        ("kernel_mcp/agent/loop.py", 2), ("kernel_mcp/backends/cuda.py", 1), ("kernel_mcp/cli.py", 4),
        ("kernel_mcp/install.py", 1), ("kernel_mcp/jobs.py", 1), ("kernel_mcp/jobs.py", 2),
        ("kernel_mcp/stall.py", 2), ("kernel_mcp/stats.py", 1)]


def test_r3_tools_reach_the_worker_only_through_runner_and_protocol(tmp_path):
    write_tree(tmp_path, {
        "kernel_mcp/worker/runner.py": "", "kernel_mcp/worker/protocol.py": "", "kernel_mcp/worker/guard.py": "",
        "kernel_mcp/tools/ok.py": ("from kernel_mcp.worker.runner import LocalRunner\n"
                                   "from kernel_mcp.worker import protocol\nfrom ..worker.protocol import Device\n"),
        "kernel_mcp/tools/bad.py": ("from kernel_mcp.worker import guard, runner\nfrom ..worker import guard\n"
                                    "import kernel_mcp.worker\nfrom kernel_mcp.server import serve\n"),
    })
    assert found(tmp_path, "R3") == [("kernel_mcp/tools/bad.py", n) for n in (1, 2, 3, 4)]


def test_r4_backends_and_counters_use_only_protocol_and_toolchain(tmp_path):
    write_tree(tmp_path, {
        "kernel_mcp/worker/toolchain.py": "", "kernel_mcp/worker/protocol.py": "", "kernel_mcp/worker/steps.py": "",
        "kernel_mcp/backends/cuda.py": "from kernel_mcp.worker.toolchain import run_tool\n",
        "kernel_mcp/backends/cpp.py": "from kernel_mcp.worker.protocol import CaptureRequest\n",
        "kernel_mcp/counters/__init__.py": "from kernel_mcp.worker.steps import StepHost\n",
        "kernel_mcp/tools/compile.py": "from kernel_mcp.worker.toolchain import run_tool\n",
    })
    assert found(tmp_path, "R4") == [("kernel_mcp/counters/__init__.py", 1)]


def test_r5_the_worker_never_imports_the_front_ends(tmp_path):
    write_tree(tmp_path, {
        "kernel_mcp/worker/judge.py": "import kernel_mcp.results\n\ndef f():\n    from kernel_mcp.tools import check\n",
        "kernel_mcp/worker/host.py": "from kernel_mcp import cli\nfrom ..server import app\n",
        "kernel_mcp/tools/check.py": "", "kernel_mcp/cli.py": "", "kernel_mcp/server/app.py": "",
        "kernel_mcp/results.py": "",
    })
    assert found(tmp_path, "R5") == [("kernel_mcp/worker/host.py", 1), ("kernel_mcp/worker/host.py", 2),
                                     ("kernel_mcp/worker/judge.py", 4)]


def test_r6_only_the_ray_pool_imports_ray(tmp_path):
    write_tree(tmp_path, {"kernel_mcp/worker/ray_pool.py": "import ray\n",
                          "kernel_mcp/worker/pool.py": "from ray.util import ActorPool\n",
                          "kernel_mcp/agent/search.py": "def f():\n    import ray\n"})
    assert found(tmp_path, "R6") == [("kernel_mcp/agent/search.py", 2), ("kernel_mcp/worker/pool.py", 1)]


def long_function(name: str, lines: int, indent: str = "") -> str:
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 1))
    return f"{indent}def {name}():\n{body}"


def test_r7_sizes_of_modules_functions_and_methods(tmp_path):
    write_tree(tmp_path, {
        "kernel_mcp/big.py": "x = 1\n" * (layout.MODULE_LINES + 1),
        "kernel_mcp/just_fits.py": "x = 1\n" * layout.MODULE_LINES,
        "kernel_mcp/funcs.py": (long_function("fits", layout.FUNCTION_LINES) + "\n"
                                + long_function("too_long", layout.FUNCTION_LINES + 1) + "\n"
                                + "class Runner:\n" + long_function("run", layout.FUNCTION_LINES + 1, "    ")),
    })
    violations = [v for v in layout.check(tmp_path, {}) if v.rule == "R7"]
    too_long_line = layout.FUNCTION_LINES + 2
    assert [(v.path, v.line) for v in violations] == [
        ("kernel_mcp/big.py", 1), ("kernel_mcp/funcs.py", too_long_line),
        ("kernel_mcp/funcs.py", too_long_line + layout.FUNCTION_LINES + 3)]
    assert f"Runner.run has {layout.FUNCTION_LINES + 1} lines" in str(violations[-1])


def test_r7_exceptions_excuse_a_named_file_or_function_and_must_stay_needed(tmp_path):
    write_tree(tmp_path, {"kernel_mcp/devices.py": "x = 1\n" * (layout.MODULE_LINES + 1),
                          "kernel_mcp/render.py": long_function("table", layout.FUNCTION_LINES + 1)})
    excused = {"kernel_mcp/devices.py": "datasheet figures", "kernel_mcp/render.py::table": "generated text"}
    assert found(tmp_path, "R7", excused) == []
    stale = {**excused, "kernel_mcp/gone.py": "was long once"}
    assert [str(v) for v in layout.check(tmp_path, stale)] == [
        "kernel_mcp/gone.py:1: R7 the exception for kernel_mcp/gone.py is no longer needed; remove it"]

