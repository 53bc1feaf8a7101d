"""Load a problem: a GPU MODE style folder (task.yml + reference.py) or a KernelBench single file.

Loading here is static (YAML + a parse of the Python source, no import): it runs in the caller's process,
which never imports problem or candidate code. The judge process imports reference.py later.
"""
from __future__ import annotations

import ast
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from kernel_mcp.errors import UsageError, shown
from kernel_mcp.files import bundled_problems
from kernel_mcp.results import Finding
from kernel_mcp.taskspec import GPU_MODE_KEYS, KernelMcpSpec, TaskFile

KERNELBENCH_DEFAULT_TESTS = [{"seed": 1}, {"seed": 2}]
KERNELBENCH_DEFAULT_BENCHMARKS = [{"seed": 3}]


@dataclass
class Problem:
    name: str
    path: Path  # the folder, or the KernelBench .py file
    kind: Literal["gpumode", "kernelbench"]
    spec: KernelMcpSpec
    tests: list[dict[str, Any]]
    benchmarks: list[dict[str, Any]]
    description: str = ""
    warnings: list[Finding] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return self.path if self.kind == "gpumode" else self.path.parent

    @property
    def reference_file(self) -> Path:
        return self.path / "reference.py" if self.kind == "gpumode" else self.path

    def guarded_files(self) -> list[Path]:
        """Files the harness relies on: the problem's data (task.yml, every file that is not Python) and
        the Python modules the judge imports: reference.py and, transitively, the modules of the problem
        folder and its parent (GPU MODE's utils.py, task.py) it imports. A candidate that edits any of
        them fails, and they are restored. Other Python files (candidates that agents and editors save
        beside the problem) are not the harness's: never restored, never reported."""
        if self.kind == "kernelbench":
            return [self.path]
        own = [p for p in sorted(self.path.rglob("*")) if p.is_file() and "__pycache__" not in p.parts
               and "solutions" not in p.relative_to(self.path).parts and p.stat().st_size < 4 << 20]
        local = {p.stem: p for p in sorted(self.path.parent.glob("*.py")) if p.is_file()}
        local.update({p.stem: p for p in own if p.suffix == ".py" and p.parent == self.path})
        return [p for p in own if p.suffix != ".py"] + imported_closure(self.reference_file, local)


