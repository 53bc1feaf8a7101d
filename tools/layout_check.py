"""The shape of kernel_mcp/ as rules a test can hold it to (docs/how-it-works.md, "Shape"): folders by the
process they run in and whom they trust, who may import what, who may start processes, no import circles,
and size budgets (after nanoGPT / tinygrad).

    python tools/layout_check.py [--root REPO] [--sizes]

prints one line per violation (``path:line: RULE message``) and exits 1 if there is any, else 0; ``--sizes``
also prints the lines per folder. The source is read with ``ast`` and nothing of the package is imported, so
a module that fails to import is still checked (one that does not parse stops the check with its SyntaxError).

R1  only kernel_mcp/server/ imports ``mcp`` (the agent reaches MCP through kernel_mcp.server)
R2  only the process starters start processes (subprocess, pty, multiprocessing's Process/Pool/get_context,
    os.fork/exec*/spawn*/system/popen, asyncio's create_subprocess_*, ProcessPoolExecutor): worker/launch/, worker/isolation/sandbox.py,
    worker/host/factory.py and worker/judge/session.py (the judge starting its candidate hosts)
R3  the trust boundary: worker/host/ and worker/steps/ (untrusted processes) and worker/isolation/ never import
    worker/judge/, worker/runners/ or worker/launch/; worker/judge/ takes from worker/host/ only what a judge
    shares with its hosts (factory, timing, aftercall, warm, load), never the host's main
R4  the door: outside worker/, code imports from kernel_mcp.worker only the names its __init__ exports (its
    _DOOR table) and the messages of kernel_mcp.worker.protocol; worker/'s shared root modules import none of
    its process folders
R5  layers: the vocabulary (errors, results, evaluation, reproducibility, problem, taskspec, expr, stats, files, workspace), hardware/,
    history/, views/, counters/ and backends/ never import tools/, server/, agent/, cli/, install/ or worker/
    (backends and counters: the door and worker.protocol only); worker/ never imports the front ends
R6  only kernel_mcp/worker/runners/ray.py imports ``ray``
R7  torch is imported at module level only where candidates or the judge run: worker/judge/, worker/host/,
    worker/steps/, worker/tensors.py, worker/inputs.py, worker/kernelbench.py
R8  no import circles, counting imports inside functions and under TYPE_CHECKING
R9  an import of kernel_mcp inside a function is kept for start-up time only, and its module says so in a
    comment that starts with ``# imports inside functions:``
R10 modules at most MODULE_LINES lines, functions and methods at most FUNCTION_LINES, lines at most LINE_WIDTH
    characters, except EXCEPTIONS
"""
from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "kernel_mcp"
MODULE_LINES = 300
FUNCTION_LINES = 60
LINE_WIDTH = 120
LAZY_MARKER = "# imports inside functions:"

# R10's exceptions: data and generated text, not code that is merely long. A key is a module's path from the
# repository root, or "path::Qualified.name" for one function; the value says why it may be long.
EXCEPTIONS: dict[str, str] = {}

W = "kernel_mcp/worker/"
MCP_IMPORTERS = ("kernel_mcp/server/",)
STARTERS = (W + "launch/", W + "isolation/sandbox.py", W + "host/factory.py", W + "judge/session.py")
PROCESS_MODULES = ("subprocess", "pty", "multiprocessing.pool")
OS_PROCESS_CALLS = {"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp"}
OS_PROCESS_PREFIXES = ("exec", "spawn")  # os.execv, os.execvpe, os.spawnl, ...
# (module, name) pairs that start processes when imported by name or reached as module.name
PROCESS_NAMES = {("asyncio", "create_subprocess_exec"), ("asyncio", "create_subprocess_shell"),
                 ("concurrent.futures", "ProcessPoolExecutor"), ("multiprocessing", "Process"),
                 ("multiprocessing", "Pool"), ("multiprocessing", "get_context")}
