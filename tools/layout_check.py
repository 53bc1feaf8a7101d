"""The shape of kernel_mcp/ as rules a test can hold it to (DESIGN.md, "Shape"): who may import what, who may
start processes, and a size budget (modules <= 300 lines, functions <= 60, after nanoGPT / tinygrad).

    python tools/layout_check.py [--root REPO]

prints one line per violation (``path:line: RULE message``) and exits 1 if there is any, else 0. The source is
read with ``ast`` and nothing of the package is imported, so a module that fails to import is still checked
(one that does not parse stops the check with its SyntaxError).

R1  only kernel_mcp/server.py, kernel_mcp/server/ and kernel_mcp/agent/ import ``mcp``
R2  only kernel_mcp/worker/ starts processes (subprocess, multiprocessing, pty, os.fork/exec*/spawn*/system/popen,
    asyncio's create_subprocess_*, ProcessPoolExecutor)
R3  kernel_mcp/tools/ import from kernel_mcp.worker only runner and protocol, and never kernel_mcp.server
R4  kernel_mcp/backends/ and kernel_mcp/counters/ import from kernel_mcp.worker only protocol and toolchain
R5  kernel_mcp/worker/ never imports kernel_mcp.tools, kernel_mcp.server or kernel_mcp.cli
R6  only kernel_mcp/worker/ray_pool.py imports ``ray``
R7  modules at most MODULE_LINES lines, functions and methods at most FUNCTION_LINES, except EXCEPTIONS
"""
from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "kernel_mcp"
MODULE_LINES = 300
FUNCTION_LINES = 60

# R7's exceptions: data and generated text, not code that is merely long. A key is a module's path from the
# repository root, or "path::Qualified.name" for one function; the value says why it may be long.
EXCEPTIONS: dict[str, str] = {}

MCP_IMPORTERS = ("kernel_mcp/server.py", "kernel_mcp/server/", "kernel_mcp/agent/")
PROCESS_MODULES = ("subprocess", "multiprocessing", "pty")
OS_PROCESS_CALLS = {"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp"}
OS_PROCESS_PREFIXES = ("exec", "spawn")  # os.execv, os.execvpe, os.spawnl, ...
# (module, name) pairs that start processes when imported by name or reached as module.name
PROCESS_NAMES = {("asyncio", "create_subprocess_exec"), ("asyncio", "create_subprocess_shell"),
                 ("concurrent.futures", "ProcessPoolExecutor")}
TOOLS_MAY_USE = ("kernel_mcp.worker.runner", "kernel_mcp.worker.protocol")
BACKENDS_MAY_USE = ("kernel_mcp.worker.protocol", "kernel_mcp.worker.toolchain")
WORKER_MUST_NOT_USE = ("kernel_mcp.tools", "kernel_mcp.server", "kernel_mcp.cli")
RAY_MODULE = "kernel_mcp/worker/ray_pool.py"


@dataclass(frozen=True, order=True)
class Violation:
    path: str
    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule} {self.message}"


@dataclass(frozen=True)
class Import:
    module: str  # absolute dotted name of the module this statement loads
    line: int
    names: tuple[str, ...] = ()  # for ``from module import a, b``: a, b (when they are not submodules)


@dataclass(frozen=True)
class Module:
    path: str  # from the repository root, with forward slashes: kernel_mcp/tools/check.py
    name: str  # kernel_mcp.tools.check (a package's __init__.py is the package's name)
    tree: ast.Module
    lines: int

    def under(self, *places: str) -> bool:
        """Whether this module is one of ``places``: a file path, or a folder ending in '/'."""
        return any(self.path == p or (p.endswith("/") and self.path.startswith(p)) for p in places)


def within(name: str, *prefixes: str) -> bool:
    """Whether dotted ``name`` is one of ``prefixes`` or inside one of them (``a.b`` is within ``a``)."""
    return any(name == p or name.startswith(p + ".") for p in prefixes)


# ------------------------------------------------------------------------------------------ reading the tree

def load_modules(root: Path) -> list[Module]:
    found = []
    for file in sorted((root / PACKAGE).rglob("*.py")):
        if "__pycache__" in file.parts:
            continue
        rel = file.relative_to(root)
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        text = file.read_text(encoding="utf-8", errors="replace")
        found.append(Module(rel.as_posix(), ".".join(parts), ast.parse(text, str(rel)), len(text.splitlines())))
    return found


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    """The module a ``from`` import names, relative imports resolved against the importing module."""
    if not node.level:
        return node.module or ""
    package = module.name.split(".")
    if not module.path.endswith("__init__.py"):
        package.pop()  # a plain module's package is its parent
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: Module, known: set[str]) -> list[Import]:
    """Every import statement of a module, at top level or inside functions; ``from pkg import sub`` counts
    as importing pkg.sub when that is a module of the tree."""
    found = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            subs = [a.name for a in node.names if f"{base}.{a.name}" in known]
            plain = tuple(a.name for a in node.names if a.name not in subs)
            found += [Import(f"{base}.{sub}", node.lineno) for sub in subs]
            if plain:
                found.append(Import(base, node.lineno, plain))
    return found


# ------------------------------------------------------------------------------------------ the rules

def rule_mcp(module: Module, found: list[Import]) -> list[Violation]:
    if module.under(*MCP_IMPORTERS):
        return []
    return [Violation(module.path, i.line, "R1", f"only the server and the agent may import mcp, not {i.module}")
            for i in found if within(i.module, "mcp")]