def imported_closure(start: Path, local: dict[str, Path]) -> list[Path]:
    """``start`` and every module of ``local`` (name -> file) it imports, directly or through another of
    them, at any depth of the code (imports inside functions count). A file that does not parse makes
    every local module count: what it would import cannot be known."""
    found, queue = [start], [start]
    while queue:
        try:
            tree = ast.parse(queue.pop().read_bytes())
        except (SyntaxError, ValueError, OSError):
            return [start] + [p for p in local.values() if p != start]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
                if node.level:  # "from . import helpers": the names themselves are the folder's modules
                    names += [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                module = local.get(name.split(".")[0])
                if module is not None and module not in found:
                    found.append(module)
                    queue.append(module)
    return found


def load_problem(path: str | Path | Problem) -> Problem:
    """Validate and describe a problem (a path, or a bundled problem's name: resolve_problem_path); raise
    UsageError naming the file and key on any defect. A Problem already loaded is returned as it is: an
    instrument loads its problem once and hands the object down."""
    if isinstance(path, Problem):
        return path
    p = resolve_problem_path(path)
    if p.is_file() and p.suffix == ".py":
        return _load_kernelbench(p)
    if not p.is_dir():
        raise UsageError(f"{path}: a problem is a folder with task.yml and reference.py, or a KernelBench .py file")
    return _load_folder(p)


Locate = Callable[[str], "Path | None"]  # a relative path -> the absolute one, or None when nothing is there


def resolve_problem_path(problem: str | Path, where: Path | None = None, locate: Locate | None = None) -> Path:
    """Where a problem argument points: the one rule of every command and tool (load_problem applies it, and
    the processes it starts get the absolute path it returns).

    In order: the path itself, so a user's own folder always wins; then, for a bare name or ``problems/NAME``
    (bare_name), the folder problems/NAME beside it; then the bundled problem NAME, so ``vector_add`` works
    from any directory. ``locate`` finds a path (default: from the current directory, ``~`` expanded; the
    server's refuses a path out of its workspace) and ``where`` is where it looks, for the error message.
    Raises UsageError saying what was looked for and naming the bundled problems."""
    text = str(problem)
    name = bare_name(text)
    for rel in dict.fromkeys([text] + ([f"problems/{name}"] if name else [])):
        found = (locate or _on_disk)(rel)
        if found is not None:
            return found
    bundled = bundled_problem(name) if name else None
    if bundled is not None:
        return bundled
    raise UsageError(_not_found(text, name, where or Path.cwd()))


def bare_name(problem: str) -> str | None:
    """The name a problem argument can stand for: a bare name (``vector_add``) or ``problems/NAME`` as the
    README and the demo write it; None for anything else (a ``.py`` file, an absolute or deeper path)."""
    parts = Path(problem).parts  # "./" and a trailing "/" are gone
    if len(parts) == 2 and parts[0] == "problems":
        parts = parts[1:]
    if len(parts) != 1 or parts[0] in ("..", "~") or parts[0].endswith(".py"):
        return None
    return parts[0]


def bundled_problem(name: str) -> Path | None:
    """The bundled problem folder of that name (shipped inside the package by the wheel), if there is one."""
    return next((folder for folder in _bundled() if folder.name == name), None)


def bundled_names() -> list[str]:
    """The names that reach a bundled problem from anywhere."""
    return [folder.name for folder in _bundled()]


def _bundled() -> list[Path]:
    try:
        return bundled_problems()
    except FileNotFoundError:  # an install without its problems/: nothing to reach by name
        return []


def _on_disk(rel: str) -> Path | None:
    """The command line's look-up: relative to the current directory, ``~`` expanded."""
    path = Path(rel).expanduser()
    return path.resolve() if os.path.exists(path) else None  # os.path: False for a name too long, not a raise


def _not_found(problem: str, name: str | None, where: Path) -> str:
    """What was looked for, where, and the names that would have worked."""
    names = ", ".join(bundled_names()) or "none in this install"
    if name is None:
        return (f"problem not found: {shown(problem)} does not exist in {where} (a bundled problem is reached by "
                f"its name alone: {names})")
    beside = "" if problem == f"problems/{name}" else f", nor does problems/{name},"
    return (f"problem not found: {shown(problem)} does not exist in {where}{beside} and no bundled problem has "
            f"that name (the bundled ones, by name: {names})")


# A look around a workspace, not an index: these folders hold no problems of the user's, or far too many files.
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "solutions", "runs", "venv", "env", "build", "dist",
                             "site-packages"})


def workspace_problems(root: Path, depth: int = 3, limit: int = 20, max_folders: int = 2000) -> list[str]:
    """The problems a workspace holds, as paths relative to it (what the tools take), sorted: folders with
    task.yml and reference.py, and KernelBench files, at most ``depth`` folders down. Hidden folders and
    SKIPPED_FOLDERS are not entered; the look stops after ``limit`` problems or ``max_folders`` folders (a
    home directory served at user scope must not take minutes)."""
    root = Path(root).resolve()
    found: list[Path] = []
    for visited, (folder, subfolders, files) in enumerate(os.walk(root)):
        here = Path(folder)
        if {"task.yml", "reference.py"} <= set(files):
            found.append(here)
            subfolders.clear()  # a problem's own files are not problems
        else:
            found += [here / f for f in sorted(files) if f.endswith(".py") and _is_kernelbench(here / f)]
            inside = len(here.relative_to(root).parts) < depth
            subfolders[:] = sorted(d for d in subfolders if inside and not d.startswith(".") and
                                   d not in SKIPPED_FOLDERS)
        if len(found) >= limit or visited >= max_folders:
            break
    return sorted(p.relative_to(root).as_posix() for p in found[:limit])