UNTRUSTED = (W + "host/", W + "steps/", W + "isolation/")
CALLER_SIDE = ("kernel_mcp.worker.judge", "kernel_mcp.worker.runners", "kernel_mcp.worker.launch")
JUDGE_MAY_TAKE_FROM_HOST = tuple(f"kernel_mcp.worker.host.{m}" for m in ("factory", "timing", "aftercall",
                                                                        "warm", "load"))
PROCESS_FOLDERS = tuple(f"kernel_mcp.worker.{f}" for f in ("runners", "launch", "judge", "host", "steps",
                                                           "isolation"))
DOOR_MODULES = ("kernel_mcp.worker", "kernel_mcp.worker.protocol")
LOWER = (*(f"kernel_mcp/{m}.py" for m in ("errors", "results", "evaluation", "reproducibility", "problem", "taskspec",
                                          "expr", "stats", "files", "workspace")),
         "kernel_mcp/hardware/", "kernel_mcp/history/", "kernel_mcp/views/", "kernel_mcp/counters/",
         "kernel_mcp/backends/")
FRONT_ENDS = ("kernel_mcp.tools", "kernel_mcp.server", "kernel_mcp.agent", "kernel_mcp.cli", "kernel_mcp.install")
RAY_MODULE = W + "runners/ray.py"
TORCH_AT_TOP = (W + "judge/", W + "host/", W + "steps/", W + "tensors.py", W + "inputs.py", W + "kernelbench.py")


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
    where: str = "top"  # "top" (runs on import), "function" (inside one) or "typing" (under TYPE_CHECKING)


@dataclass(frozen=True)
class Module:
    path: str  # from the repository root, with forward slashes: kernel_mcp/tools/check.py
    name: str  # kernel_mcp.tools.check (a package's __init__.py is the package's name)
    tree: ast.Module
    text: str

    @property
    def lines(self) -> int:
        return len(self.text.splitlines())

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
        found.append(Module(rel.as_posix(), ".".join(parts), ast.parse(text, str(rel)), text))
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