def _os_aliases(module: Module) -> set[str]:
    """Other names ``os`` is imported under (``import os as system_os``)."""
    return {a.asname for node in ast.walk(module.tree) if isinstance(node, ast.Import)
            for a in node.names if a.name == "os" and a.asname}


def _starts_process(module_name: str, attr: str) -> bool:
    if module_name == "os":
        return attr in OS_PROCESS_CALLS or attr.startswith(OS_PROCESS_PREFIXES)
    return (module_name, attr) in PROCESS_NAMES


def rule_processes(module: Module, found: list[Import]) -> list[Violation]:
    if module.under("kernel_mcp/worker/"):
        return []
    out = [Violation(module.path, i.line, "R2", f"only worker/ starts processes; this imports {i.module}")
           for i in found if within(i.module, *PROCESS_MODULES)]
    out += [Violation(module.path, i.line, "R2", f"only worker/ starts processes; this imports {i.module}.{name}")
            for i in found for name in i.names if _starts_process(i.module, name)]
    aliases = _os_aliases(module)
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = "os" if node.value.id in aliases else node.value.id
            if _starts_process(owner, node.attr):
                out.append(Violation(module.path, node.lineno, "R2",
                                     f"only worker/ starts processes; this uses {owner}.{node.attr}"))
    return out


def rule_tools(module: Module, found: list[Import]) -> list[Violation]:
    if not module.under("kernel_mcp/tools/"):
        return []
    out = []
    for i in found:
        if within(i.module, "kernel_mcp.worker") and not within(i.module, *TOOLS_MAY_USE):
            out.append(Violation(module.path, i.line, "R3",
                                 f"tools may import only worker.runner/protocol, not {i.module}"))
        if within(i.module, "kernel_mcp.server"):
            out.append(Violation(module.path, i.line, "R3", f"tools never import the server ({i.module})"))
    return out


def rule_backends(module: Module, found: list[Import]) -> list[Violation]:
    if not module.under("kernel_mcp/backends/", "kernel_mcp/counters/"):
        return []
    return [Violation(module.path, i.line, "R4", f"backends/counters may import only worker.protocol/toolchain, "
                                                 f"not {i.module}")
            for i in found if within(i.module, "kernel_mcp.worker") and not within(i.module, *BACKENDS_MAY_USE)]


def rule_worker(module: Module, found: list[Import]) -> list[Violation]:
    if not module.under("kernel_mcp/worker/"):
        return []
    return [Violation(module.path, i.line, "R5", f"worker/ never imports the front ends ({i.module})")
            for i in found if within(i.module, *WORKER_MUST_NOT_USE)]


def rule_ray(module: Module, found: list[Import]) -> list[Violation]:
    if module.path == RAY_MODULE:
        return []
    return [Violation(module.path, i.line, "R6", f"only {RAY_MODULE} imports ray, not this ({i.module})")
            for i in found if within(i.module, "ray")]


IMPORT_RULES = (rule_mcp, rule_processes, rule_tools, rule_backends, rule_worker, rule_ray)


# ------------------------------------------------------------------------------------------ R7: sizes

def functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.AST]]:
    """(qualified name, node) of every function and method, nested ones included."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                found.append((name, node))
            found += functions(node, name + ".")
        else:
            found += functions(node, prefix)
    return found


def rule_sizes(module: Module, exceptions: dict[str, str]) -> list[Violation]:
    out = []
    if module.lines > MODULE_LINES and module.path not in exceptions:
        out.append(Violation(module.path, 1, "R7", f"module has {module.lines} lines (budget {MODULE_LINES})"))
    for name, node in functions(module.tree):
        length = node.end_lineno - node.lineno + 1
        if length > FUNCTION_LINES and f"{module.path}::{name}" not in exceptions:
            out.append(Violation(module.path, node.lineno, "R7",
                                 f"{name} has {length} lines (budget {FUNCTION_LINES})"))
    return out


def stale_exceptions(modules: list[Module], exceptions: dict[str, str]) -> list[Violation]:
    """Exceptions that no longer excuse anything (the file shrank, moved or went), so the table stays short."""
    needed = {m.path for m in modules if m.lines > MODULE_LINES}
    needed |= {f"{m.path}::{name}" for m in modules for name, node in functions(m.tree)
               if node.end_lineno - node.lineno + 1 > FUNCTION_LINES}
    return [Violation(key.split("::")[0], 1, "R7", f"the exception for {key} is no longer needed; remove it")
            for key in exceptions if key not in needed]


# ------------------------------------------------------------------------------------------ entry points

def check(root: Path, exceptions: dict[str, str] | None = None) -> list[Violation]:
    """Every violation in ``root``/kernel_mcp, sorted by place. ``exceptions`` defaults to EXCEPTIONS."""
    allowed = EXCEPTIONS if exceptions is None else exceptions
    modules = load_modules(Path(root))
    known = {m.name for m in modules}
    out = stale_exceptions(modules, allowed)
    for module in modules:
        found = imports(module, known)
        for rule in IMPORT_RULES:
            out += rule(module, found)
        out += rule_sizes(module, allowed)
    return sorted(set(out))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the repository root, holding kernel_mcp/ (default: this checkout)")
    violations = check(parser.parse_args(argv).root)
    for violation in violations:
        print(violation)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