def _is_kernelbench(file: Path) -> bool:
    """Whether a Python file is a KernelBench problem (Model, get_inputs, get_init_inputs); cheap for others."""
    try:
        if file.stat().st_size > 1 << 20 or b"get_init_inputs" not in file.read_bytes():
            return False
        return {"Model", "get_inputs", "get_init_inputs"} <= module_level_names(file)
    except (OSError, UnicodeDecodeError, UsageError, ValueError):  # unreadable or not Python: not a problem
        return False


def _load_folder(folder: Path) -> Problem:
    name = folder.name
    task_path, ref_path = folder / "task.yml", folder / "reference.py"
    for needed in (task_path, ref_path):
        if not needed.is_file():
            raise UsageError(f"problem {name}: missing {needed.name} in {folder}")
    try:
        raw = yaml.safe_load(task_path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"{task_path}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise UsageError(f"{task_path}: must be a mapping of keys (problem {name})")
    try:
        task = TaskFile.model_validate(raw)
    except ValidationError as exc:
        raise UsageError(_describe_validation(exc, task_path, name)) from None
    _require_functions(ref_path, name, ("generate_input", "ref_kernel"))
    spec = task.kernel_mcp
    if "kernel_mcp" not in raw and "check_implementation" in module_level_names(ref_path):
        # a GPU MODE problem loaded unchanged: its own check is its precision contract (judge/numerics.py)
        spec = KernelMcpSpec(precision="problem_check")
    for i, case in enumerate(task.tests + task.benchmarks):
        if "seed" not in case:
            raise UsageError(f"{task_path}: tests/benchmarks entry {i} has no 'seed' (problem {name})")
    unknown = [k for k in (spec.random_shapes.ranges if spec.random_shapes else {})
               if type(task.tests[0].get(k) if task.tests else None) is not int]
    if unknown:
        raise UsageError(f"{task_path}: random_shapes names {', '.join(unknown)}, which the first test does not give "
                         f"as an integer size (problem {name})")
    warnings = [Finding(code="unknown_task_key", severity="warning",
                        message=f"{task_path}: top-level key {k!r} is neither GPU MODE's nor kernel_mcp's; ignored")
                for k in raw if k not in GPU_MODE_KEYS | {"kernel_mcp"}]
    return Problem(name=name, path=folder, kind="gpumode", spec=spec, tests=task.tests,
                   benchmarks=task.benchmarks or task.tests, description=task.description.strip(),
                   warnings=warnings)


def _load_kernelbench(file: Path) -> Problem:
    _require_functions(file, file.stem, ("Model", "get_inputs", "get_init_inputs"))
    doc = ast.get_docstring(ast.parse(file.read_text())) or ""
    return Problem(name=file.stem, path=file, kind="kernelbench", spec=KernelMcpSpec(precision="torch_defaults"),
                   tests=[dict(t) for t in KERNELBENCH_DEFAULT_TESTS],
                   benchmarks=[dict(b) for b in KERNELBENCH_DEFAULT_BENCHMARKS], description=doc)


def module_level_names(source_file: Path) -> set[str]:
    """Names a Python file defines at module level (functions, classes, assignments, imports)."""
    try:
        tree = ast.parse(source_file.read_text(), filename=str(source_file))
    except SyntaxError as exc:
        raise UsageError(f"{source_file}:{exc.lineno}: syntax error: {exc.msg}") from None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _require_functions(source_file: Path, problem: str, required: tuple[str, ...]) -> None:
    missing = [n for n in required if n not in module_level_names(source_file)]
    if missing:
        raise UsageError(f"{source_file}: missing {', '.join(missing)} (problem {problem})")


def _describe_validation(exc: ValidationError, file: Path, problem: str) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(part) for part in err["loc"])
        what = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        lines.append(f"{file}: {key}: {what} (problem {problem})")
    return "\n".join(lines)
