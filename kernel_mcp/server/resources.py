"""Read-only views of the workspace as MCP resources: a problem's statement and reference, the best kernel
found so far and its roofline chart, and PNG charts the roofline tool wrote.

A problem is named as the tools take it (ToolSpace.problem): ``kernel://problems/vector_add/description`` reads
the workspace's vector_add, else its problems/vector_add, else the bundled vector_add."""
from __future__ import annotations

import os
from pathlib import Path

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from kernel_mcp.errors import UsageError
from kernel_mcp.problem import bundled_problem, load_problem
from kernel_mcp.server.common import ToolSpace
from kernel_mcp.tools.snapshot import best_file

PROBLEM_URI = "kernel://problems/{+problem}/"  # {+...}: a problem may be a path (problems/vector_add, kb/19.py)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def register_resources(server: MCPServer, space: ToolSpace) -> None:
    """Read-only views of the workspace: a problem's statement and the best kernel found so far."""

    def problem_at(problem: str):
        try:
            return load_problem(space.problem(problem))
        except (UsageError, ToolError) as exc:
            raise ResourceError(str(exc)) from None

    def best(problem: str, name: str | None = None):
        try:
            return best_file(space.root, Path(problem).name, name)  # evaluate names snapshots by folder name
        except UsageError as exc:
            raise ResourceError(str(exc)) from None

    @server.resource(PROBLEM_URI + "description", mime_type="text/markdown")
    def description(problem: str) -> str:
        """What the kernel must compute (task.yml's description, or a KernelBench file's docstring)."""
        return problem_at(problem).description or "(this problem has no description)"

    @server.resource(PROBLEM_URI + "reference", mime_type="text/x-python")
    def reference(problem: str) -> str:
        """The reference implementation the candidate is checked and timed against."""
        prob = problem_at(problem)
        return _readable(space, prob, prob.reference_file).read_text()

    @server.resource(PROBLEM_URI + "task", mime_type="application/yaml")
    def task(problem: str) -> str:
        """task.yml: tests, benchmark shapes, tolerances, flops and bytes per call."""
        prob = problem_at(problem)
        if prob.kind != "gpumode":
            raise ResourceError(f"{problem} is a KernelBench file: it has no task.yml (read its reference)")
        return _readable(space, prob, prob.path / "task.yml").read_text()

    @server.resource(PROBLEM_URI + "best", mime_type="text/x-python")
    def best_kernel(problem: str) -> str:
        """The source of the best snapshot (passed, trusted, fastest) of this problem."""
        _, source = best(problem)
        return source.decode(errors="replace")

    @server.resource(PROBLEM_URI + "roofline.png", mime_type="image/png")
    def best_roofline(problem: str) -> bytes:
        """The roofline chart kept with the best snapshot by evaluate (needs a GPU with known ceilings)."""
        snap, chart = best(problem, "roofline.png")
        if chart is None:
            raise ResourceError(f"the best snapshot {snap.id[:10]} of {problem} has no roofline chart (it was "
                                "not evaluated on a GPU with known ceilings)")
        return chart

    @server.resource("kernel://charts/{+path}", mime_type="image/png")
    def chart(path: str) -> bytes:
        """A PNG file in the workspace, e.g. one the roofline tool wrote with png=..."""
        file = _inside(space, path)
        data = file.read_bytes() if file.is_file() and file.suffix.lower() == ".png" else b""
        if not data.startswith(PNG_MAGIC):
            raise ResourceError(f"{path} is not a PNG file")
        return data


def resource_name(space: ToolSpace, problem: str) -> str:
    """How the resources name ``problem``: by its name (``vector_add``, the form the README documents) where
    the name finds the same problem, else as given (a KernelBench file, a name another folder shadows)."""
    name = Path(problem).name
    if not name or name == problem:
        return problem
    try:
        return name if space.problem(name) == space.problem(problem) else problem
    except ToolError:  # not found: the prompt still names it as given, and the read will say why
        return problem


def _readable(space: ToolSpace, prob, file: Path) -> Path:
    """A file of ``prob`` to show: inside the workspace, or inside the bundled problem's folder in the package
    (a bundled problem is read from there; a workspace's file linked out of it is still refused)."""
    home = bundled_problem(prob.path.name)
    if home is not None and prob.path == home.resolve() and Path(file).resolve().is_relative_to(prob.path):
        return Path(file).resolve()
    return _inside(space, file)


def _inside(space: ToolSpace, name: str | Path) -> Path:
    """The workspace path, for a resource: a file linked out of the workspace is refused like a path."""
    try:
        return space.path(os.path.relpath(name, space.root) if Path(name).is_absolute() else str(name))
    except ToolError as exc:
        raise ResourceError(str(exc)) from None