def _statements(tree: ast.AST, where: str = "top"):
    """(import node, where it runs: Import.where) for every import of a module."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, where
        inner = where
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = "function"
        elif where == "top" and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inner = "typing"
        yield from _statements(node, inner)


def imports(module: Module, known: set[str]) -> list[Import]:
    """Every import statement of a module, at top level or inside functions; ``from pkg import sub`` counts
    as importing pkg.sub when that is a module of the tree."""
    found = []
    for node, where in _statements(module.tree):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, node.lineno, (), where) for alias in node.names]
            continue
        base = _absolute(module, node)
        subs = [a.name for a in node.names if f"{base}.{a.name}" in known]
        plain = tuple(a.name for a in node.names if a.name not in subs)
        found += [Import(f"{base}.{sub}", node.lineno, (), where) for sub in subs]
        if plain:
            found.append(Import(base, node.lineno, plain, where))
    return found


def door_names(modules: list[Module]) -> set[str]:
    """The names worker/__init__.py lets outside code import: the keys of its _DOOR table."""
    for module in modules:
        if module.name == "kernel_mcp.worker":
            for node in module.tree.body:
                if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_DOOR" for t in node.targets):
                    return {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return set()


# ------------------------------------------------------------------------------------------ import rules

def rule_mcp(module: Module, found: list[Import], tree: Tree) -> list[Violation]:
    if module.under(*MCP_IMPORTERS):
        return []
    return [Violation(module.path, i.line, "R1", f"only the server imports mcp, not this ({i.module})")
            for i in found if within(i.module, "mcp")]


def _os_aliases(module: Module) -> set[str]:
    """Other names ``os`` is imported under (``import os as system_os``)."""
    return {a.asname for node in ast.walk(module.tree) if isinstance(node, ast.Import)
            for a in node.names if a.name == "os" and a.asname}


def _starts_process(module_name: str, attr: str) -> bool:
    if module_name == "os":
        return attr in OS_PROCESS_CALLS or attr.startswith(OS_PROCESS_PREFIXES)
    return (module_name, attr) in PROCESS_NAMES


def rule_processes(module: Module, found: list[Import], tree: Tree) -> list[Violation]:
    if module.under(*STARTERS):
        return []
    said = "only the process starters (worker/launch/ and three named modules) start processes"
    out = [Violation(module.path, i.line, "R2", f"{said}; this imports {i.module}")
           for i in found if within(i.module, *PROCESS_MODULES)]
    out += [Violation(module.path, i.line, "R2", f"{said}; this imports {i.module}.{name}")
            for i in found for name in i.names if _starts_process(i.module, name)]
    aliases = _os_aliases(module)
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = "os" if node.value.id in aliases else node.value.id
            if _starts_process(owner, node.attr):
                out.append(Violation(module.path, node.lineno, "R2", f"{said}; this uses {owner}.{node.attr}"))
    return out


def rule_trust(module: Module, found: list[Import], tree: Tree) -> list[Violation]:
    out = []
    if module.under(*UNTRUSTED):
        out += [Violation(module.path, i.line, "R3", f"an untrusted process never loads judging, runner or launch "
                                                     f"code ({i.module})")
                for i in found if within(i.module, *CALLER_SIDE)]
    if module.under(W + "judge/"):
        out += [Violation(module.path, i.line, "R3", f"the judge takes from the host only what they share, not "
                                                     f"{i.module}")
                for i in found if within(i.module, "kernel_mcp.worker.host")
                and not within(i.module, *JUDGE_MAY_TAKE_FROM_HOST)]
    return out


def rule_door(module: Module, found: list[Import], tree: Tree) -> list[Violation]:
    if module.under(W):
        if module.path.count("/") != 2 or module.name == "kernel_mcp.worker":  # a process folder, or the door
            return []
        return [Violation(module.path, i.line, "R4", f"worker/'s shared modules import no process folder "
                                                     f"({i.module})")
                for i in found if within(i.module, *PROCESS_FOLDERS)]
    out = []
    for i in found:
        if not within(i.module, "kernel_mcp.worker") or i.module == "kernel_mcp.worker.protocol":
            continue
        if i.module != "kernel_mcp.worker":
            out.append(Violation(module.path, i.line, "R4", f"outside worker/, import from kernel_mcp.worker (the "
                                                            f"door), not {i.module}"))
        out += [Violation(module.path, i.line, "R4", f"{name} is not a name the worker door exports")
                for name in i.names if name not in tree.door]
    return out


def rule_layers(module: Module, found: list[Import], tree: Tree) -> list[Violation]:
    if module.under(W):
        return [Violation(module.path, i.line, "R5", f"worker/ never imports the front ends ({i.module})")
                for i in found if within(i.module, *FRONT_ENDS, "kernel_mcp.views")]
    if not module.under(*LOWER):
        return []
    lets_in = DOOR_MODULES if module.under("kernel_mcp/backends/", "kernel_mcp/counters/") else ()
    return [Violation(module.path, i.line, "R5", f"a lower layer never imports {i.module}")
            for i in found if within(i.module, *FRONT_ENDS) or (within(i.module, "kernel_mcp.worker")
                                                                and i.module not in lets_in)]


def rule_ray(module: Module, found: list[Import], tree: Tree) -> list[Violation]:
    if module.path == RAY_MODULE:
        return []
    return [Violation(module.path, i.line, "R6", f"only {RAY_MODULE} imports ray, not this ({i.module})")
            for i in found if within(i.module, "ray")]


def rule_torch(module: Module, found: list[Import], tree: Tree) -> list[Violation]:
    if module.under(*TORCH_AT_TOP):
        return []
    return [Violation(module.path, i.line, "R7", "torch at module level outside the judge's and candidates' "
                                                 "modules: import it where it is used")
            for i in found if i.where == "top" and within(i.module, "torch")]


def rule_lazy(module: Module, found: list[Import], tree: Tree) -> list[Violation]:
    lazy = [i for i in found if i.where == "function" and within(i.module, PACKAGE)]
    if not lazy or LAZY_MARKER in module.text:
        return []
    return [Violation(module.path, lazy[0].line, "R9", f"kernel_mcp imported inside a function: move it to the "
                                                       f"top, or say why in a '{LAZY_MARKER}' comment")]


IMPORT_RULES = (rule_mcp, rule_processes, rule_trust, rule_door, rule_layers, rule_ray, rule_torch, rule_lazy)


# ------------------------------------------------------------------------------------------ R8: circles

def circles(modules: list[Module], known: set[str]) -> list[Violation]:
    """Each set of modules that import each other (Tarjan's strongly connected components), once. A
    package's modules importing the package itself (its __init__, run first anyway) is not a circle."""
    edges: dict[str, set[str]] = defaultdict(set)
    where = {m.name: m for m in modules}
    for module in modules:
        for i in imports(module, known):
            target = i.module
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != module.name and not module.name.startswith(target + "."):
                edges[module.name].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for name in sorted(known):
        if name not in index:
            visit(name)
    return [Violation(where[g[0]].path, 1, "R8", "import circle: " + " -> ".join(g)) for g in found]


# ------------------------------------------------------------------------------------------ R10: sizes

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
        out.append(Violation(module.path, 1, "R10", f"module has {module.lines} lines (budget {MODULE_LINES})"))
    for name, node in functions(module.tree):
        length = node.end_lineno - node.lineno + 1
        if length > FUNCTION_LINES and f"{module.path}::{name}" not in exceptions:
            out.append(Violation(module.path, node.lineno, "R10",
                                 f"{name} has {length} lines (budget {FUNCTION_LINES})"))
    out += [Violation(module.path, n, "R10", f"line has {len(line)} characters (budget {LINE_WIDTH})")
            for n, line in enumerate(module.text.splitlines(), 1) if len(line) > LINE_WIDTH]
    return out


def stale_exceptions(modules: list[Module], exceptions: dict[str, str]) -> list[Violation]:
    """Exceptions that no longer excuse anything (the file shrank, moved or went), so the table stays short."""
    needed = {m.path for m in modules if m.lines > MODULE_LINES}
    needed |= {f"{m.path}::{name}" for m in modules for name, node in functions(m.tree)
               if node.end_lineno - node.lineno + 1 > FUNCTION_LINES}
    return [Violation(key.split("::")[0], 1, "R10", f"the exception for {key} is no longer needed; remove it")
            for key in exceptions if key not in needed]


def folder_sizes(modules: list[Module]) -> list[str]:
    """Lines and modules per folder, largest first (tinygrad's sz.py, per folder)."""
    lines: dict[str, int] = defaultdict(int)
    count: dict[str, int] = defaultdict(int)
    for module in modules:
        folder = module.path.rpartition("/")[0]
        lines[folder] += module.lines
        count[folder] += 1
    rows = [f"{lines[f]:6d} lines {count[f]:3d} modules  {f}/" for f in sorted(lines, key=lambda f: -lines[f])]
    return rows + [f"{sum(lines.values()):6d} lines {len(modules):3d} modules  total"]


# ------------------------------------------------------------------------------------------ entry points

@dataclass(frozen=True)
class Tree:
    """What a rule may need of the whole tree besides its own module."""
    door: set[str]


def check(root: Path, exceptions: dict[str, str] | None = None) -> list[Violation]:
    """Every violation in ``root``/kernel_mcp, sorted by place. ``exceptions`` defaults to EXCEPTIONS."""
    allowed = EXCEPTIONS if exceptions is None else exceptions
    modules = load_modules(Path(root))
    known = {m.name for m in modules}
    tree = Tree(door=door_names(modules))
    out = stale_exceptions(modules, allowed) + circles(modules, known)
    for module in modules:
        found = imports(module, known)
        for rule in IMPORT_RULES:
            out += rule(module, found, tree)
        out += rule_sizes(module, allowed)
    return sorted(set(out))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the repository root, holding kernel_mcp/ (default: this checkout)")
    parser.add_argument("--sizes", action="store_true", help="also print the lines per folder")
    args = parser.parse_args(argv)
    violations = check(args.root)
    for violation in violations:
        print(violation)
    if args.sizes:
        print("\n".join(folder_sizes(load_modules(args.root))))
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
